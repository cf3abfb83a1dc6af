"""LambdaRank and LambdaLoss against direct implementations, gbrank's metrics and LightGBM."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import gbrank
from gbrank.metrics import err, mean_average_precision, mean_reciprocal_rank, ndcg
from gbrank.objectives._pairwise import PairSettings, swap_deltas
from gbrank.objectives.lambdarank import LambdaLoss, LambdaRank, lambdaloss, lambdarank
from helpers import fd_gradient, fd_second, lgb_params, mq2008, random_queries

LN2 = math.log(2.0)
NORM_EPS = float(np.float32(0.01))


# --------------------------------------------------------------------------- references
def ranking(s):
    """Positions 0.. of the rows by descending score, ties in row order."""
    return np.argsort(-s, kind="stable")


def measure_value(measure, lab, order, k, gain="exp2", discount="log2", max_label=None):
    """The query's measure for the ranking ``order`` (row at each position), by gbrank.metrics."""
    n = lab.size
    scores = np.empty(n)
    scores[order] = np.arange(n, 0, -1, dtype=float)
    if measure == "ndcg":
        return ndcg(lab, scores, [n], k=k, gain=gain, discount=discount)
    if measure == "map":
        return mean_average_precision(lab, scores, [n], k=k)
    if measure == "mrr":
        return mean_reciprocal_rank(lab, scores, [n], k=k)
    return err(lab, scores, [n], k=k, max_label=max_label)


def brute_swap(measure, lab, s, x, y, k=None, **kw):
    """|M after swapping rows x and y in the ranking by s - M before|, recomputed by the metric."""
    order = ranking(s)
    swapped = order.copy()
    px, py = np.flatnonzero(order == x)[0], np.flatnonzero(order == y)[0]
    swapped[px], swapped[py] = y, x
    return abs(measure_value(measure, lab, swapped, k, **kw) - measure_value(measure, lab, order, k, **kw))


def gains_of(lab, gain):
    return 2.0**lab - 1.0 if gain == "exp2" else lab.astype(float)


def disc_of(r, discount):
    """Discount of 1-based rank r."""
    if discount == "log2":
        return 1.0 / math.log2(1.0 + r)
    if discount == "zipf":
        return 1.0 / r
    return float(r) ** -discount


def ideal_dcg(lab, gain, discount, depth):
    g = np.sort(gains_of(lab, gain))[::-1]
    depth = len(g) if depth is None else min(depth, len(g))
    return sum(g[t] * disc_of(t + 1, discount) for t in range(depth))


def direct_weights(kind, lab, s0, *, measure="ndcg", k=None, gain="exp2", discount="log2", truncation=None, mu=10.0):
    """{(x, y): w} over the pairs of one query at the scores s0, x preferred, from the papers' formulas
    (LambdaLoss) or by recomputing the measure after the swap (LambdaRank)."""
    n = lab.size
    order = ranking(s0)
    rank = np.empty(n, dtype=int)
    rank[order] = np.arange(1, n + 1)
    top = n if truncation is None else truncation
    G = gains_of(lab, gain)
    Z = ideal_dcg(lab, gain, discount, k if k is not None else truncation)
    out = {}
    for x in range(n):
        for y in range(n):
            if x == y or min(rank[x], rank[y]) > top:
                continue
            if kind == "ndcg_loss1":
                w = G[x] * disc_of(rank[x], discount) / Z if Z > 0 else 0.0
            else:
                value_x, value_y = (G[x], G[y]) if measure in ("ndcg", "err") else (lab[x] > 0, lab[y] > 0)
                if not value_x > value_y:
                    continue
                if kind == "lambdarank":
                    if measure == "ndcg":
                        dx = disc_of(rank[x], discount) if k is None or rank[x] <= k else 0.0
                        dy = disc_of(rank[y], discount) if k is None or rank[y] <= k else 0.0
                        w = abs(G[x] - G[y]) * abs(dx - dy) / Z if Z > 0 else 0.0
                    else:
                        w = brute_swap(measure, lab, s0, x, y, k=k)
                else:
                    d = abs(rank[x] - rank[y])
                    delta = abs(disc_of(d, discount) - disc_of(d + 1, discount))
                    swap = abs(disc_of(rank[x], discount) - disc_of(rank[y], discount))
                    w = abs(G[x] - G[y]) * (delta if kind == "ndcg_loss2" else swap + mu * delta) / Z
            if w:
                out[(x, y)] = w
    return out


def direct_loss(weights, s, s0, *, c, sigma=1.0, norm=False):
    """c sum w phi(s_x - s_y) with the weights (and LightGBM's normalisation) frozen at s0."""
    spread = norm and s0.max() != s0.min()
    terms, lambdas = 0.0, 0.0
    for (x, y), w in weights.items():
        if spread:
            w = w / (NORM_EPS + abs(s0[x] - s0[y]))
        terms += c * w * math.log1p(math.exp(-sigma * (s[x] - s[y])))
        lambdas += 2 * c * sigma * w / (1.0 + math.exp(sigma * (s0[x] - s0[y])))
    factor = math.log2(1.0 + lambdas) / lambdas if norm and lambdas > 0 else 1.0
    return terms * factor


def random_query(seed, n=9, n_levels=4, ties=True):
    labels, scores, _ = random_queries(seed, sizes=[n], n_levels=n_levels, tied_scores=ties)
    return labels, scores


# (name, objective, direct kind, direct keywords, c, norm)
CASES = [
    ("lambdarank", lambda: lambdarank(), "lambdarank", {"truncation": 30}, 1.0, True),
    ("lambdarank_trunc3", lambda: lambdarank(truncation=3), "lambdarank", {"truncation": 3}, 1.0, True),
    ("lambdarank_plain", lambda: lambdarank(truncation=None, norm=False), "lambdarank", {}, 1.0, False),
    ("lambdarank_k4_zipf_linear", lambda: lambdarank(k=4, gain="linear", discount="zipf", truncation=None),
     "lambdarank", {"k": 4, "gain": "linear", "discount": "zipf"}, 1.0, True),
    ("lambdarank_beta", lambda: lambdarank(discount=0.7, truncation=5, sigma=2.0), "lambdarank",
     {"discount": 0.7, "truncation": 5}, 1.0, True),
    ("lambdarank_map", lambda: lambdarank("map", truncation=None), "lambdarank", {"measure": "map"}, 1.0, True),
    ("lambdarank_map_k3", lambda: lambdarank("map", k=3, truncation=4, norm=False), "lambdarank",
     {"measure": "map", "k": 3, "truncation": 4}, 1.0, False),
    ("lambdarank_mrr", lambda: lambdarank("mrr", truncation=None, norm=False), "lambdarank", {"measure": "mrr"}, 1.0, False),
    ("lambdarank_mrr_k2", lambda: lambdarank("mrr", k=2, truncation=None), "lambdarank", {"measure": "mrr", "k": 2},
     1.0, True),
    ("lambdarank_err", lambda: lambdarank("err", truncation=None, norm=False), "lambdarank", {"measure": "err"}, 1.0, False),
    ("lambdarank_err_k3_trunc", lambda: lambdarank("err", k=3, truncation=2), "lambdarank",
     {"measure": "err", "k": 3, "truncation": 2}, 1.0, True),
    ("lambdaloss_lambdarank", lambda: lambdaloss("lambdarank"), "lambdarank", {}, 1 / LN2, False),
    ("ndcg_loss1", lambda: lambdaloss("ndcg_loss1"), "ndcg_loss1", {}, 1 / LN2, False),
    ("ndcg_loss1_trunc", lambda: lambdaloss("ndcg_loss1", truncation=3), "ndcg_loss1", {"truncation": 3}, 1 / LN2, False),
    ("ndcg_loss2", lambda: lambdaloss("ndcg_loss2"), "ndcg_loss2", {}, 1 / LN2, False),
    ("ndcg_loss2pp", lambda: lambdaloss(), "ndcg_loss2pp", {}, 1 / LN2, False),
    ("ndcg_loss2pp_mu_trunc_zipf", lambda: lambdaloss("ndcg_loss2++", mu=2.5, truncation=4, discount="zipf"),
     "ndcg_loss2pp", {"mu": 2.5, "truncation": 4, "discount": "zipf"}, 1 / LN2, False),
    ("ndcg_loss2pp_norm_linear", lambda: lambdaloss(norm=True, gain="linear", sigma=0.5), "ndcg_loss2pp",
     {"gain": "linear"}, 1 / LN2, True),
]


def sigma_of(obj):
    return obj.sigma


# --------------------------------------------------------------------------- math
@pytest.mark.parametrize("name,make,kind,kw,c,norm", CASES, ids=[case[0] for case in CASES])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradient_and_hessian_match_the_direct_loss_with_fixed_weights(name, make, kind, kw, c, norm, seed):
    lab, s0 = random_query(seed, n=9)
    built = make()
    # the same settings without the floor, to compare the raw hessian
    obj = getattr(gbrank, built.factory)(**{**built._params(), "hess_floor": 0.0})
    sigma = sigma_of(obj)
    weights = direct_weights(kind, lab, s0, **kw)
    assert weights, "the case must have pairs"

    def direct(s):
        return direct_loss(weights, s, s0, c=c, sigma=sigma, norm=norm)

    assert obj.loss(lab, s0, [9]) == pytest.approx(direct(s0), rel=1e-12)
    moved = s0 + np.linspace(-0.3, 0.4, 9)
    assert obj.fixed_weight_loss(lab, moved, [9], at=s0) == pytest.approx(direct(moved), rel=1e-12)
    grad, hess = obj.grad_hess(lab, s0, [9])
    np.testing.assert_allclose(grad, fd_gradient(direct, s0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(hess, fd_second(direct, s0), rtol=1e-4, atol=1e-6)
    # and the fixed-weight loss the objective evaluates has that gradient too
    np.testing.assert_allclose(
        grad, fd_gradient(lambda s: obj.fixed_weight_loss(lab, s, [9], at=s0), s0), rtol=1e-6, atol=1e-8
    )



def logistic(t):
    return 1.0 / (1.0 + math.exp(-t)) if t >= 0 else math.exp(t) / (1.0 + math.exp(t))


def direct_grad_hess(weights, s, *, c, sigma=1.0, norm=False):
    """Gradient and hessian of direct_loss at s0 = s, each logistic on its own pair."""
    spread = norm and s.max() != s.min()
    grad, hess, lambdas = np.zeros(s.size), np.zeros(s.size), 0.0
    for (x, y), w in weights.items():
        if spread:
            w = w / (NORM_EPS + abs(s[x] - s[y]))
        z = sigma * (s[x] - s[y])
        # rho = 1 / (1 + e^z) and 1 - rho, each without cancellation or overflow
        rho, other = logistic(-z), logistic(z)
        grad[x] -= c * sigma * w * rho
        grad[y] += c * sigma * w * rho
        hess[x] += c * sigma**2 * w * rho * other
        hess[y] += c * sigma**2 * w * rho * other
        lambdas += 2 * c * sigma * w * rho
    factor = math.log2(1.0 + lambdas) / lambdas if norm and lambdas > 0 else 1.0
    return grad * factor, hess * factor


@pytest.mark.parametrize("spread", [5.0, 650.0, 900.0, 1e6])
@pytest.mark.parametrize("norm", [True, False])
def test_logistics_of_far_apart_scores(spread, norm):
    """The kernel takes each logistic as a ratio of per-document exponentials unless a query's
    scores span more than 700 (then one exponential per pair): both sides of that line match
    the pairwise formula, down to the tiny hessians of pairs hundreds apart."""
    lab, s0 = random_query(3, n=9)
    s = (s0 - s0.min()) / (s0.max() - s0.min()) * spread
    obj = lambdarank(truncation=None, norm=norm, hess_floor=0.0)
    grad, hess = obj.grad_hess(lab, s, [9])
    ref_grad, ref_hess = direct_grad_hess(direct_weights("lambdarank", lab, s), s, c=1.0, norm=norm)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-12 * np.abs(ref_grad).max())
    np.testing.assert_allclose(hess, ref_hess, rtol=1e-9, atol=0.0)


MEASURE_CASES = [
    ("ndcg", {}),
    ("ndcg", {"k": 3}),
    ("ndcg", {"k": 5, "gain": "linear", "discount": "zipf"}),
    ("ndcg", {"discount": 1.5}),
    ("map", {}),
    ("map", {"k": 4}),
    ("mrr", {}),
    ("mrr", {"k": 3}),
    ("err", {}),
    ("err", {"k": 2}),
]


@pytest.mark.parametrize("measure,kw", MEASURE_CASES, ids=[f"{m}-{kw}" for m, kw in MEASURE_CASES])
@pytest.mark.parametrize("seed", range(4))
def test_swap_weights_are_the_change_of_the_metric(measure, kw, seed):
    """Every pair's weight is |M(swapped) - M| with M recomputed by gbrank.metrics."""
    lab, s = random_query(10 + seed, n=10, n_levels=3, ties=False)
    obj = lambdarank(measure, truncation=None, norm=False, **kw)
    pairs, _ = obj.bind(lab, np.diff(np.array([0, 10]))).state
    matrix = swap_deltas(pairs, s)
    checked = 0
    for x in range(10):
        for y in range(10):
            higher = lab[x] > lab[y] if measure in ("ndcg", "err") else (lab[x] > 0) > (lab[y] > 0)
            if not higher:
                assert matrix[x, y] == 0.0
                continue
            expected = brute_swap(measure, lab, s, x, y, **kw)
            assert matrix[x, y] == pytest.approx(expected, rel=1e-10, abs=1e-14)
            checked += expected > 0
    assert checked > 0


def test_lambdaloss_weights_match_the_formulas_of_the_paper():
    """NDCG-Loss2 and -Loss2++ weights of section 6, written out for a four-document query."""
    lab = np.array([0.0, 2.0, 1.0, 0.0])
    s = np.array([4.0, 3.0, 2.0, 1.0])  # ranks 1..4 in row order
    D = [1.0 / math.log2(1 + r) for r in range(1, 6)]
    G = 2.0**lab - 1.0
    Z = 3.0 * D[0] + 1.0 * D[1]
    loss2 = swap_deltas(lambdaloss("ndcg_loss2").bind(lab, np.diff(np.array([0, 4]))).state[0], s)
    loss2pp = swap_deltas(lambdaloss(mu=3.0).bind(lab, np.diff(np.array([0, 4]))).state[0], s)
    # pair (row 1, row 3): ranks 2 and 4, |r_i - r_j| = 2
    delta = abs(D[1] - D[2])
    assert loss2[1, 3] == pytest.approx((G[1] - G[3]) * delta / Z, rel=1e-14)
    assert loss2pp[1, 3] == pytest.approx((G[1] - G[3]) * (abs(D[1] - D[3]) + 3.0 * delta) / Z, rel=1e-14)
    # pair (row 1, row 0): the preferred document is ranked below, ranks 2 and 1
    assert loss2[1, 0] == pytest.approx(G[1] * abs(D[0] - D[1]) / Z, rel=1e-14)
    assert loss2[0, 1] == 0.0


# --------------------------------------------------------------------------- truncation
def test_truncation_follows_lightgbm_positions_with_ties_in_row_order():
    # all scores equal (the first iteration): only pairs with a member among the first T rows
    lab = np.array([0.0, 0.0, 1.0, 2.0, 1.0])
    pairs = lambdarank(truncation=2).bind(lab, np.diff(np.array([0, 5]))).state[0]
    matrix = swap_deltas(pairs, np.zeros(5))
    present = {(x, y) for x in range(5) for y in range(5) if matrix[x, y] > 0}
    assert present == {(2, 0), (3, 0), (4, 0), (2, 1), (3, 1), (4, 1)}


def test_truncation_cost_is_linear_in_the_list():
    """A 20,000-document query (LightGBM stops at 10,000) with truncation 30: the pairs with a
    top-30 member only, in O(n T)."""
    rng = np.random.default_rng(3)
    n = 20_000
    lab = rng.integers(0, 5, size=n).astype(float)
    s = rng.normal(scale=3.0, size=n)
    top = ranking(s)[:30]
    lab[top] = 2.0
    grad, hess = lambdarank().grad_hess(lab, s, [n])
    assert np.isfinite(grad).all() and np.isfinite(hess).all()
    assert abs(grad.sum()) < 1e-9 * np.abs(grad).sum()
    below = np.ones(n, dtype=bool)
    below[top] = False
    # below the top, a document of the top documents' label is in no pair; any other is
    assert np.all(grad[below & (lab == 2.0)] == 0.0)
    assert np.all(grad[below & (lab != 2.0)] != 0.0)


# --------------------------------------------------------------------------- factors (IPW)
def test_per_row_factors_and_shares():
    rng = np.random.default_rng(5)
    lab = rng.integers(0, 3, size=12).astype(float)
    s = rng.normal(size=12)
    offsets = np.array([0, 5, 12])
    gains = 2.0**lab - 1.0
    settings = PairSettings("ndcg", truncation=4, natural_log=True)
    pairs = settings.prepare(gains, offsets, 1.0 / np.log2(np.arange(2, 14)), np.array([0.5, 0.25]))
    a = rng.uniform(0.5, 2.0, size=12)
    b = rng.uniform(0.5, 2.0, size=12)
    loss, as_high, as_low = pairs.loss(s, high=a, low=b, shares=True)
    # the direct sum a_i b_j w_ij phi_ij over the same pairs
    expected = []
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        matrix = swap_deltas(pairs, s, q)
        total = 0.0
        for x in range(hi - lo):
            for y in range(hi - lo):
                if matrix[x, y]:
                    total += a[lo + x] * b[lo + y] * matrix[x, y] * math.log1p(math.exp(-(s[lo + x] - s[lo + y])))
        expected.append(total)
    np.testing.assert_allclose(loss, expected, rtol=1e-12)
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        assert np.dot(a[lo:hi], as_high[lo:hi]) == pytest.approx(loss[q], rel=1e-12)
        assert np.dot(b[lo:hi], as_low[lo:hi]) == pytest.approx(loss[q], rel=1e-12)
    grad, _ = pairs.grad_hess(s, high=a, low=b)
    fd = fd_gradient(lambda x: pairs.loss(x, high=a, low=b, at=s).sum(), s)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-9)


# --------------------------------------------------------------------------- beyond LightGBM
def test_labels_above_31_with_linear_and_array_gains():
    lab = np.array([40.0, 3.0, 0.0, 100.0, 7.0])
    s = np.array([0.1, 0.5, -0.2, 0.0, 0.3])
    for obj in (lambdarank(gain="linear"), lambdaloss(gain="linear"), lambdarank("map")):
        grad, hess = obj.grad_hess(lab, s, [5])
        assert np.isfinite(grad).all() and grad[3] < 0 and grad[2] > 0
    # RR changes only if the first relevant document (row 1) swaps with the irrelevant one
    grad, _ = lambdarank("mrr").grad_hess(lab, s, [5])
    assert grad[1] < 0 < grad[2] and np.all(grad[[0, 3, 4]] == 0)
    with pytest.raises(ValueError, match="exceeds the largest supported label 31"):
        lambdarank().grad_hess(lab, s, [5])
    with pytest.raises(ValueError, match="gain array of length 3"):
        lambdarank(gain=[0.0, 1.0, 3.0]).grad_hess(np.array([0.0, 1.0, 3.0]), np.zeros(3), [3])


@pytest.mark.parametrize(
    "factory,kwargs,message",
    [
        (lambdarank, {"measure": "auc"}, "measure must be one of"),
        (lambdarank, {"k": 0}, "k must be an integer >= 1 or None, got 0"),
        (lambdarank, {"truncation": 0}, "truncation must be an integer >= 1 or None, got 0"),
        (lambdarank, {"sigma": -1.0}, "sigma must be a finite number > 0"),
        (lambdarank, {"max_label": 40}, "max_label must be an integer in 0 .. 31"),
        (lambdarank, {"relevance_threshold": np.nan}, "relevance_threshold must be a finite number"),
        (lambdarank, {"gain": "log"}, "gain must be"),
        (lambdarank, {"discount": "cosine"}, "discount must be"),
        (lambdaloss, {"weighting": "ndcg_loss3"}, "weighting must be one of"),
        (lambdaloss, {"mu": -1.0}, "mu must be a finite number >= 0"),
        (lambdaloss, {"hess_floor": -1.0}, "hess_floor"),
    ],
)
def test_bad_parameters_raise(factory, kwargs, message):
    with pytest.raises(ValueError, match=message):
        factory(**kwargs)


def test_err_labels_above_max_label_name_the_row():
    with pytest.raises(ValueError, match="row 2"):
        lambdarank("err", max_label=2).grad_hess(np.array([0.0, 1.0, 3.0]), np.zeros(3), [3])


# --------------------------------------------------------------------------- protocol
def test_top_level_factories_repr_and_pickle():
    for _ in range(2):
        assert gbrank.lambdarank is lambdarank and gbrank.lambdaloss is lambdaloss
    assert repr(lambdarank()) == (
        "lambdarank(measure='ndcg', k=None, gain='exp2', discount='log2', truncation=30, sigma=1.0, norm=True, "
        "hess_floor=0.0, hess_scale=1.0)"
    )
    assert repr(lambdaloss("ndcg_loss2++", mu=5)) == (
        "lambdaloss(weighting='ndcg_loss2pp', mu=5.0, gain='exp2', discount='log2', truncation=None, sigma=1.0, "
        "norm=False, hess_floor=1e-06, hess_scale=1.0)"
    )
    lab, s = random_query(3, n=12)
    for obj in (lambdarank("err", k=5), lambdaloss()):
        clone = pickle.loads(pickle.dumps(obj))
        assert isinstance(clone, (LambdaRank, LambdaLoss)) and repr(clone) == repr(obj)
        np.testing.assert_array_equal(clone.grad_hess(lab, s, [12])[0], obj.grad_hess(lab, s, [12])[0])


# --------------------------------------------------------------------------- LightGBM
lgb = pytest.importorskip("lightgbm")

LGB_PARAMS = lgb_params(num_leaves=31, min_data_in_leaf=20)


def leaf_values(booster, tree=0):
    out = []

    def walk(node):
        if "leaf_value" in node:
            out.append(node["leaf_value"])
        else:
            walk(node["left_child"])
            walk(node["right_child"])

    walk(booster.dump_model()["tree_info"][tree]["tree_structure"])
    return np.array(out)


def synthetic(seed, n_queries, n_levels=5):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 60, size=n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 8))
    latent = X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.3 * X[:, 2] + 0.5 * rng.normal(size=n)
    y = np.digitize(latent, np.quantile(latent, np.linspace(0.5, 0.97, n_levels - 1))).astype(float)
    return X, y, sizes


def test_first_tree_matches_lightgbm_lambdarank():
    X, y, sizes = synthetic(0, 150)
    params = {**LGB_PARAMS, "lambdarank_truncation_level": 10}
    builtin = lgb.train({**params, "objective": "lambdarank"}, lgb.Dataset(X, y, group=sizes), num_boost_round=2)
    ours = lgb.train({**params, "objective": lambdarank(truncation=10)}, lgb.Dataset(X, y, group=sizes), num_boost_round=2)
    expected, got = leaf_values(builtin, 0), leaf_values(ours, 0)
    assert expected.size == got.size > 4
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    # from the second tree on LightGBM reads its sigmoid from a table (error up to 1.2e-5) and
    # sums the pairs in float32: the same tree, leaves equal up to that arithmetic
    expected, got = leaf_values(builtin, 1), leaf_values(ours, 1)
    assert expected.size == got.size
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


@pytest.mark.slow
def test_hundred_rounds_match_lightgbm_lambdarank_on_mq2008():
    (X, y, sizes), (Xt, yt, st) = mq2008()
    builtin = lgb.train({**LGB_PARAMS, "objective": "lambdarank"}, lgb.Dataset(X, y, group=sizes), num_boost_round=100)
    ours = lgb.train({**LGB_PARAMS, "objective": lambdarank()}, lgb.Dataset(X, y, group=sizes), num_boost_round=100)
    np.testing.assert_allclose(leaf_values(ours), leaf_values(builtin), rtol=1e-4)
    expected = ndcg(yt, builtin.predict(Xt), st, k=10)
    got = ndcg(yt, ours.predict(Xt), st, k=10)
    assert abs(got - expected) <= 0.005
    assert expected > ndcg(yt, np.zeros(yt.size), st, k=10) + 0.05


@pytest.mark.parametrize(
    "make",
    [lambda: lambdarank("map"), lambda: lambdarank("err", k=10), lambda: lambdarank(gain="linear", discount="zipf"),
     lambda: lambdaloss(), lambda: lambdaloss("ndcg_loss1", truncation=10)],
    ids=["map", "err", "linear_zipf", "ndcg_loss2pp", "ndcg_loss1"],
)
def test_training_improves_heldout_ndcg(make):
    X, y, sizes = synthetic(1, 120)
    Xt, yt, st = synthetic(2, 60)
    booster = lgb.train({**LGB_PARAMS, "objective": make()}, lgb.Dataset(X, y, group=sizes), num_boost_round=15)
    assert ndcg(yt, booster.predict(Xt), st, k=10) > ndcg(yt, np.zeros(yt.size), st, k=10) + 0.1
