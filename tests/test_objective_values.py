"""Objectives are values: settings fixed at construction, and repr and pickles tell the truth.

For every registered objective and every settings example of the registry: assigning or
deleting an attribute after construction raises, naming the factory and the fix; arrays and
lists given to the constructor are copied; ``repr`` after ``pickle``, ``copy.deepcopy`` and
``sklearn.base.clone`` of a `gbrank.Ranker` holding the objective is the original's, and the
copies compute what the original computes.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from sklearn.base import clone

import gbrank
from gbrank.objectives import registry
from objective_cases import Case, case_labels

CASES = [
    pytest.param(spec.name, kwargs, id=f"{spec.name}-{i}")
    for spec in registry.specs().values()
    for i, kwargs in enumerate(spec.examples)
]


def build(name, kwargs):
    return registry.get(name).factory()(**kwargs)


def data(seed=0, name=None):
    """Labels 0..3 (0/1 for an objective of binary labels), scores, sizes."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 9, size=12)
    y = rng.integers(0, 4, size=sizes.sum()).astype(float)
    if name is not None:
        y = case_labels(Case(name, registry.get(name)), y)
    return y, rng.normal(size=sizes.sum()), sizes


def public_settings(obj):
    return [name for name in vars(obj) if not name.startswith("_")]


@pytest.mark.parametrize("name, kwargs", CASES)
def test_settings_cannot_change_after_construction(name, kwargs):
    obj = build(name, kwargs)
    y, s, g = data(name=name)
    before_repr, before = repr(obj), obj.grad_hess(y, s, g)
    settings = public_settings(obj)
    assert "hess_scale" in settings and "hess_floor" in settings
    for setting in settings:
        value = getattr(obj, setting)
        with pytest.raises(AttributeError, match=rf"'{setting}'.*build a new objective instead, e\.g\. {obj.factory}\("):
            setattr(obj, setting, value)
        with pytest.raises(AttributeError, match=rf"'{setting}'.*{obj.factory}\("):
            delattr(obj, setting)
    with pytest.raises(AttributeError, match="build a new objective"):
        obj.new_setting = 1
    for private in [n for n in vars(obj) if n.startswith("_")]:
        with pytest.raises(AttributeError):
            setattr(obj, private, None)
    assert repr(obj) == before_repr
    after = obj.grad_hess(y, s, g)
    np.testing.assert_array_equal(after[0], before[0])
    np.testing.assert_array_equal(after[1], before[1])


@pytest.mark.parametrize("name, kwargs", CASES)
def test_copies_say_and_compute_what_the_original_does(name, kwargs):
    obj = build(name, kwargs)
    y, s, g = data(1, name=name)
    obj.grad_hess(y, s, g)  # fills the cache, which copies must not carry
    expected = obj.grad_hess(y, s, g)
    ranker = gbrank.Ranker(obj, n_estimators=3)
    copies = {
        "pickle": pickle.loads(pickle.dumps(obj)),
        "deepcopy": copy.deepcopy(obj),
        "clone": clone(ranker).get_params()["objective"],
    }
    for how, twin in copies.items():
        assert type(twin) is type(obj), how
        assert repr(twin) == repr(obj), how
        assert not [k for k, v in vars(twin).items() if isinstance(v, (list, dict, set)) and v is vars(obj)[k]], how
        grad, hess = twin.grad_hess(y, s, g)
        np.testing.assert_array_equal(grad, expected[0], err_msg=how)
        np.testing.assert_array_equal(hess, expected[1], err_msg=how)
        with pytest.raises(AttributeError, match="build a new objective"):
            twin.hess_scale = 2.0
    # a pickle of a pickle is the same value
    assert repr(pickle.loads(pickle.dumps(copies["pickle"]))) == repr(obj)


def test_changing_cutoff_after_a_first_call_is_refused():
    """The issue's case: the cache kept the old cutoff's weights while repr showed the new."""
    obj = gbrank.wranknet(k=5)
    y, s, g = data(2)
    first = obj.grad_hess(y, s, g)
    with pytest.raises(AttributeError, match=r"'k'.*e\.g\. wranknet\(k=\.\.\.\)"):
        obj.k = 3
    assert "k=5" in repr(obj)
    np.testing.assert_array_equal(obj.grad_hess(y, s, g)[0], first[0])
    # the new objective computes what its repr says
    fresh = gbrank.wranknet(k=3)
    assert "k=3" in repr(fresh)
    assert not np.array_equal(fresh.grad_hess(y, s, g)[0], first[0])


def test_arrays_and_lists_given_to_the_constructor_are_copied():
    y, s, g = data(3)
    gain = np.array([0.0, 1.0, 3.0, 7.0])
    weights = [1.0, 0.5, 0.25]
    objectives = [
        gbrank.wlistmle(gain=gain), gbrank.wranknet(gain=gain), gbrank.ndcg_boost(gain=gain),
        gbrank.plackett_luce(weights),
    ]
    reprs = [repr(obj) for obj in objectives]
    before = [obj.grad_hess(y, s, g)[0] for obj in objectives]
    gain[1:] = [50.0, 60.0, 70.0]
    weights[:] = [0.0, 0.0, 9.0]
    # fresh copies (empty caches) compute with the values given at construction
    for obj, expected, text in zip(objectives, before, reprs):
        twin = copy.deepcopy(obj)
        assert repr(obj) == repr(twin) == text
        np.testing.assert_array_equal(twin.grad_hess(y, s, g)[0], expected)
    with pytest.raises(ValueError, match="read-only"):
        objectives[2].gain[0] = 5.0
    with pytest.raises(ValueError, match="read-only"):
        copy.deepcopy(objectives[2]).gain[0] = 5.0


def test_ranker_params_with_an_objective():
    obj = gbrank.listmle_topk(k=5)
    ranker = gbrank.Ranker(obj, n_estimators=3)
    assert ranker.get_params()["objective"] is obj
    twin = clone(ranker)
    assert twin.get_params()["objective"] is not obj
    assert repr(twin.get_params()["objective"]) == repr(obj)
    other = gbrank.listmle_topk(k=3)
    assert ranker.set_params(objective=other).get_params()["objective"] is other
    assert "k=3" in repr(clone(ranker).objective)


def test_user_subclass_is_frozen_after_its_own_constructor():
    class Scaled(gbrank.RankingObjective):
        factory = "scaled"

        def __init__(self, scale=2.0, **kwargs):
            super().__init__(**kwargs)
            self.scale = scale  # set after the base constructor: still construction

        def _params(self):
            return {"scale": self.scale, **super()._params()}

    obj = Scaled(3.0)
    assert repr(obj) == "scaled(scale=3.0, hess_floor=1e-06, hess_scale=1.0)"
    with pytest.raises(AttributeError, match=r"scaled\(scale=\.\.\.\)"):
        obj.scale = 4.0
