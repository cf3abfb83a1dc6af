"""A new objective is one module, one registry entry and one docs page: everything else reads the registry.

A toy objective (softmax cross-entropy against the labels normalised per query) is defined
here, registered, and the catalogue builders of the bad-input, determinism and property
tests are called again: the toy is among their cases, every catalogue test parametrized by
objective passes on it, and a toy with a wrong gradient fails the finite-difference check.

Then the same toy is added the way a contributor adds one, in a copy of the package, the docs
and the tests: its module, its registry entry and its guide page, nothing else. The command
line lists it, the docs build in strict mode with it in the table of losses, the table of
contents and the API page, and the catalogue tests of the copy (parameter tables, training in
both engines, properties, bad input) run on it.
"""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _pytest.mark.structures import ParameterSet

from gbrank.objectives import registry
from gbrank.objectives._base import RankingObjective
from objective_cases import Case, ids, objective_cases, randomised

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

import test_bad_input_engines  # noqa: E402
import test_bad_input_objectives  # noqa: E402
import test_determinism  # noqa: E402
import test_objective_protocol  # noqa: E402
import test_properties  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def log_softmax(s):
    m = s.max()
    return s - m - np.log(np.sum(np.exp(s - m)))


class ToySoftmax(RankingObjective):
    """L = -sum_i t_i log softmax(s)_i with t = labels / sum(labels), over queries whose labels
    differ; ``slope`` multiplies the gradient (1 is right)."""

    factory = "toy_softmax"

    def __init__(self, *, slope: float = 1.0, hess_floor: float = 1e-6, hess_scale: float = 1.0) -> None:
        super().__init__(hess_floor=hess_floor, hess_scale=hess_scale)
        self.slope = float(slope)

    def _params(self):
        return {"slope": self.slope, **super()._params()}

    def _prepare(self, labels, offsets, statistics):
        target = np.zeros(labels.size)
        informative = []
        for q, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
            if labels[a:b].max() > labels[a:b].min():
                target[a:b] = labels[a:b] / labels[a:b].sum()
                informative.append(q)
        return offsets, target, informative

    def _grad_hess(self, state, scores, grad, hess):
        offsets, target, informative = state
        for q in informative:
            a, b = offsets[q], offsets[q + 1]
            p = np.exp(log_softmax(scores[a:b]))
            grad[a:b] = self.slope * (p - target[a:b])
            hess[a:b] = p * (1.0 - p)

    def _loss(self, state, scores):
        offsets, target, informative = state
        out = np.zeros(len(offsets) - 1)
        for q in informative:
            a, b = offsets[q], offsets[q + 1]
            t = target[a:b]
            out[q] = -np.sum(t[t > 0] * log_softmax(scores[a:b])[t > 0])
        return out


def toy_softmax(*, slope: float = 1.0, hess_floor: float = 1e-6, hess_scale: float = 1.0) -> ToySoftmax:
    """The toy objective's factory, as a registry entry names it."""
    return ToySoftmax(slope=slope, hess_floor=hess_floor, hess_scale=hess_scale)


TOY = registry.ObjectiveSpec("toy_softmax", __name__, "toy", "softmax cross-entropy on normalised labels",
                             labels="any", examples=({}, {"hess_scale": 2.0}), in_default_bench=False)


@pytest.fixture
def toy():
    registry.register(TOY)
    try:
        yield objective_cases()
    finally:
        registry.unregister(TOY.name)


def test_the_catalogues_list_a_registered_objective(toy):
    names = {"toy_softmax", "toy_softmax(hess_scale=2.0)"}
    cases, exp2, order, _ = test_bad_input_objectives.catalogue()
    assert names <= set(ids(cases)) and not names & set(ids(exp2 + order))  # labels="any"
    assert names <= set(ids(test_bad_input_engines.catalogue()))
    assert names <= set(ids(test_objective_protocol.catalogue()))
    cases, drawn = test_determinism.catalogue()
    assert names <= set(ids(cases)) and not names & set(ids(drawn))
    generic, plain, frozen = test_properties.catalogue()
    assert {f"registry:{n}" for n in names} <= set(generic)
    assert names <= set(ids(plain)) and not names & set(ids(frozen))
    # and unregistered, it is gone from them again
    registry.unregister(TOY.name)
    assert not names & set(ids(test_bad_input_objectives.catalogue()[0]))
    registry.register(TOY)


def parameter_sets(test, skip=("case", "make")):
    """Every combination of the test's own parametrize marks, other than ``skip``."""
    axes = []
    for mark in getattr(test, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names = [n.strip() for n in (mark.args[0].split(",") if isinstance(mark.args[0], str) else mark.args[0])]
        if set(names) & set(skip):
            continue
        values = [v.values if isinstance(v, ParameterSet) else (v if len(names) > 1 else (v,)) for v in mark.args[1]]
        axes.append([dict(zip(names, v)) for v in values])
    for combination in itertools.product(*axes):
        yield {k: v for part in combination for k, v in part.items()}


def case_list(test):
    """The cases the test was parametrized with at import (None if not by case)."""
    for mark in getattr(test, "pytestmark", []):
        if mark.name == "parametrize" and mark.args[0] == "case":
            return [v.values[0] if isinstance(v, ParameterSet) else v for v in mark.args[1]]
    return None


def applies(module, test, case: Case) -> bool:
    """Whether ``case`` is in the test's parametrization as the module's catalogue builds it
    now: the built list that, less the new cases, is the one the test got at import."""
    before = ids(case_list(test))
    built = module.catalogue()
    for cases in built if isinstance(built, tuple) else (built,):
        if not isinstance(cases, list):
            continue
        now = ids(cases)
        if [i for i in now if i in before] == before and set(now) - set(before) <= {c for c in now if c.startswith(TOY.name)}:
            return case.id in now
    raise AssertionError(f"{test.__name__}: no list of {module.__name__}.catalogue() matches its cases")


def run_catalogue(module, case: Case) -> list[str]:
    """Run every test of ``module`` whose parametrization takes ``case`` on it; return their names."""
    ran = []
    for name, test in inspect.getmembers(module, inspect.isfunction):
        if not name.startswith("test_"):
            continue
        arguments = inspect.signature(test).parameters
        if "case" in arguments:
            if not applies(module, test, case):
                continue
            objective = {"case": case}
        elif "make" in arguments:
            objective = {"make": case.build}  # every make-list takes a deterministic shift-invariant case
        else:
            continue
        for kwargs in parameter_sets(test):
            extra = {"request": None} if "request" in arguments else {}
            test(**objective, **kwargs, **extra)
        ran.append(name)
    return ran


@pytest.mark.parametrize("module", [test_bad_input_objectives, test_properties, test_objective_protocol],
                         ids=["bad-input-objectives", "properties", "protocol"])
def test_a_registered_objective_passes_the_direct_catalogues(toy, module):
    toy_cases = [case for case in toy.values() if case.spec is TOY]
    assert len(toy_cases) == 2 and all(c.build().shift_invariant and not randomised(c) for c in toy_cases)
    for case in toy_cases:
        ran = run_catalogue(module, case)
        assert len(ran) >= (2 if module is test_objective_protocol else 6), ran


@pytest.mark.slow
@pytest.mark.parametrize("module", [test_bad_input_engines, test_determinism], ids=["bad-input-engines", "determinism"])
def test_a_registered_objective_passes_the_engine_catalogues(toy, module):
    ran = run_catalogue(module, toy["toy_softmax"])
    assert len(ran) >= 4, ran


def test_a_wrong_gradient_fails_the_finite_difference_check(toy):
    right = Case("toy_softmax", TOY, {})
    wrong = Case("toy_softmax(slope=1.1)", TOY, {"slope": 1.1})
    assert not randomised(wrong) and wrong.build().shift_invariant is True
    check = test_properties.test_registered_gradient_and_hessian_are_those_of_the_loss
    check(case=right)
    with pytest.raises(AssertionError, match="Not equal to tolerance"):
        check(case=wrong)


# --------------------------------------------------------------------------- three edits
TOY_PAGE = """# Toy softmax

A softmax cross-entropy against the labels normalised per query, {func}`gbrank.toy_softmax`:

```python
objective = gbrank.toy_softmax(slope=1.0)
```

| parameter | default | meaning |
|---|---|---|
| `slope` | `1.0` | multiplies the gradient |
| `hess_floor` | `1e-06` | the smallest hessian |
"""

TOY_ENTRY = """
register(ObjectiveSpec("toy_softmax", "gbrank.objectives.toy_softmax", "toy", "softmax cross-entropy on normalised labels",
                       labels="any", in_default_bench=False,
                       guide=Guide("objectives/toy-softmax", "Toy softmax", "—", "listwise cross-entropy", "exact diagonal",
                                   "$O(n)$")))
"""


def toy_module() -> str:
    """The toy objective as a module of the package: this file's definitions, verbatim."""
    header = ('"""A toy objective: softmax cross-entropy on the labels normalised per query."""\n\n'
              "import numpy as np\n\nfrom ._base import RankingObjective\n\n"
              '__all__ = ["ToySoftmax", "toy_softmax"]\n\n\n')
    return header + "\n\n".join(inspect.getsource(f) for f in (log_softmax, ToySoftmax, toy_softmax))


@pytest.fixture(scope="module")
def extended(tmp_path_factory):
    """A copy of the project with a new objective in three edits: its module, its registry
    entry and its guide page."""
    root = tmp_path_factory.mktemp("extended")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "_build")
    for part in ("src", "docs", "tests", "examples", "benchmarks"):  # the docs include examples and benchmarks
        shutil.copytree(ROOT / part, root / part, ignore=ignore)
    shutil.copy2(ROOT / "README.md", root / "README.md")
    (root / "src" / "gbrank" / "objectives" / "toy_softmax.py").write_text(toy_module())
    with open(root / "src" / "gbrank" / "objectives" / "registry.py", "a") as registry_file:
        registry_file.write(TOY_ENTRY)
    (root / "docs" / "objectives" / "toy-softmax.md").write_text(TOY_PAGE)
    return root


def run_in(root: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """``python *args`` importing gbrank from ``root``."""
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    return subprocess.run([sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=timeout)


def test_three_edits_reach_the_command_line(extended):
    result = run_in(extended, "-m", "gbrank.bench", "--list-methods")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "lgb:toy_softmax" in result.stdout and "xgb:toy_softmax" in result.stdout
    result = run_in(extended, "-c", "import gbrank; print(gbrank.toy_softmax(slope=2.0))")
    assert result.returncode == 0 and result.stdout.startswith("toy_softmax(slope=2.0"), result.stderr[-3000:]


def test_three_edits_reach_the_test_catalogues(extended):
    tests = extended / "tests"
    result = run_in(
        extended, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA",
        str(tests / "test_docs.py"), str(tests / "test_ranker.py"), str(tests / "test_properties.py"),
        str(tests / "test_bad_input_objectives.py"),
        "-k", "toy_softmax or guide_page or every_parameter_table_row",
    )
    assert result.returncode == 0, result.stdout[-6000:]
    passed = set(re.findall(r"^PASSED (\S+)", result.stdout, flags=re.M))
    for expected in ("test_docs.py::test_every_registered_objective_has_a_guide_page",
                     "test_docs.py::test_parameter_tables_state_the_defaults_of_the_code[toy_softmax-slope]",
                     "test_ranker.py::test_every_gbrank_objective_trains_on_both_engines[toy_softmax-lightgbm]",
                     "test_ranker.py::test_every_gbrank_objective_trains_on_both_engines[toy_softmax-xgboost]"):
        assert any(name.endswith(expected) for name in passed), f"{expected} did not pass:\n{result.stdout[-4000:]}"
    assert sum("toy_softmax" in name for name in passed if "test_properties.py" in name) >= 3
    assert sum("toy_softmax" in name for name in passed if "test_bad_input_objectives.py" in name) >= 3


def test_three_edits_reach_the_documentation(extended, tmp_path):
    for module in ("sphinx", "myst_parser", "furo"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"the documentation tools are not installed ({module}): pip install -e '.[docs]'")
    html = tmp_path / "html"
    result = run_in(extended, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html",
                    "-d", str(tmp_path / "doctrees"), "docs", str(html))
    assert result.returncode == 0, result.stderr[-6000:] or result.stdout[-6000:]
    assert (html / "objectives" / "toy-softmax.html").is_file()
    index = (html / "objectives" / "index.html").read_text()
    assert 'href="toy-softmax.html">Toy softmax</a>' in index  # the table of losses
    assert re.search(r'toctree-l1"><a class="reference internal" href="toy-softmax.html"', index)  # the contents
    api = (html / "api" / "objectives.html").read_text()
    assert 'id="gbrank.objectives.toy_softmax.toy_softmax"' in api and 'id="gbrank.objectives.toy_softmax.ToySoftmax"' in api
