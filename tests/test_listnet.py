"""ListNet and the target mappings against direct implementations of Xia et al. (2008, 2009)."""

from __future__ import annotations

import itertools
import math
import pickle

import numpy as np
import pytest

from gbrank.objectives._targets import target_scores
from gbrank.objectives.listnet import ListNet, listnet
from helpers import RANK_MAPS, direct_psi, fd_diagonal, fd_gradient, fd_gradient_by_query, mq2008, query_sums, random_queries, synthetic, train_both

# --------------------------------------------------------------------------- references
def log_softmax(x):
    m = x.max()
    return x - m - math.log(np.sum(np.exp(x - m)))


def pl_log_prob(x, prefix):
    """log of prod_t exp(x[a_t]) / sum_{d not in a_1..a_{t-1}} exp(x[d])."""
    remaining = set(range(len(x)))
    total = 0.0
    for a in prefix:
        m = max(x[d] for d in remaining)
        total += x[a] - m - math.log(sum(math.exp(x[d] - m) for d in remaining))
        remaining.remove(a)
    return total


def direct_ce(psi, s, k):
    """-sum over all ordered top-k prefixes a of P_psi(a) log P_s(a) (k capped at n - 1)."""
    k = min(k, len(s) - 1)
    return -sum(
        math.exp(pl_log_prob(psi, a)) * pl_log_prob(s, a) for a in itertools.permutations(range(len(s)), k)
    )


def pair_log_probs(x):
    """log P_x(a, b) for every ordered pair: log p_a + log of b's softmax among all but a."""
    n = len(x)
    out = np.full((n, n), -np.inf)
    first = log_softmax(x)
    for a in range(n):
        rest = [b for b in range(n) if b != a]
        out[a, rest] = first[a] + log_softmax(x[rest])
    return out


def direct_ce_top2(psi, s, target_pairs=None):
    """Top-2 cross-entropy by enumeration of all ordered pairs (vectorised over b)."""
    if len(s) == 2:
        return direct_ce(psi, s, 1)
    q = np.exp(pair_log_probs(psi)) if target_pairs is None else target_pairs
    ls = pair_log_probs(s)
    mask = ~np.eye(len(s), dtype=bool)
    return -np.sum(q[mask] * ls[mask])


_TARGET_PAIRS = {}


def direct_query_loss(s, lab, k, target="exp2", target_k=None):
    psi = direct_psi(lab, target, target_k)
    if psi.max() == psi.min():
        return 0.0
    if k == 1:
        q = np.exp(log_softmax(psi))
        return -np.sum(q * log_softmax(s))
    if k == 2:
        if len(s) == 2:
            return direct_ce(psi, s, 1)
        # the target's pair probabilities do not depend on s: computed once per query
        key = (psi.tobytes(), target, target_k)
        if key not in _TARGET_PAIRS:
            _TARGET_PAIRS[key] = np.exp(pair_log_probs(psi))
        return direct_ce_top2(psi, s, _TARGET_PAIRS[key])
    return direct_ce(psi, s, k)


def direct_loss(scores, labels, sizes, k, **kw):
    total, start = 0.0, 0
    for size in sizes:
        total += direct_query_loss(scores[start : start + size], labels[start : start + size], k, **kw)
        start += size
    return total


def check_against_direct(obj, labels, scores, sizes, k, **kw):
    grad, hess = obj.grad_hess(labels, scores, sizes)
    assert obj.loss(labels, scores, sizes) == pytest.approx(direct_loss(scores, labels, sizes, k, **kw), rel=1e-10)
    num_g = fd_gradient_by_query(lambda s, lab: direct_query_loss(s, lab, k, **kw), scores, labels, sizes)
    np.testing.assert_allclose(grad, num_g, atol=1e-6, rtol=1e-6)
    # the exact diagonal hessian: finite differences of the (proven) gradient
    num_h = fd_diagonal(lambda s: obj.grad_hess(labels, s, sizes)[0], scores)
    np.testing.assert_allclose(hess, np.maximum(num_h, obj.hess_floor), atol=1e-6, rtol=1e-6)


# --------------------------------------------------------------------------- targets
@pytest.mark.parametrize("target", ["exp2", "linear", *RANK_MAPS])
@pytest.mark.parametrize("k", [None, 1, 3, 10])
def test_target_mappings_match_the_direct_definition(target, k):
    rng = np.random.default_rng(0)
    labels, _, sizes = random_queries(rng, 8, max_docs=30, scale=2.0)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    psi, informative = target_scores(labels, offsets, target, k)
    expected = np.concatenate([direct_psi(labels[a:b], target, k) for a, b in zip(offsets[:-1], offsets[1:])])
    np.testing.assert_allclose(psi, expected, rtol=1e-13, atol=1e-13)
    flags = [expected[a:b].max() > expected[a:b].min() for a, b in zip(offsets[:-1], offsets[1:])]
    np.testing.assert_array_equal(informative, flags)


def test_position_mappings_are_the_papers_on_a_list_of_fifteen():
    """Xia et al. 2008, section 6.1: log(15 - r), sqrt(15 - r), 15 - r, (15 - r)^2, exp(15 - r),
    positions r counted from 0 (the last object would otherwise get log 0)."""
    labels = np.arange(15.0)[::-1].copy()  # no ties: row i holds position i
    r = np.arange(15.0)
    offsets = np.array([0, 15])
    expected = {
        "rank_log": np.log(15 - r),
        "rank_sqrt": np.sqrt(15 - r),
        "rank_linear": 15 - r,
        "rank_quadratic": (15 - r) ** 2,
        "rank_exp": np.exp(15 - r),
    }
    for target, values in expected.items():
        np.testing.assert_allclose(target_scores(labels, offsets, target)[0], values, rtol=1e-15)


@pytest.mark.parametrize("target", ["linear", "rank_log", "rank_quadratic", "rank_exp"])
def test_topk_mapping_keeps_the_order_in_the_top_k_and_a_common_smaller_value_below(target):
    rng = np.random.default_rng(1)
    labels = rng.permutation(12).astype(float) + 1.0
    psi = target_scores(labels, np.array([0, 12]), target, 4)[0]
    ranked = psi[np.argsort(-labels)]
    assert np.all(np.diff(ranked[:4]) < 0)
    assert np.all(ranked[4:] == ranked[-1])
    assert ranked[-1] < ranked[3]
    assert ranked[-1] == target_scores(labels, np.array([0, 12]), target)[0].min()


def test_ties_straddling_k_share_the_mean():
    labels = np.array([0.0, 2.0, 1.0, 1.0, 1.0])
    psi = target_scores(labels, np.array([0, 5]), "exp2", 2)[0]
    # positions 1..5 hold 3, 1, 0, 0, 0 after the modification; the three label-1 documents
    # occupy positions 2..4
    np.testing.assert_allclose(psi, [0.0, 3.0, 1 / 3, 1 / 3, 1 / 3], rtol=1e-15)


def test_rank_exp_stays_finite_for_long_lists():
    n = 10_000
    labels = np.arange(float(n))
    psi = target_scores(labels, np.array([0, n]), "rank_exp")[0]
    assert np.isfinite(psi).all()
    # exp(m - (n - 700)): the top document gets e^700, ratios are the paper's
    assert psi[-1] == pytest.approx(math.exp(700.0), rel=1e-12)
    assert psi[-1] / psi[-2] == pytest.approx(math.e, rel=1e-12)


def test_callable_targets_are_called_per_query():
    seen = []

    def target(labels):
        seen.append(labels.copy())
        return np.exp2(labels) - 1.0

    labels = np.array([1.0, 0, 2, 3, 0])
    scores = np.array([0.5, -0.2, 0.1, 1.0, 0.0])
    g = listnet(target=target).grad_hess(labels, scores, [3, 2])[0]
    assert [list(x) for x in seen] == [[1, 0, 2], [3, 0]]
    np.testing.assert_array_equal(g, listnet().grad_hess(labels, scores, [3, 2])[0])
    with pytest.raises(ValueError, match="returned shape \\(2,\\) for query 0 of 3 documents"):
        listnet(target=lambda lab: lab[:2]).grad_hess(labels, scores, [3, 2])
    with pytest.raises(ValueError, match="non-finite value for query 1"):
        listnet(target=lambda lab: np.where(lab > 0, lab, np.nan)).grad_hess(labels + [1, 1, 1, 1, 0], scores, [3, 2])


# --------------------------------------------------------------------------- math
@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("target,target_k", [("exp2", None), ("linear", None), ("rank_sqrt", None), ("exp2", 3)])
def test_gradient_and_hessian_match_finite_differences(k, target, target_k):
    rng = np.random.default_rng(2 + k)
    labels, scores, sizes = random_queries(rng, 4, scale=2.0)
    obj = listnet(k=k, target=target, target_k=target_k)
    check_against_direct(obj, labels, scores, sizes, k, target=target, target_k=target_k)


@pytest.mark.parametrize("k,max_docs", [(3, 7), (4, 7), (6, 6)])
def test_exact_enumeration_matches_the_full_prefix_sum(k, max_docs):
    """k >= n: the full permutation distribution, i.e. its first n - 1 positions."""
    rng = np.random.default_rng(4 + k)
    labels, scores, sizes = random_queries(rng, 4, max_docs=max_docs, min_docs=4, scale=2.0)
    obj = listnet(k=k, target="linear", exact_limit=5000)
    check_against_direct(obj, labels, scores, sizes, k, target="linear")


def test_top2_closed_form_equals_the_ordered_pair_enumeration():
    rng = np.random.default_rng(7)
    for n in (2, 3, 10, 50):
        labels = rng.integers(0, 4, size=n).astype(float)
        labels[0], labels[1] = 3.0, 0.0
        scores = rng.normal(scale=3.0, size=n)
        psi = direct_psi(labels)
        assert listnet(k=2).loss(labels, scores, [n]) == pytest.approx(direct_ce_top2(psi, scores), rel=1e-12)
        if n <= 10:
            assert direct_ce_top2(psi, scores) == pytest.approx(direct_ce(psi, scores, 2), rel=1e-12)


@pytest.mark.parametrize("spread", [20.0, 1e4])
def test_top2_with_one_dominant_score(spread):
    """1 - p_a underflows for the top document: the closed form handles it on its own."""
    labels = np.array([0.0, 2.0, 1.0, 3.0, 0.0, 1.0])
    scores = np.array([spread, -spread, 0.5, 0.0, -1.0, 2.0])
    psi = direct_psi(labels, "rank_linear")
    obj = listnet(k=2, target="rank_linear")
    assert obj.loss(labels, scores, [6]) == pytest.approx(direct_ce_top2(psi, scores), rel=1e-12)
    grad, hess = obj.grad_hess(labels, scores, [6])
    if spread == 20.0:
        num_g = fd_gradient(lambda s: direct_ce_top2(psi, s), scores)
        np.testing.assert_allclose(grad, num_g, atol=1e-6, rtol=1e-6)
    assert np.isfinite(grad).all() and np.isfinite(hess).all()
    assert abs(grad.sum()) < 1e-12


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_gradient_sums_to_zero_and_hessian_is_non_negative(k):
    rng = np.random.default_rng(8)
    labels, scores, sizes = random_queries(rng, 30, max_docs=40, scale=2.0)
    for obj in (listnet(k=k), listnet(k=k, exact_limit=0)):
        grad, hess = obj.grad_hess(labels, scores, sizes)
        np.testing.assert_allclose(query_sums(grad, sizes), 0.0, atol=1e-10)
        assert hess.min() >= obj.hess_floor


# --------------------------------------------------------------------------- sampled estimate
@pytest.mark.parametrize(
    "target",
    ["linear", lambda lab: 5e299 * lab],
    ids=["linear", "huge_tied_targets"],  # 1e300 + G == 1e300: the noise must still break ties
)
def test_sampled_estimate_is_unbiased(target):
    """Mean over seeds and replicas of the sampled loss, gradient and hessian = the exact ones."""
    rng = np.random.default_rng(9)
    n, k, replicas = 8, 3, 100
    labels = np.array([3.0, 2, 2, 1, 1, 0, 0, 0])[rng.permutation(8)]
    scores = rng.normal(size=n)
    exact = listnet(k=k, target=target)
    g_exact, h_exact = exact.grad_hess(labels, scores, [n])
    loss_exact = exact.loss(labels, scores, [n])

    # one call holds many copies of the query, each shifted by its own constant (the loss is
    # shift-invariant): draws hash a query's labels and scores, so each copy draws its own
    many_labels = np.tile(labels, replicas)
    many_scores = np.tile(scores, replicas) + np.repeat(np.arange(replicas) * 0.5, n)
    sizes = np.full(replicas, n)
    grads, hesses, losses = [], [], []
    for seed in range(10):
        obj = listnet(k=k, target=target, exact_limit=0, n_samples=8, seed=seed, hess_floor=0.0)
        g, h = obj.grad_hess(many_labels, many_scores, sizes)
        grads.append(g.reshape(replicas, n))
        hesses.append(h.reshape(replicas, n))
        losses.append(obj._loss(obj.bind(many_labels, np.diff(np.arange(0, n * replicas + 1, n))).state, many_scores))
    for draws, exact_value in (
        (np.vstack(grads), g_exact),
        (np.vstack(hesses), h_exact),
        (np.concatenate(losses)[:, None], loss_exact),
    ):
        mean = draws.mean(axis=0)
        stderr = draws.std(axis=0) / math.sqrt(draws.shape[0])
        assert stderr.max() > 0  # it does sample
        assert np.all(np.abs(mean - exact_value) <= 4 * stderr + 1e-12), (mean, exact_value, stderr)


def test_sampled_draws_are_seeded_and_fresh_per_score_vector():
    rng = np.random.default_rng(10)
    labels, scores, sizes = random_queries(rng, 6, min_docs=20, scale=2.0)
    a = listnet(k=3, exact_limit=0, seed=1).grad_hess(labels, scores, sizes)[0]
    b = listnet(k=3, exact_limit=0, seed=1).grad_hess(labels, scores, sizes)[0]
    c = listnet(k=3, exact_limit=0, seed=2).grad_hess(labels, scores, sizes)[0]
    d = listnet(k=3, exact_limit=0, seed=1).grad_hess(labels, scores + 1e-3, sizes)[0]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert not np.allclose(a, d, atol=1e-2)  # new scores, new draws


def test_long_queries_switch_to_sampling_short_ones_stay_exact():
    rng = np.random.default_rng(11)
    labels = rng.integers(0, 3, size=40).astype(float)
    scores = rng.normal(size=40)
    # 1 + 40 + 40*39 = 1601 prefixes: exact under a limit of 2000, sampled under 1000
    exact = listnet(k=3, exact_limit=2000).grad_hess(labels, scores, [40])[0]
    np.testing.assert_array_equal(exact, listnet(k=3, exact_limit=2000, seed=5).grad_hess(labels, scores, [40])[0])
    sampled = listnet(k=3, exact_limit=1000).grad_hess(labels, scores, [40])[0]
    assert not np.array_equal(exact, sampled)
    assert np.abs(sampled - exact).max() < 0.25  # one draw of the default n_samples


# --------------------------------------------------------------------------- identities
@pytest.mark.parametrize("k", [1, 2, 3])
def test_permuting_rows_within_a_query_permutes_the_outputs(k):
    rng = np.random.default_rng(12)
    labels = rng.integers(0, 4, size=9).astype(float)
    scores = rng.normal(size=9)
    perm = rng.permutation(9)
    for target in ("exp2", "rank_log"):
        obj = listnet(k=k, target=target)
        g, h = obj.grad_hess(labels, scores, [9])
        gp, hp = obj.grad_hess(labels[perm], scores[perm], [9])
        np.testing.assert_allclose(gp, g[perm], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(hp, h[perm], rtol=1e-12, atol=1e-14)


def test_all_equal_and_single_document_queries_get_zero_gradient():
    labels = np.array([2.0, 2, 2, 1, 0, 3])
    scores = np.array([0.3, -1.0, 2.0, 0.5, 0.1, 0.7])
    for k in (1, 2, 3):
        obj = listnet(k=k)
        grad, hess = obj.grad_hess(labels, scores, [3, 2, 1])
        np.testing.assert_array_equal(grad[[0, 1, 2, 5]], 0.0)
        np.testing.assert_array_equal(hess[[0, 1, 2, 5]], obj.hess_floor)
        assert np.all(grad[3:5] != 0)
        assert obj.loss(labels[:3], scores[:3], [3]) == 0.0
        kept = listnet(k=k, ignore_all_equal=False).grad_hess(labels, scores, [3, 2, 1])[0]
        assert np.all(kept[:3] != 0) and kept[5] == 0.0


# --------------------------------------------------------------------------- numerics
@pytest.mark.parametrize("k,exact_limit", [(1, 1000), (2, 1000), (3, 1000), (3, 0)])
def test_extreme_scores_stay_finite(k, exact_limit):
    rng = np.random.default_rng(13)
    labels, _, sizes = random_queries(rng, 10, max_docs=12, scale=2.0)
    scores = rng.choice([-1e4, 1e4, 0.0], size=labels.size)
    obj = listnet(k=k, exact_limit=exact_limit)
    grad, hess = obj.grad_hess(labels, scores, sizes)
    assert np.isfinite(grad).all() and np.isfinite(hess).all() and hess.min() >= 0
    np.testing.assert_allclose(query_sums(grad, sizes), 0.0, atol=1e-9)
    assert np.isfinite(obj.loss(labels, scores, sizes))


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("target", ["exp2", "rank_exp", "rank_quadratic"])
def test_ten_thousand_document_query(k, target):
    rng = np.random.default_rng(14)
    n = 10_000
    labels = rng.integers(0, 5, size=n).astype(float)
    scores = rng.normal(scale=30.0, size=n)
    scores[:3] = [1e4, -1e4, 5e3]
    obj = listnet(k=k, target=target)
    grad, hess = obj.grad_hess(labels, scores, [n])
    assert np.isfinite(grad).all() and np.isfinite(hess).all()
    assert abs(grad.sum()) < 1e-9
    assert np.isfinite(obj.loss(labels, scores, [n]))


def test_long_list_with_moderate_scores_matches_the_direct_top1():
    rng = np.random.default_rng(15)
    n = 10_000
    labels = rng.integers(0, 5, size=n).astype(float)
    scores = rng.normal(size=n)
    assert listnet().loss(labels, scores, [n]) == pytest.approx(direct_query_loss(scores, labels, 1), rel=1e-10)


# --------------------------------------------------------------------------- bad input
# (bad scores, groups and labels, and float32 input: the registry-driven catalogue in
# test_bad_input_objectives.py, for every registered objective)
def test_other_targets_take_any_non_negative_label():
    grad = listnet(target="linear").grad_hess(np.array([0.5, 40.0, 2.5]), np.zeros(3), [3])[0]
    assert np.isfinite(grad).all() and grad[1] < 0
    with pytest.raises(ValueError, match="non-negative"):
        listnet(target="rank_log").grad_hess(np.array([0.5, -1.0, 2.5]), np.zeros(3), [3])


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"k": 0}, "k must be an integer >= 1"),
        ({"k": 1.5}, "k must be an integer >= 1"),
        ({"target": "exp"}, "target must be one of"),
        ({"target_k": 0}, "target_k must be an integer >= 1 or None, got 0"),
        ({"n_samples": 0}, "n_samples must be an integer >= 1"),
        ({"seed": -1}, "seed must be an integer >= 0"),
        ({"exact_limit": -1}, "exact_limit must be an integer >= 0"),
        ({"hess_scale": 0.0}, "hess_scale"),
    ],
)
def test_bad_parameters_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        listnet(**kwargs)


# --------------------------------------------------------------------------- protocol
def test_repr_and_pickle():
    obj = listnet(k=3, target="rank_log", target_k=5, seed=2)
    assert repr(obj) == (
        "listnet(k=3, target='rank_log', target_k=5, n_samples=16, seed=2, exact_limit=1000, "
        "ignore_all_equal=True, hess_floor=1e-06, hess_scale=1.0)"
    )
    rng = np.random.default_rng(17)
    labels, scores, sizes = random_queries(rng, 5, min_docs=30, scale=2.0)
    clone = pickle.loads(pickle.dumps(obj))
    assert isinstance(clone, ListNet) and repr(clone) == repr(obj)
    np.testing.assert_array_equal(clone.grad_hess(labels, scores, sizes)[0], obj.grad_hess(labels, scores, sizes)[0])


# --------------------------------------------------------------------------- engines
lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

ENGINE_CASES = {
    "k1": lambda: listnet(),
    "k2": lambda: listnet(k=2),
    "k3": lambda: listnet(k=3),
    "k1_rank_log_top10": lambda: listnet(target="rank_log", target_k=10),
}


@pytest.mark.parametrize("name", list(ENGINE_CASES))
def test_training_improves_heldout_ndcg_on_synthetic_data(name):
    baseline, lgb_score, xgb_score = train_both(ENGINE_CASES[name], synthetic(4, 80), synthetic(5, 40), rounds=10)
    assert lgb_score > baseline + 0.1
    assert xgb_score > baseline + 0.1


@pytest.mark.parametrize("name", ["k1", "k2"])
def test_training_improves_heldout_ndcg_on_mq2008(name):
    baseline, lgb_score, xgb_score = train_both(ENGINE_CASES[name], *mq2008(), rounds=10)
    # zero scores give 0.653 on Fold1/test (queries without relevant documents count 1)
    assert lgb_score > baseline + 0.1
    assert xgb_score > baseline + 0.1
