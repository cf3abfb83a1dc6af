"""Property-based tests (hypothesis) of every objective over random queries.

Properties: the gradient is the finite difference of ``obj.loss``; the hessian is the exact
diagonal (or, for the surrogates, bounds it); hessians are finite and non-negative; the
shift-invariant losses have gradients summing to zero per query and do not see a shift;
permuting the rows of a query permutes the outputs; the order of the queries does not
matter; no input of finite numbers gives a NaN or an infinity.

Randomised objectives (``ties="random"``, sampled ListNet) draw from a hash of the seed, the
query's index and its scores in row order (``gbrank.objectives._random``): a permutation of
the rows or of the queries changes the draws, not their law, so those objectives take part
only in the properties that hold draw by draw.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gbrank
from helpers import fd_gradient, fd_second, offsets_of, scaled_atol
from objective_cases import Case, case_factory, case_labels, fixed_weights, ids, objective_cases, randomised

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --------------------------------------------------------------------------- objectives
class RowOrderPositions:
    """A click objective fed the row order within each query as the display position
    (XGBoost's convention), so that it takes the same calls as the others."""

    def __init__(self, objective):
        self.objective = objective
        self.shift_invariant = objective.shift_invariant

    @staticmethod
    def _position(sizes):
        return np.concatenate([np.arange(1, n + 1) for n in sizes])

    def grad_hess(self, y, s, sizes, weight=None):
        return self.objective.grad_hess(y, s, sizes, weight, position=self._position(sizes))

    def loss(self, y, s, sizes):
        return self.objective.loss(y, s, sizes, position=self._position(sizes))


THETA = [1.0, 0.5, 1 / 3, 0.25, 0.2, 1 / 6]
# Deterministic and smooth in the scores: the loss has the gradient the objective returns.
SMOOTH = {
    "listmle": lambda **kw: gbrank.listmle(ties="input", **kw),
    "listmle_topk": lambda **kw: gbrank.listmle_topk(k=2, ties="input", **kw),
    "wlistmle": lambda **kw: gbrank.wlistmle(ties="input", **kw),
    "wlistmle_best_rank": lambda **kw: gbrank.wlistmle(k=2, discount_at="best_rank", ties="input", **kw),
    "plackett_luce": lambda **kw: gbrank.plackett_luce([1.0, 0.5, 0.25], ties="input", **kw),
    "ranknet": lambda **kw: gbrank.ranknet(**kw),
    "ranknet_sigma": lambda **kw: gbrank.ranknet(sigma=2.5, **kw),
    "wranknet": lambda **kw: gbrank.wranknet(**kw),
    "wranknet_linear": lambda **kw: gbrank.wranknet(gain="linear", discount="zipf", k=3, **kw),
    "listnet": lambda **kw: gbrank.listnet(**kw),
    "listnet_k2": lambda **kw: gbrank.listnet(k=2, **kw),
    "listnet_k3": lambda **kw: gbrank.listnet(k=3, **kw),  # exact enumeration: queries of <= 6
    "listnet_target_k": lambda **kw: gbrank.listnet(k=2, target="rank_linear", target_k=2, **kw),
    "cosine": lambda **kw: gbrank.cosine(**kw),
    "cosine_target_k": lambda **kw: gbrank.cosine(target_k=2, target="linear", **kw),
    "ndcg_boost": lambda **kw: gbrank.ndcg_boost(**kw),
    "ndcg_boost_linear": lambda **kw: gbrank.ndcg_boost(gain="linear", **kw),
    "ips_listnet": lambda **kw: RowOrderPositions(gbrank.ips_listnet(propensity=THETA, **kw)),
    "ips_listnet_weighted": lambda **kw: gbrank.ips_listnet(propensity=None, **kw),
}
# Piecewise smooth: the pairs kept change where two scores cross.
TRUNCATED = {"ranknet_truncated": lambda **kw: gbrank.ranknet(truncation=2, **kw)}
# Random draws per call (from a hash of seed, query index and scores).
RANDOM = {
    "listmle_random": lambda **kw: gbrank.listmle(seed=3, **kw),
    "listmle_topk_random": lambda **kw: gbrank.listmle_topk(k=2, seed=5, **kw),
    "wlistmle_random": lambda **kw: gbrank.wlistmle(seed=1, **kw),
    "listnet_k3_sampled": lambda **kw: gbrank.listnet(k=3, exact_limit=0, n_samples=4, **kw),
}
# Piecewise: ties broken by the current scores.
BY_SCORE = {"listmle_score": lambda **kw: gbrank.listmle(ties="score", **kw)}
# Pair weights from the current ranks, held fixed within an iteration: the gradient and the
# exact diagonal hessian are those of ``fixed_weight_loss`` with the weights frozen.
FIXED_WEIGHTS = {
    "lambdarank": lambda **kw: gbrank.lambdarank(**kw),
    "lambdarank_truncated": lambda **kw: gbrank.lambdarank(truncation=2, **kw),
    "lambdarank_map": lambda **kw: gbrank.lambdarank("map", k=3, **kw),
    "lambdarank_mrr": lambda **kw: gbrank.lambdarank("mrr", **kw),
    "lambdarank_err": lambda **kw: gbrank.lambdarank("err", norm=False, **kw),
    "lambdarank_linear_zipf": lambda **kw: gbrank.lambdarank(gain="linear", discount="zipf", k=3, **kw),
    "lambdaloss": lambda **kw: gbrank.lambdaloss(**kw),
    "lambdaloss_loss1": lambda **kw: gbrank.lambdaloss("ndcg_loss1", truncation=2, **kw),
    "lambdaloss_loss2": lambda **kw: gbrank.lambdaloss("ndcg_loss2", norm=True, **kw),
}
ALL = {**SMOOTH, **TRUNCATED, **RANDOM, **BY_SCORE, **FIXED_WEIGHTS}

PLACKETT_LUCE = {"listmle", "listmle_topk", "wlistmle", "wlistmle_best_rank", "plackett_luce"}
# Hessian = exact diagonal of the loss's hessian; the others return a bounding surrogate.
EXACT_HESSIAN = sorted(PLACKETT_LUCE | {"ranknet", "ranknet_sigma", "wranknet", "wranknet_linear",
                                        "listnet", "listnet_k2", "listnet_k3", "listnet_target_k",
                                        "ips_listnet", "ips_listnet_weighted"})
SURROGATE_BOUND = {"cosine_target_k": 6.0, "cosine": 6.0, "ndcg_boost": 1.0, "ndcg_boost_linear": 1.0}
# Loss depends on tied documents' order only through ties="input" (Plackett-Luce family).
# (ips_listnet reads positions from the row order, which a permutation changes)
TIE_SYMMETRIC = sorted(set(SMOOTH) - PLACKETT_LUCE - {"ips_listnet"}) + sorted(TRUNCATED)


# --------------------------------------------------------------------------- the registry
def smooth_settings(case: Case) -> Case:
    """The case with ``ties="input"`` where it takes ``ties`` and its example does not set
    them: label ties broken by row instead of at random."""
    if case.accepts("ties") and "ties" not in case.kwargs:
        return Case(case.id, case.spec, {**case.kwargs, "ties": "input"})
    return case


def catalogue():
    """Every registered objective and example: (id -> factory of every case, the
    deterministic ones whose derivatives are the loss's, those whose derivatives are the
    frozen-weight loss's)."""
    cases = list(objective_cases().values())
    deterministic = [c for c in map(smooth_settings, cases) if not randomised(c)]
    frozen = [c for c in deterministic if fixed_weights(c.build())]
    plain = [c for c in deterministic if c not in frozen]
    return {f"registry:{c.id}": case_factory(c) for c in cases}, plain, frozen


REGISTRY, REGISTRY_PLAIN, REGISTRY_FROZEN = catalogue()
# the objectives of the properties that hold for every objective, draw by draw
GENERIC = {**ALL, **REGISTRY}
# and those that hold for the deterministic ones
DETERMINISTIC = {**{n: ALL[n] for n in sorted({**SMOOTH, **TRUNCATED, **BY_SCORE, **FIXED_WEIGHTS})},
                 **{f"registry:{c.id}": case_factory(c) for c in REGISTRY_PLAIN + REGISTRY_FROZEN}}


# --------------------------------------------------------------------------- strategies
@st.composite
def queries(draw, *, max_queries=3, max_docs=6, max_label=4, scores=None, distinct_scores=False,
            distinct_labels=False, min_docs=1):
    """(labels, scores, sizes) of 1..max_queries queries of min_docs..max_docs documents."""
    if scores is None:
        scores = st.floats(-4.0, 4.0, allow_nan=False)
    sizes = draw(st.lists(st.integers(min_docs, max_docs), min_size=1, max_size=max_queries))
    labels, values = [], []
    for n in sizes:
        if distinct_labels:
            labels += draw(st.permutations(range(n)))
        else:
            labels += draw(st.lists(st.integers(0, max_label), min_size=n, max_size=n))
        if distinct_scores:
            # a grid keeps crossings of two scores at least 0.1 away
            values += [0.1 * v for v in draw(st.lists(st.integers(-40, 40), min_size=n, max_size=n, unique=True))]
        else:
            values += draw(st.lists(scores, min_size=n, max_size=n))
    return np.array(labels, dtype=float), np.array(values, dtype=float), np.array(sizes)


def within_query_permutation(rng, sizes):
    offsets = offsets_of(sizes)
    return np.concatenate([start + rng.permutation(n) for start, n in zip(offsets[:-1], sizes)]).astype(int)


def keep_tied_order(perm, labels, sizes):
    """Change ``perm`` so that rows of equal label within a query keep their relative order.

    ``ties="input"`` orders tied documents by row: such a permutation moves the rows without
    changing the target order, so the outputs must move with them.
    """
    perm = perm.copy()
    offsets = offsets_of(sizes)
    for start, end in zip(offsets[:-1], offsets[1:]):
        block = perm[start:end]
        for value in np.unique(labels[block]):
            slots = np.flatnonzero(labels[block] == value)
            block[slots] = np.sort(block[slots])
        perm[start:end] = block
    return perm


# =========================================================================== gradient
@pytest.mark.parametrize("name", sorted(SMOOTH))
@SETTINGS
@given(data=queries())
def test_gradient_is_the_finite_difference_of_the_loss(name, data):
    y, s, sizes = data
    obj = SMOOTH[name]()
    grad, _ = obj.grad_hess(y, s, sizes)
    fd = fd_gradient(lambda x: obj.loss(y, x, sizes), s)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=scaled_atol(grad, 1e-6))


@SETTINGS
@given(data=queries(distinct_scores=True))
def test_truncated_gradient_is_the_finite_difference_between_crossings(data):
    y, s, sizes = data
    obj = TRUNCATED["ranknet_truncated"]()
    grad, _ = obj.grad_hess(y, s, sizes)
    fd = fd_gradient(lambda x: obj.loss(y, x, sizes), s)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=scaled_atol(grad, 1e-6))


@pytest.mark.parametrize("name", sorted(FIXED_WEIGHTS))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=queries())
def test_fixed_weight_gradient_and_hessian_are_those_of_the_frozen_loss(name, data):
    # ties in the scores included: the ranks (ties in row order) are frozen with the weights
    y, s, sizes = data
    obj = FIXED_WEIGHTS[name](hess_floor=0.0)
    grad, hess = obj.grad_hess(y, s, sizes)
    frozen = lambda x: obj.fixed_weight_loss(y, x, sizes, at=s)  # noqa: E731
    assert frozen(s) == pytest.approx(obj.loss(y, s, sizes), rel=1e-12, abs=1e-300)
    fd = fd_gradient(frozen, s)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=scaled_atol(grad, 1e-6))
    fd2 = fd_second(frozen, s)
    np.testing.assert_allclose(hess, fd2, rtol=1e-4, atol=scaled_atol(hess, 1e-5))


@pytest.mark.parametrize("name", sorted(FIXED_WEIGHTS))
@SETTINGS
@given(data=queries(distinct_scores=True), seed=st.integers(0, 2**32 - 1),
       shifts=st.lists(st.floats(-100, 100), min_size=3, max_size=3))
def test_fixed_weight_objectives_follow_rows_and_ignore_shifts(name, data, seed, shifts):
    # with distinct scores the ranks do not depend on the row order
    y, s, sizes = data
    obj = FIXED_WEIGHTS[name]()
    assert_permuted(obj, y, s, sizes, within_query_permutation(np.random.default_rng(seed), sizes))
    shifted = s + np.repeat(np.array(shifts[: len(sizes)]), sizes)
    for a, b in zip(obj.grad_hess(y, s, sizes), obj.grad_hess(y, shifted, sizes)):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("case", REGISTRY_PLAIN, ids=ids(REGISTRY_PLAIN))
@SETTINGS
@given(data=queries(distinct_scores=True))
def test_registered_gradient_and_hessian_are_those_of_the_loss(case, data):
    # scores on a grid 0.1 apart: losses smooth only between crossings of two scores
    # (truncation, ties broken by score) are smooth within a step of them
    y, s, sizes = data
    y = case_labels(case, y)
    obj = case.build(hess_floor=0.0)
    grad, hess = obj.grad_hess(y, s, sizes)
    hess = hess / obj.hess_scale  # a setting of the Newton step, not of the loss
    loss = lambda x: obj.loss(y, x, sizes)  # noqa: E731
    np.testing.assert_allclose(grad, fd_gradient(loss, s), rtol=1e-5, atol=scaled_atol(grad, 1e-6))
    assert_hessian(hess, fd_second(loss, s), case.spec.hessian_bound)


@pytest.mark.parametrize("case", REGISTRY_FROZEN, ids=ids(REGISTRY_FROZEN))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=queries())
def test_registered_fixed_weight_derivatives_are_those_of_the_frozen_loss(case, data):
    y, s, sizes = data
    y = case_labels(case, y)
    obj = case.build(hess_floor=0.0)
    grad, hess = obj.grad_hess(y, s, sizes)
    hess = hess / obj.hess_scale
    frozen = lambda x: obj.fixed_weight_loss(y, x, sizes, at=s)  # noqa: E731
    assert frozen(s) == pytest.approx(obj.loss(y, s, sizes), rel=1e-12, abs=1e-300)
    np.testing.assert_allclose(grad, fd_gradient(frozen, s), rtol=1e-5, atol=scaled_atol(grad, 1e-6))
    np.testing.assert_allclose(hess, fd_second(frozen, s), rtol=1e-4, atol=scaled_atol(hess, 1e-5))


# =========================================================================== hessian
HESSIAN_BOUND = {**{name: None for name in EXACT_HESSIAN}, **SURROGATE_BOUND}


def assert_hessian(hess, fd2, bound):
    """The exact diagonal (``bound`` None), or a surrogate with |d2L/ds_i2| <= bound h_i."""
    if bound is None:
        np.testing.assert_allclose(hess, fd2, rtol=1e-4, atol=scaled_atol(hess, 1e-5))
    else:
        assert (hess >= 0).all() and np.all(np.abs(fd2) <= bound * hess + 1e-5)


@pytest.mark.parametrize("name", sorted(HESSIAN_BOUND))
@SETTINGS
@given(data=queries())
def test_hessian_is_the_exact_diagonal_or_bounds_it(name, data):
    # RankCosine: |d2L/ds_i2| <= 6 h_i; NDCG_Boost: |d2M/ds_i2| <= h_i
    y, s, sizes = data
    obj = SMOOTH[name](hess_floor=0.0)
    _, hess = obj.grad_hess(y, s, sizes)
    assert_hessian(hess, fd_second(lambda x: obj.loss(y, x, sizes), s), HESSIAN_BOUND[name])


# =========================================================================== shift invariance
def test_the_shift_invariance_flags():
    assert [n for n, make in ALL.items() if not make().shift_invariant] == ["cosine", "cosine_target_k"]
    # and cosine indeed sees a shift
    obj = gbrank.cosine()
    y, s = np.array([2.0, 0.0, 1.0]), np.array([0.3, -0.2, 0.1])
    assert obj.loss(y, s, [3]) != pytest.approx(obj.loss(y, s + 5.0, [3]))


SHIFT_INVARIANT = {name: make for name, make in GENERIC.items() if make().shift_invariant}


@pytest.mark.parametrize("make", list(SHIFT_INVARIANT.values()), ids=list(SHIFT_INVARIANT))
@SETTINGS
@given(data=queries(scores=st.floats(-1e4, 1e4)))
def test_gradients_sum_to_zero_per_query(make, data):
    # draw by draw for the randomised objectives: each drawn order has a zero-sum gradient
    y, s, sizes = data
    grad, _ = make().grad_hess(y, s, sizes)
    offsets = offsets_of(sizes)
    sums = np.add.reduceat(grad, offsets[:-1])
    scale = np.add.reduceat(np.abs(grad), offsets[:-1])
    assert np.all(np.abs(sums) <= 1e-9 * (1 + scale))


@pytest.mark.parametrize("name", sorted(n for n in SMOOTH if n not in ("cosine", "cosine_target_k")))
@SETTINGS
@given(data=queries(), shifts=st.lists(st.floats(-100, 100), min_size=3, max_size=3))
def test_a_shift_per_query_changes_nothing(name, data, shifts):
    y, s, sizes = data
    obj = SMOOTH[name]()
    shifted = s + np.repeat(np.array(shifts[: len(sizes)]), sizes)
    for a, b in zip(obj.grad_hess(y, s, sizes), obj.grad_hess(y, shifted, sizes)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
    assert obj.loss(y, shifted, sizes) == pytest.approx(obj.loss(y, s, sizes), rel=1e-9, abs=1e-9)


# =========================================================================== permutations
def assert_permuted(obj, y, s, sizes, perm):
    grad, hess = obj.grad_hess(y, s, sizes)
    grad_p, hess_p = obj.grad_hess(y[perm], s[perm], sizes)
    np.testing.assert_allclose(grad_p, grad[perm], rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(hess_p, hess[perm], rtol=1e-12, atol=1e-13)
    assert obj.loss(y[perm], s[perm], sizes) == pytest.approx(obj.loss(y, s, sizes), rel=1e-12, abs=1e-13)


@pytest.mark.parametrize("name", TIE_SYMMETRIC)
@SETTINGS
@given(data=queries(), seed=st.integers(0, 2**32 - 1))
def test_permuting_rows_permutes_the_outputs(name, data, seed):
    # the loss treats documents of equal label alike: any permutation within queries
    y, s, sizes = data
    perm = within_query_permutation(np.random.default_rng(seed), sizes)
    assert_permuted(ALL[name](), y, s, sizes, perm)


@pytest.mark.parametrize("name", sorted(PLACKETT_LUCE))
@SETTINGS
@given(data=queries(), seed=st.integers(0, 2**32 - 1))
def test_permuting_rows_with_input_order_ties(name, data, seed):
    # ties="input": the target order puts tied documents in row order, so only permutations
    # that keep the rows of each tied block in their order leave the target unchanged
    y, s, sizes = data
    perm = keep_tied_order(within_query_permutation(np.random.default_rng(seed), sizes), y, sizes)
    assert_permuted(SMOOTH[name](), y, s, sizes, perm)


@SETTINGS
@given(data=queries(distinct_scores=True), seed=st.integers(0, 2**32 - 1))
def test_permuting_rows_with_score_order_ties(data, seed):
    # ties="score" orders tied documents by score: with distinct scores, by no row at all
    y, s, sizes = data
    perm = within_query_permutation(np.random.default_rng(seed), sizes)
    assert_permuted(BY_SCORE["listmle_score"](), y, s, sizes, perm)


@pytest.mark.parametrize("name", ["listmle", "listmle_topk", "wlistmle"])
@SETTINGS
@given(data=queries(distinct_labels=True, max_docs=5), seed=st.integers(0, 2**32 - 1))
def test_random_ties_without_ties_are_the_input_order(name, data, seed):
    # nothing to break: ties="random" is then exactly ties="input", and so equivariant
    y, s, sizes = data
    rand = RANDOM[name + "_random"]()
    for a, b in zip(rand.grad_hess(y, s, sizes), SMOOTH[name]().grad_hess(y, s, sizes)):
        np.testing.assert_array_equal(a, b)
    assert_permuted(rand, y, s, sizes, within_query_permutation(np.random.default_rng(seed), sizes))


@pytest.mark.parametrize("make", list(DETERMINISTIC.values()), ids=list(DETERMINISTIC))
@SETTINGS
@given(data=queries(max_queries=4), seed=st.integers(0, 2**32 - 1))
def test_the_order_of_the_queries_does_not_matter(make, data, seed):
    y, s, sizes = data
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(sizes))
    offsets = offsets_of(sizes)
    rows = np.concatenate([np.arange(offsets[q], offsets[q + 1]) for q in order]).astype(int)
    obj = make()
    grad, hess = obj.grad_hess(y, s, sizes)
    grad_p, hess_p = obj.grad_hess(y[rows], s[rows], sizes[order])
    np.testing.assert_array_equal(grad_p, grad[rows])
    np.testing.assert_array_equal(hess_p, hess[rows])
    assert obj.loss(y[rows], s[rows], sizes[order]) == pytest.approx(obj.loss(y, s, sizes), rel=1e-12, abs=1e-13)


# =========================================================================== finiteness
# 2 * s overflows in NDCGBoostObjective beyond half the float64 maximum (see the catalogue)
HALF_MAX = np.finfo(np.float64).max / 2


@pytest.mark.parametrize("make", list(GENERIC.values()), ids=list(GENERIC))
@SETTINGS
@given(data=queries(max_label=31, scores=st.floats(allow_nan=False, allow_infinity=False)))
def test_no_nan_or_inf_for_any_finite_input(make, data):
    y, s, sizes = data
    obj = make()
    if getattr(obj, "factory", None) == "ndcg_boost":
        s = np.clip(s, -HALF_MAX, HALF_MAX)
    with np.errstate(over="ignore"):
        grad, hess = obj.grad_hess(y, s, sizes)
        loss = obj.loss(y, s, sizes)
    assert np.isfinite(grad).all()
    assert np.isfinite(hess).all() and (hess >= 0).all()
    assert not np.isnan(loss)
    if np.abs(s).max() <= 1e280:
        # beyond, a sum of score gaps times gains up to 2**31 may exceed the float64 range
        assert np.isfinite(loss)


@pytest.mark.parametrize("make", list(GENERIC.values()), ids=list(GENERIC))
@SETTINGS
@given(data=queries(scores=st.floats(-1e6, 1e6, width=32)))
def test_float32_scores_give_the_float64_result(make, data):
    y, s, sizes = data
    obj = make()
    s32 = s.astype(np.float32)
    for a, b in zip(obj.grad_hess(y, s32, sizes), obj.grad_hess(y, s32.astype(np.float64), sizes)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("make", list(GENERIC.values()), ids=list(GENERIC))
@SETTINGS
@given(data=queries(), weights=st.lists(st.floats(0.0, 10.0), min_size=18, max_size=18))
def test_weights_multiply_rows(make, data, weights):
    y, s, sizes = data
    w = np.array(weights[: y.size])
    obj = make()
    grad, hess = obj.grad_hess(y, s, sizes)
    grad_w, hess_w = obj.grad_hess(y, s, sizes, w)
    np.testing.assert_array_equal(grad_w, grad * w)
    np.testing.assert_array_equal(hess_w, hess * w)
