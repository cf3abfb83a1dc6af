"""The package's lazy exports: ``import gbrank`` is light, and every export still resolves."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import gbrank
from gbrank.objectives import registry

HEAVY = ("numba", "sklearn", "pandas", "lightgbm", "xgboost", "scipy", "matplotlib")


def run_fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_gbrank_imports_no_heavy_library():
    out = run_fresh(f"import sys, gbrank\nprint([m for m in {HEAVY!r} if m in sys.modules])")
    assert out.strip() == "[]"


def test_importing_the_objective_modules_compiles_nothing():
    code = (
        "import importlib, gbrank\n"
        "from numba.core.registry import CPUDispatcher\n"
        "from gbrank.objectives import registry\n"
        "mods = {importlib.import_module(s.module) for s in registry.specs().values()}\n"
        "kernels = [v for m in mods for v in vars(m).values() if isinstance(v, CPUDispatcher)]\n"
        "assert len(kernels) >= 5, kernels\n"
        "print([k.py_func.__name__ for k in kernels if k.signatures])\n"
    )
    assert run_fresh(code).strip() == "[]"


def test_every_export_resolves_and_is_listed():
    names = set(gbrank.__all__)
    assert set(registry.names()) <= names
    assert {"Ranker", "NDCGBoost", "RankingObjective", "datasets", "metrics", "objectives", "__version__"} <= names
    for name in names:
        assert getattr(gbrank, name) is not None
        assert name in dir(gbrank)
    for package in (gbrank.objectives, gbrank.metrics, gbrank.datasets):
        for name in package.__all__:
            assert name in dir(package)
            assert getattr(package, name) is not None
    for name in registry.names():
        factory = getattr(gbrank, name)
        assert callable(factory) and factory.__name__ == name
        assert getattr(gbrank.objectives, name) is factory
    assert gbrank.RankingObjective is gbrank.objectives.RankingObjective


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'listmel'"):
        gbrank.listmel  # noqa: B018
    with pytest.raises(ImportError):
        exec("from gbrank.metrics import nddcg")


@pytest.mark.parametrize("first", ["submodule", "export"])
def test_functions_named_like_their_module_stay_functions(first):
    # gbrank.metrics.ndcg is a function although gbrank/metrics/ndcg.py is a module; likewise
    # gbrank.objectives.listnet, cosine, ndcg_boost and gbrank.metrics.err, whichever is
    # imported first.
    pairs = [("metrics", "ndcg"), ("metrics", "err"), ("objectives", "listnet"), ("objectives", "cosine"),
             ("objectives", "ndcg_boost")]
    lines = ["import importlib, gbrank, types"]
    for package, name in pairs:
        if first == "submodule":
            lines.append(f"importlib.import_module('gbrank.{package}.{name}')")
        else:
            lines.append(f"gbrank.{package}.{name}")
            lines.append(f"importlib.import_module('gbrank.{package}.{name}')")
        lines.append(f"assert callable(gbrank.{package}.{name}) and not isinstance(gbrank.{package}.{name}, types.ModuleType)")
    lines.append("from gbrank.metrics import ndcg; from gbrank import listnet; assert callable(ndcg) and callable(listnet)")
    run_fresh("\n".join(lines))


def test_star_import():
    namespace: dict = {}
    exec("from gbrank import *", namespace)
    assert {"listmle_topk", "Ranker", "metrics"} <= set(namespace)


def test_the_folder_above_a_checkout_named_gbrank_imports_the_package(tmp_path):
    # From the folder above a checkout named ``gbrank``, Python finds that folder first; with
    # the package at the checkout's top it imported as an empty namespace package and hid
    # the installed one. The src layout leaves the installed package to win.
    root = Path(__file__).resolve().parents[1]
    (tmp_path / "gbrank").symlink_to(root, target_is_directory=True)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    code = "import gbrank; print(gbrank.listmle_topk.__name__)"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    if "No module named" in done.stderr:
        pytest.skip("gbrank is not installed in this environment (pip install -e .)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "listmle_topk"
