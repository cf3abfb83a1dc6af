"""The examples in the docstrings run and print what they show.

Every public objective factory (the registry's) and every metric has an example with a
printed value, computed by the code and rounded so that it reads the same on every platform;
the examples of the modules below run as doctests here.
"""

from __future__ import annotations

import doctest
import importlib

import pytest

from gbrank.objectives import registry

METRICS = {
    "gbrank.metrics.ndcg": ["ndcg"],
    "gbrank.metrics.average_precision": ["mean_average_precision"],
    "gbrank.metrics.reciprocal_rank": ["mean_reciprocal_rank"],
    "gbrank.metrics.precision": ["precision_at_k"],
    "gbrank.metrics.err": ["err"],
    "gbrank.metrics.calibration": ["log_loss", "expected_calibration_error"],
    "gbrank.metrics.multi_label": ["per_label_ndcg", "pareto_front"],
    "gbrank.objectives.multi_label": ["multi_label"],
    "gbrank.metrics.engine": ["make_metrics", "lightgbm_feval", "lgbm_ranker_metric", "xgboost_metric"],
}
# Modules whose docstrings hold examples besides the factories and metrics.
OTHERS = ("gbrank._docstrings", "gbrank.ndcg_boost_learner", "gbrank.ranker", "gbrank.click_training")
# The engines (optional dependencies) that a module's examples train or evaluate with.
ENGINES = {"gbrank.metrics.engine": ("lightgbm", "xgboost"), "gbrank.ranker": ("xgboost",),
           "gbrank.click_training": ("lightgbm",)}


def public_callables() -> dict[str, list[str]]:
    """Module -> the public factories and metrics it defines."""
    out: dict[str, list[str]] = {}
    for spec in registry.specs().values():
        out.setdefault(spec.module, []).append(spec.name)
    for module, names in METRICS.items():
        out.setdefault(module, []).extend(names)
    return out


def modules() -> list[str]:
    return [*public_callables(), *OTHERS]


def run_doctests(module_name: str) -> doctest.TestResults:
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, module_name, globs={}):
        runner.run(test)
    return runner.summarize(verbose=False)


@pytest.mark.parametrize("module_name", modules())
def test_docstring_examples_print_what_they_show(module_name, capsys):
    for engine in ENGINES.get(module_name, ()):
        pytest.importorskip(engine)
    failed, attempted = run_doctests(module_name)
    report = capsys.readouterr().out
    assert attempted > 0, f"{module_name} has no example"
    assert failed == 0, report[-6000:]


@pytest.mark.parametrize(("module_name", "name"), [(m, n) for m, names in public_callables().items() for n in names])
def test_every_public_factory_and_metric_shows_a_value(module_name, name):
    func = getattr(importlib.import_module(module_name), name)
    tests = doctest.DocTestFinder(recurse=False).find(func, name)
    shown = [example for test in tests for example in test.examples
             if example.want.strip() and not example.options.get(doctest.SKIP)]
    assert shown, f"{module_name}.{name} has no example with a printed value"


def test_a_wrong_value_fails(tmp_path, monkeypatch):
    (tmp_path / "wrong_example.py").write_text('def f():\n    """\n    >>> round(2 / 3, 4)\n    0.6666\n    """\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    failed, attempted = run_doctests("wrong_example")
    assert (failed, attempted) == (1, 1)
