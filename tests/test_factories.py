"""Every objective factory has the same shape: keyword arguments spelled out, one name per
idea, settings checked alike, old spellings kept for one release with a warning."""

import dataclasses
import inspect
import warnings

import numpy as np
import pytest

import gbrank
from gbrank.bench.methods import parse_methods
from gbrank.objectives import registry

# The one argument that picks the variant (lambdarank's measure, a click loss's propensity)
# may be passed by position: the first; all others are keyword-only.


def _signature(name):
    return inspect.signature(registry.get(name).factory())


@pytest.mark.parametrize("name", registry.names())
def test_arguments_are_keyword_only_and_spelled_out(name):
    params = _signature(name).parameters.values()
    kinds = {p.name: p.kind for p in params}
    assert inspect.Parameter.VAR_KEYWORD not in kinds.values(), f"{name} hides arguments in **kwargs"
    assert inspect.Parameter.VAR_POSITIONAL not in kinds.values()
    positional = [p for p, kind in kinds.items() if kind is not inspect.Parameter.KEYWORD_ONLY]
    assert positional in ([], list(kinds)[:1]), f"{name}: {positional} may be passed by position"
    assert {"hess_floor", "hess_scale"} <= set(kinds)


@pytest.mark.parametrize("name", registry.names())
def test_every_argument_has_a_type_hint(name):
    missing = [p.name for p in _signature(name).parameters.values() if p.annotation is inspect.Parameter.empty]
    assert not missing


def test_one_name_per_idea():
    """``k``: the top of the list the loss looks at; ``target_k``: the target's top-k mapping."""
    def names(name):
        return set(_signature(name).parameters)

    for name in ("listmle_topk", "listnet", "wlistmle", "wranknet", "lambdarank"):
        assert "k" in names(name), name
    for name in ("listnet", "cosine"):
        assert "target_k" in names(name), name
    assert "k" not in names("cosine")
    for name in registry.names():
        assert "cutoff" not in names(name), name


# --------------------------------------------------------------------------- deprecations
RENAMES = [
    (lambda: gbrank.cosine(k=3), lambda: gbrank.cosine(target_k=3), "cosine(target_k=...)"),
    (lambda: gbrank.wlistmle(cutoff=4), lambda: gbrank.wlistmle(k=4), "wlistmle(k=...)"),
    (lambda: gbrank.wranknet(cutoff=3), lambda: gbrank.wranknet(k=3), "wranknet(k=...)"),
    (lambda: gbrank.listmle_topk(5), lambda: gbrank.listmle_topk(k=5), "listmle_topk(k=5)"),
    (lambda: gbrank.listnet(3, "linear"), lambda: gbrank.listnet(k=3, target="linear"), "listnet(k=3, target='linear')"),
    (lambda: gbrank.cosine(2, "linear"), lambda: gbrank.cosine(target_k=2, target="linear"),
     "cosine(target_k=2, target='linear')"),
    (lambda: gbrank.ranknet(2.0), lambda: gbrank.ranknet(sigma=2.0), "ranknet(sigma=2.0)"),
    (lambda: gbrank.wranknet("linear", "zipf"), lambda: gbrank.wranknet(gain="linear", discount="zipf"),
     "wranknet(gain='linear', discount='zipf')"),
    (lambda: gbrank.wlistmle("linear", "zipf", 5, "best_rank"),
     lambda: gbrank.wlistmle(gain="linear", discount="zipf", k=5, discount_at="best_rank"),
     "wlistmle(gain='linear', discount='zipf', k=5, discount_at='best_rank')"),
]


@pytest.mark.parametrize("old,new,hint", RENAMES, ids=[r[2] for r in RENAMES])
def test_old_spellings_warn_and_build_the_same_objective(old, new, hint):
    with pytest.warns(DeprecationWarning, match=r"gbrank 0\.3") as record:
        legacy = old()
    assert any(hint in str(w.message) for w in record), [str(w.message) for w in record]
    # the warning points at the caller, not at gbrank's wrapper
    assert all(w.filename == __file__ for w in record)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        current = new()
    assert repr(legacy) == repr(current)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, 30).astype(float)
    scores = rng.normal(size=30)
    for a, b in zip(legacy.grad_hess(labels, scores, [12, 18]), current.grad_hess(labels, scores, [12, 18])):
        np.testing.assert_array_equal(a, b)


def test_old_and_new_names_together_are_refused():
    with pytest.raises(TypeError, match="'cutoff' .*and 'k'"):
        gbrank.wranknet(cutoff=3, k=3)
    with pytest.raises(TypeError, match="multiple values for argument 'k'"):
        gbrank.listmle_topk(3, k=3)


def test_too_many_positional_arguments_are_refused():
    with pytest.raises(TypeError, match=r"keyword arguments only .*listmle_topk\(k=\.\.\.\)"):
        gbrank.listmle_topk(3, "input")
    with pytest.raises(TypeError, match=r"listmle\(\) takes 0 positional"):
        gbrank.listmle("input")


def test_the_variant_selector_stays_positional_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert repr(gbrank.lambdarank("map")) == repr(gbrank.lambdarank(measure="map"))
        assert repr(gbrank.lambdaloss("ndcg_loss2")) == repr(gbrank.lambdaloss(weighting="ndcg_loss2"))
        assert repr(gbrank.plackett_luce([1.0, 0.5])) == repr(gbrank.plackett_luce(position_weights=[1.0, 0.5]))


# --------------------------------------------------------------------------- validation
BOOLS = [
    (gbrank.listmle_topk, "k"), (gbrank.listnet, "k"), (gbrank.wlistmle, "k"), (gbrank.wranknet, "k"),
    (gbrank.lambdarank, "k"), (gbrank.cosine, "target_k"), (gbrank.listnet, "target_k"), (gbrank.listmle, "seed"),
    (gbrank.listnet, "seed"), (gbrank.listnet, "n_samples"), (gbrank.ranknet, "truncation"),
    (gbrank.lambdaloss, "truncation"), (gbrank.lambdarank, "max_label"), (gbrank.ranknet, "sigma"),
    (gbrank.cosine, "eps"), (gbrank.lambdaloss, "mu"), (gbrank.ndcg_boost, "hess_floor"), (gbrank.listmle, "hess_scale"),
]


@pytest.mark.parametrize("factory,name", BOOLS, ids=[f"{f.__name__}-{n}" for f, n in BOOLS])
def test_booleans_are_refused_everywhere(factory, name):
    with pytest.raises(ValueError, match=rf"^{name} must be (an integer|a finite number).*, got True$"):
        factory(**{name: True})


@pytest.mark.parametrize("name", registry.names())
def test_registry_examples_build_without_warnings(name):
    spec = registry.get(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for example in spec.examples:
            spec.factory()(**example)


def test_the_harness_seeds_objectives_that_have_a_seed():
    assert parse_methods("lgb:listmle")[0].build(7).seed == 7
    assert parse_methods("lgb:listnet(seed=3)")[0].build(7).seed == 3
    assert not hasattr(parse_methods("lgb:cosine")[0].build(7), "seed")


# --------------------------------------------------------------------------- named states
STATES = [
    (gbrank.listmle, ("order", "tie_end", "weights", "head", "offsets", "active", "keys")),
    (gbrank.listnet, ("psi", "top1", "top2", "offsets", "active", "keys")),
    (gbrank.cosine, ("u", "offsets", "active")),
    (gbrank.ndcg_boost, ("offsets", "order", "sorted_gain", "block_end", "inv_z", "tie_mass")),
]


@pytest.mark.parametrize("factory,fields", STATES, ids=[s[0].__name__ for s in STATES])
def test_kernel_state_is_a_named_structure(factory, fields):
    state = factory().bind(np.array([2.0, 0.0, 1.0, 1.0, 0.0]), [3, 2]).state
    names = state._fields if hasattr(state, "_fields") else tuple(f.name for f in dataclasses.fields(state))
    assert names == fields
    assert all(isinstance(getattr(state, f), np.ndarray) for f in fields)


# --------------------------------------------------------------------------- one kernel
def test_sampled_listnet_is_top_k_listmle_of_its_draws():
    """With targets so far apart that every Gumbel draw returns the label order, ListNet's
    sampled estimate is exactly top-k ListMLE of that order (both run the PL kernel)."""
    rng = np.random.default_rng(3)
    sizes = [9, 14, 30]
    labels = np.concatenate([rng.permutation(n) * 100.0 for n in sizes])
    for scale in (1.0, 400.0):  # the linear and the log-space paths of the kernel
        scores = rng.normal(size=labels.size) * scale
        for k in (3, 5):
            sampled = gbrank.listnet(k=k, target="linear", exact_limit=0, n_samples=4)
            topk = gbrank.listmle_topk(k=k, ties="input")
            for a, b in zip(sampled.grad_hess(labels, scores, sizes), topk.grad_hess(labels, scores, sizes)):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
            assert sampled.loss(labels, scores, sizes) == pytest.approx(topk.loss(labels, scores, sizes), rel=1e-12)
