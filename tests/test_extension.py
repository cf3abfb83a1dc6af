"""A new objective is one module and one registry entry: the test catalogues check it unedited.

A toy objective (softmax cross-entropy against the labels normalised per query) is defined
here, registered, and the catalogue builders of the bad-input, determinism and property
tests are called again: the toy is among their cases, every catalogue test parametrized by
objective passes on it, and a toy with a wrong gradient fails the finite-difference check.
"""

from __future__ import annotations

import inspect
import itertools

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

    def _prepare(self, labels, offsets):
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
