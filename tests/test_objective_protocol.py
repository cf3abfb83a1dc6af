"""Every registered objective: exported where the registry says, and a value that pickles."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import gbrank
import gbrank.objectives
from helpers import random_queries
from objective_cases import case_labels, ids, objective_cases


def catalogue():
    """Every registered objective and example."""
    return list(objective_cases().values())


CASES = catalogue()


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_the_factory_is_exported_by_the_package(case):
    for _ in range(2):  # the second access must not find a submodule of the same name instead
        assert getattr(gbrank, case.spec.name) is case.spec.factory()
        assert getattr(gbrank.objectives, case.spec.name) is case.spec.factory()


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_a_pickled_objective_is_the_same_objective(case):
    obj = case.build()
    labels, scores, sizes = random_queries(7, 5, min_docs=2, max_docs=30, scale=2.0)
    labels = case_labels(case, labels)
    clone = pickle.loads(pickle.dumps(obj))
    assert type(clone) is type(obj) and repr(clone) == repr(obj)
    for a, b in zip(clone.grad_hess(labels, scores, sizes), obj.grad_hess(labels, scores, sizes)):
        np.testing.assert_array_equal(a, b)
