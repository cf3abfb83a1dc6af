"""The NDCG_Boost relaxation objective (Valizadegan et al. 2009, eq. 11, 14, 16).

Every identity is checked against a direct implementation of the paper's formulas written
here with plain loops, independent of the numba kernels.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import gbrank
from gbrank.objectives.ndcg_boost import NDCGBoostObjective, document_weights, ndcg_boost
from helpers import fd_gradient, ohsumed_fold


# --------------------------------------------------------------------------- the paper, directly
def ideal_dcg(labels) -> float:
    """Z_q: DCG of the labels sorted best first, gain 2^l - 1, discount 1/log2(1 + r)."""
    gains = sorted((2.0 ** l - 1.0 for l in labels), reverse=True)
    return sum(g / math.log2(1.0 + r) for r, g in enumerate(gains, start=1))


def logistic_rank(fi: float, fj: float) -> float:
    """1 / (1 + exp(F_i - F_j)), evaluated without overflow for the test's score range."""
    d = fi - fj
    if d > 0:
        e = math.exp(-d)
        return e / (1.0 + e)
    return 1.0 / (1.0 + math.exp(d))


def relaxation_direct(labels, F, sizes) -> np.ndarray:
    """Eq. (11) per query: M_q = 1/Z_q sum_i (2^{r_i} - 1) sum_{j != i} 1/(1 + exp(F_i - F_j))."""
    out = []
    start = 0
    for n in sizes:
        r = labels[start : start + n]
        f = F[start : start + n]
        z = ideal_dcg(r)
        total = 0.0
        if z > 0:
            for i in range(n):
                a_i = sum(logistic_rank(f[i], f[j]) for j in range(n) if j != i)
                total += (2.0 ** r[i] - 1.0) * a_i / z
        out.append(total)
        start += n
    return np.array(out)


def weights_direct(labels, F, sizes) -> np.ndarray:
    """Eq. (16): w_i = sum_j (2^{r_i} - 2^{r_j}) / Z_q theta_ij, theta from eq. (14)."""
    w = np.zeros(len(labels))
    start = 0
    for n in sizes:
        r = labels[start : start + n]
        f = F[start : start + n]
        z = ideal_dcg(r)
        if z > 0:
            for i in range(n):
                for j in range(n):
                    if j == i:
                        continue
                    ex = math.exp(f[i] - f[j])
                    gamma = ex / (1.0 + ex) ** 2
                    w[start + i] += (2.0 ** r[i] - 2.0 ** r[j]) / z * gamma
        start += n
    return w


def random_queries(rng, n_queries=12, max_docs=50, max_label=3, score_scale=1.5):
    """Random queries of 1..max_docs documents with tied labels and some tied scores."""
    sizes = rng.integers(1, max_docs + 1, size=n_queries)
    n = int(sizes.sum())
    labels = rng.integers(0, max_label + 1, size=n).astype(np.float64)
    scores = rng.normal(scale=score_scale, size=n)
    tied = rng.random(n) < 0.2
    scores[tied] = np.round(scores[tied])
    return labels, scores, sizes


# --------------------------------------------------------------------------- value and gradient
@pytest.mark.parametrize("seed", range(4))
def test_loss_is_eq11_summed_over_queries(seed):
    labels, s, sizes = random_queries(np.random.default_rng(seed))
    obj = ndcg_boost()
    np.testing.assert_allclose(obj.loss(labels, s, sizes), relaxation_direct(labels, 2 * s, sizes).sum(), rtol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_gradient_matches_finite_differences_of_eq11(seed):
    labels, s, sizes = random_queries(np.random.default_rng(100 + seed))
    grad, _ = ndcg_boost().grad_hess(labels, s, sizes)
    fd = fd_gradient(lambda x: relaxation_direct(labels, 2 * x, sizes).sum(), s)
    np.testing.assert_allclose(grad, fd, rtol=0, atol=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_weights_are_eq16_and_minus_half_the_score_gradient(seed):
    labels, s, sizes = random_queries(np.random.default_rng(200 + seed), n_queries=8, max_docs=30)
    F = 2 * s
    w, m = document_weights(labels, F, sizes)
    np.testing.assert_allclose(w, weights_direct(labels, F, sizes), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(m, relaxation_direct(labels, F, sizes), rtol=1e-12)
    # w = -dM/dF (finite differences in F) ...
    fd_F = fd_gradient(lambda x: relaxation_direct(labels, x, sizes).sum(), F)
    np.testing.assert_allclose(w, -fd_F, atol=1e-6)
    # ... = -1/2 dM/ds with F = 2s, and the objective's gradient is -2 w.
    grad, _ = ndcg_boost().grad_hess(labels, s, sizes)
    np.testing.assert_allclose(w, -0.5 * grad, rtol=1e-12, atol=1e-15)


def test_gradient_sums_to_zero_per_query_and_shift_invariance():
    labels, s, sizes = random_queries(np.random.default_rng(7), n_queries=20)
    obj = ndcg_boost()
    grad, _ = obj.grad_hess(labels, s, sizes)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    sums = np.add.reduceat(grad, offsets[:-1])
    np.testing.assert_allclose(sums, 0.0, atol=1e-12)
    shift = np.repeat(np.random.default_rng(8).normal(scale=5, size=sizes.size), sizes)
    np.testing.assert_allclose(obj.loss(labels, s + shift, sizes), obj.loss(labels, s, sizes), rtol=1e-12)
    np.testing.assert_allclose(obj.grad_hess(labels, s + shift, sizes)[0], grad, atol=1e-12)


def test_permuting_rows_within_a_query_permutes_outputs():
    rng = np.random.default_rng(9)
    labels, s, sizes = random_queries(rng, n_queries=1, max_docs=40)
    perm = rng.permutation(labels.size)
    obj = ndcg_boost()
    g, h = obj.grad_hess(labels, s, sizes)
    gp, hp = obj.grad_hess(labels[perm], s[perm], sizes)
    np.testing.assert_allclose(gp, g[perm], atol=1e-14)
    np.testing.assert_allclose(hp, h[perm], atol=1e-14)


# --------------------------------------------------------------------------- surrogate hessian
@pytest.mark.parametrize("seed", range(3))
def test_surrogate_hessian_is_positive_and_bounds_the_exact_curvature(seed):
    labels, s, sizes = random_queries(np.random.default_rng(300 + seed), n_queries=10, max_docs=30)
    obj = ndcg_boost(hess_floor=0.0)
    grad, hess = obj.grad_hess(labels, s, sizes)
    # exact diagonal second derivative: central differences of the (verified) gradient
    exact = np.empty_like(s)
    h = 1e-5
    for i in range(s.size):
        sp, sm = s.copy(), s.copy()
        sp[i] += h
        sm[i] -= h
        exact[i] = (obj.grad_hess(labels, sp, sizes)[0][i] - obj.grad_hess(labels, sm, sizes)[0][i]) / (2 * h)
    assert (exact < -1e-6).any() and (exact > 1e-6).any(), "the exact curvature should take both signs here"
    assert np.all(np.abs(exact) <= hess + 1e-6)
    assert np.all(2 * np.abs(grad) <= hess + 1e-12)
    # upper bound: gamma <= 1/4, so h_i <= 1/Z_q sum_j |g_i - g_j|
    start = 0
    for n in sizes:
        r = labels[start : start + n]
        z = ideal_dcg(r)
        g = 2.0**r - 1.0
        bound = np.abs(g[:, None] - g[None, :]).sum(axis=1) / z if z > 0 else np.zeros(n)
        assert np.all(hess[start : start + n] <= bound + 1e-12)
        # positive wherever the document has a pair with a different label
        has_pair = bound > 0
        assert np.all(hess[start : start + n][has_pair] > 0)
        start += n


def test_hessian_floor_and_scale_apply():
    labels, s, sizes = random_queries(np.random.default_rng(11))
    _, raw = ndcg_boost(hess_floor=0.0).grad_hess(labels, s, sizes)
    _, scaled = ndcg_boost(hess_floor=0.5, hess_scale=3.0).grad_hess(labels, s, sizes)
    np.testing.assert_allclose(scaled, np.maximum(3.0 * raw, 0.5))


# --------------------------------------------------------------------------- edge cases
def test_query_without_relevant_document_and_single_document_query_have_zero_gradient():
    labels = np.array([0, 0, 0, 2, 1, 0, 1], dtype=float)
    sizes = np.array([3, 3, 1])
    s = np.array([0.3, -1.0, 2.0, 0.1, 0.5, -0.2, 4.0])
    obj = ndcg_boost()
    grad, hess = obj.grad_hess(labels, s, sizes)
    assert np.all(grad[:3] == 0) and grad[6] == 0
    assert np.all(hess[:3] == obj.hess_floor) and hess[6] == obj.hess_floor
    assert np.any(grad[3:6] != 0)
    np.testing.assert_allclose(obj.loss(labels, s, sizes), relaxation_direct(labels, 2 * s, sizes).sum())


@pytest.mark.parametrize("scale", [1e4, -1e4])
def test_extreme_scores_stay_finite(scale):
    rng = np.random.default_rng(12)
    labels, _, sizes = random_queries(rng, n_queries=5, max_docs=30)
    s = scale * rng.choice([-1.0, 0.0, 1.0], size=labels.size) + rng.normal(size=labels.size)
    obj = ndcg_boost()
    grad, hess = obj.grad_hess(labels, s, sizes)
    assert np.isfinite(grad).all() and np.isfinite(hess).all() and (hess > 0).all()
    loss = obj.loss(labels, s, sizes)
    assert np.isfinite(loss)
    np.testing.assert_allclose(loss, relaxation_direct(labels, 2 * s, sizes).sum(), rtol=1e-12)


def test_ten_thousand_document_query_is_finite_and_correct():
    rng = np.random.default_rng(13)
    n = 10_000
    labels = rng.integers(0, 5, size=n).astype(float)
    s = rng.normal(scale=3.0, size=n)
    s[:100] = 1e4
    obj = ndcg_boost()
    grad, hess = obj.grad_hess(labels, s, [n])
    assert np.isfinite(grad).all() and np.isfinite(hess).all()
    assert abs(grad.sum()) < 1e-9
    # spot-check three rows against eq. (16) on the full query
    z = ideal_dcg(labels)
    for i in (0, 500, 9999):
        d = 2 * s[i] - 2 * s
        e = np.exp(-np.abs(d))
        gamma = e / (1 + e) ** 2
        gamma[i] = 0.0
        w_i = np.sum((2.0 ** labels[i] - 2.0**labels) / z * gamma)
        np.testing.assert_allclose(grad[i], -2 * w_i, rtol=1e-9, atol=1e-15)


def test_bad_input_gives_clear_errors():
    obj = ndcg_boost()
    y = np.array([0.0, 1.0, 2.0])
    s = np.array([0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="finite"):
        obj.grad_hess(y, np.array([0.1, np.nan, 0.3]), [3])
    with pytest.raises(ValueError, match="finite"):
        obj.grad_hess(y, np.array([0.1, np.inf, 0.3]), [3])
    with pytest.raises(ValueError, match="exceeds the largest supported label 31"):
        obj.grad_hess(np.array([0.0, 32.0, 1.0]), s, [3])
    with pytest.raises(ValueError, match="integers"):
        obj.grad_hess(np.array([0.0, 1.5, 1.0]), s, [3])
    with pytest.raises(ValueError, match="non-negative"):
        obj.grad_hess(np.array([0.0, -1.0, 1.0]), s, [3])
    with pytest.raises(ValueError, match="sum to 2 but there are 3 rows"):
        obj.grad_hess(y, s, [2])
    with pytest.raises(ValueError, match="gain must be"):
        ndcg_boost(gain="cubic")


def test_float32_scores_and_linear_gain():
    labels, s, sizes = random_queries(np.random.default_rng(14))
    g64, _ = ndcg_boost().grad_hess(labels, s.astype(np.float32).astype(np.float64), sizes)
    g32, _ = ndcg_boost().grad_hess(labels, s.astype(np.float32), sizes)
    np.testing.assert_array_equal(g32, g64)
    # linear gain takes fractional labels: same formulas with g = l
    frac = labels * 0.5
    obj = ndcg_boost(gain="linear")
    w, _ = document_weights(frac, 2 * s, sizes, gain="linear")
    np.testing.assert_allclose(obj.grad_hess(frac, s, sizes)[0], -2 * w)


def test_package_exports_the_factory():
    import gbrank.objectives.ndcg_boost  # noqa: F401  (the submodule is loaded, as by any user)

    assert gbrank.ndcg_boost is ndcg_boost
    assert gbrank.objectives.ndcg_boost is ndcg_boost


def test_protocol_repr_and_pickle():
    obj = ndcg_boost()
    assert isinstance(obj, NDCGBoostObjective)
    assert repr(obj) == "ndcg_boost(gain='exp2', hess_floor=1e-06, hess_scale=1.0)"
    labels, s, sizes = random_queries(np.random.default_rng(15))
    g, h = obj.grad_hess(labels, s, sizes)
    clone = pickle.loads(pickle.dumps(obj))
    g2, h2 = clone.grad_hess(labels, s, sizes)
    np.testing.assert_array_equal(g, g2)
    np.testing.assert_array_equal(h, h2)


# --------------------------------------------------------------------------- engines, real data
# The initial (all-zero) model's NDCG is that of a random order (ties="average"): LETOR
# files list a query's documents in an informative order, which "input" would credit to it.
@pytest.mark.slow
def test_trains_in_lightgbm_and_improves_heldout_ndcg():
    lgb = pytest.importorskip("lightgbm")
    from gbrank.metrics import ndcg

    train, _, test = ohsumed_fold()
    dtrain = lgb.Dataset(train.X, train.y, group=train.group)
    params = {
        "objective": ndcg_boost(),
        "metric": "None",
        "num_leaves": 7,
        "learning_rate": 0.1,
        "min_data_in_leaf": 20,
        "verbose": -1,
        "num_threads": 2,
        "seed": 0,
    }
    booster = lgb.train(params, dtrain, num_boost_round=40)
    initial = ndcg(test.y, np.zeros(test.y.size), test.group, k=10, ties="average")
    after = ndcg(test.y, booster.predict(test.X), test.group, k=10, ties="average")
    assert after > initial + 0.1
    # the relaxation itself went down on the training data
    obj = ndcg_boost()
    assert obj.loss(train.y, booster.predict(train.X), train.group) < obj.loss(train.y, np.zeros(train.y.size), train.group)


@pytest.mark.slow
def test_trains_in_xgboost_and_improves_heldout_ndcg():
    xgb = pytest.importorskip("xgboost")
    from gbrank.metrics import ndcg

    train, _, test = ohsumed_fold()
    dtrain = xgb.DMatrix(train.X, train.y, group=train.group)
    params = {"max_depth": 3, "eta": 0.1, "min_child_weight": 0.0, "nthread": 2, "seed": 0, "base_score": 0.0}
    booster = xgb.train(params, dtrain, num_boost_round=40, obj=ndcg_boost())
    initial = ndcg(test.y, np.zeros(test.y.size), test.group, k=10, ties="average")
    after = ndcg(test.y, booster.predict(xgb.DMatrix(test.X), output_margin=True), test.group, k=10, ties="average")
    assert after > initial + 0.1


def test_lgbmranker_four_argument_call():
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(16)
    sizes = np.full(30, 20)
    X = rng.normal(size=(600, 5))
    y = np.clip(np.round(X[:, 0] + rng.normal(scale=0.5, size=600)), 0, 3)
    model = lgb.LGBMRanker(objective=ndcg_boost(), n_estimators=20, num_leaves=4, min_child_samples=5, verbose=-1)
    model.fit(X, y, group=sizes)
    obj = ndcg_boost()
    assert obj.loss(y, model.predict(X), sizes) < obj.loss(y, np.zeros(600), sizes)
