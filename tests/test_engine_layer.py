"""Only the engine layer, ``src/gbrank/engines/``, imports LightGBM or XGBoost.

Every module of the package is read (its syntax tree, so that prose naming ``lgb.train`` does
not count) for ``import lightgbm``/``import xgboost``, ``from lightgbm... import`` and
``importlib.import_module("xgboost...")``. A module outside ``src/gbrank/engines/`` that does is
an error unless it is listed below with the reason; a listed module that no longer does is an
error too, so the list stays the list of what is left. The examples, the benchmark scripts
and the tests are users of the engines, not part of the library, and are not read.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "gbrank"
ENGINES = ("lightgbm", "xgboost")
LAYER = "engines/"

# Not training: the allreduce that sums the per-query values of distributed metrics over
# XGBoost's workers is XGBoost's communication API, called from inside its training loop.
EXCEPTIONS = {
    "dask/metrics.py": "xgboost.collective: the allreduce of DistributedMetrics, inside xgboost.dask.train",
}


def engine_imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every import of LightGBM or XGBoost in a source file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")):
            modules = [node.args[0].value]
        else:
            continue
        found += [(node.lineno, m) for m in modules if m.split(".")[0] in ENGINES]
    return found


def importers() -> dict[str, list[tuple[int, str]]]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        imports = engine_imports(path)
        if imports:
            out[path.relative_to(PACKAGE).as_posix()] = imports
    return out


def test_only_the_engine_layer_imports_the_engines():
    found = importers()
    outside = {name: imports for name, imports in found.items()
               if not name.startswith(LAYER) and name not in EXCEPTIONS}
    assert not outside, f"engine imports outside src/gbrank/engines/ (move them into the engine layer): {outside}"
    assert any(name.startswith(LAYER) for name in found)


def test_every_exception_is_still_needed():
    found = importers()
    stale = sorted(name for name in EXCEPTIONS if name not in found)
    assert not stale, f"these modules no longer import an engine: drop them from the exceptions: {stale}"


def test_the_scan_sees_every_form_of_import(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        "import lightgbm as lgb\nfrom xgboost.callback import EarlyStopping\n"
        "import importlib\nimportlib.import_module('xgboost.dask')\n"
        "def f():\n    import numpy, lightgbm.dask\n"
        "TEXT = 'lgb.train and import xgboost in prose'\n"
    )
    assert engine_imports(source) == [(1, "lightgbm"), (2, "xgboost.callback"), (4, "xgboost.dask"), (6, "lightgbm.dask")]
