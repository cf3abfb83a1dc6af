"""The native NDCG_Boost learner (Valizadegan et al. 2009, Algorithm 1, eq. 15-17, appendix B)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from sklearn.base import clone

from gbrank.ndcg_boost_learner import NDCGBoost, best_stump, step_size
from gbrank.objectives.ndcg_boost import ndcg_boost, prepare_queries, step_sums
from helpers import ohsumed_fold


# --------------------------------------------------------------------------- the paper, directly
def ideal_dcg(labels) -> float:
    gains = sorted((2.0**l - 1.0 for l in labels), reverse=True)
    return sum(g / math.log2(1.0 + r) for r, g in enumerate(gains, start=1))


def gamma(fi, fj) -> float:
    """Eq. (14): exp(F_i - F_j) / (1 + exp(F_i - F_j))^2."""
    d = -abs(fi - fj)
    return math.exp(d) / (1.0 + math.exp(d)) ** 2


def ordered_pairs(labels, sizes):
    """(row of i, row of j, labels of their query, its ideal DCG) for every ordered pair
    i != j of every query with a relevant document."""
    start = 0
    for n in sizes:
        r = labels[start : start + n]
        z = ideal_dcg(r)
        if z > 0:
            for i in range(n):
                for j in range(n):
                    if i != j:
                        yield start + i, start + j, r[i], r[j], z
        start += n


def relaxation_mean(labels, F, sizes) -> float:
    """Eq. (11) with the paper's 1/n: mean over queries of M_q."""
    total = sum((2.0**ri - 1.0) / z / (1.0 + math.exp(F[i] - F[j])) for i, j, ri, _, z in ordered_pairs(labels, sizes))
    return total / len(sizes)


def appendix_b_bound(labels, F, f, sizes, alpha) -> float:
    """U(alpha) = M(F) + 1/n sum_k sum_{i,j} (2^{r_i}-1)/Z_k theta_ij (exp(alpha (f_j - f_i)) - 1)."""
    total = sum((2.0**ri - 1.0) / z * gamma(F[i], F[j]) * (math.exp(alpha * (f[j] - f[i])) - 1.0)
                for i, j, ri, _, z in ordered_pairs(labels, sizes))
    return relaxation_mean(labels, F, sizes) + total / len(sizes)


def eq16_weights(labels, F, sizes) -> np.ndarray:
    w = np.zeros(len(labels))
    for i, j, ri, rj, z in ordered_pairs(labels, sizes):
        w[i] += (2.0**ri - 2.0**rj) / z * gamma(F[i], F[j])
    return w


def brute_force_stump(X, weight):
    """Every feature, every midpoint between distinct values, both polarities."""
    best = -np.inf
    for d in range(X.shape[1]):
        values = np.unique(X[:, d])
        for lo, hi in zip(values[:-1], values[1:]):
            t = (lo + hi) / 2
            best = max(best, weight[X[:, d] > t].sum(), weight[X[:, d] <= t].sum())
    return best


def synthetic(seed=0, n_queries=30, n_features=6, max_docs=40):
    """Small graded-relevance data: labels from a noisy score of the first two features."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, max_docs + 1, size=n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, n_features))
    X[:, -1] = np.round(X[:, -1])  # a feature with many ties
    latent = X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.7, size=n)
    y = np.digitize(latent, [0.5, 1.5]).astype(np.float64)
    return X, y, sizes


# --------------------------------------------------------------------------- step size (eq. 15)
@pytest.mark.parametrize("seed", range(4))
def test_alpha_of_eq15_minimises_the_appendix_b_bound(seed):
    from scipy.optimize import minimize_scalar

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 15, size=6)
    n = int(sizes.sum())
    labels = rng.integers(0, 3, size=n).astype(np.float64)
    F = rng.normal(scale=1.0, size=n)
    f = (rng.random(n) < 0.4).astype(np.float64)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    state = prepare_queries(2.0**labels - 1.0, offsets)
    sums = np.empty((sizes.size, 2))
    step_sums(F, f, state.offsets, state.order, state.sorted_gain, state.inv_z, sums)
    alpha = step_size(*sums.sum(axis=0), max_alpha=50.0)

    search = minimize_scalar(lambda a: appendix_b_bound(labels, F, f, sizes, a), bounds=(-10, 10), method="bounded", options={"xatol": 1e-10})
    assert abs(alpha - search.x) < 1e-5
    bound_at_alpha = appendix_b_bound(labels, F, f, sizes, alpha)
    assert bound_at_alpha <= search.fun + 1e-12
    # the bound holds (Proposition 2) and is tight at 0, so the step cannot increase M
    m0 = relaxation_mean(labels, F, sizes)
    assert abs(appendix_b_bound(labels, F, f, sizes, 0.0) - m0) < 1e-12
    for a in (-1.0, -0.1, alpha, 0.3, 2.0):
        assert relaxation_mean(labels, F + a * f, sizes) <= appendix_b_bound(labels, F, f, sizes, a) + 1e-12
    assert relaxation_mean(labels, F + alpha * f, sizes) <= m0 + 1e-12


def test_eq15_sums_equal_their_definition():
    rng = np.random.default_rng(5)
    sizes = np.array([7, 1, 12, 5])
    n = int(sizes.sum())
    labels = rng.integers(0, 4, size=n).astype(np.float64)
    labels[7:8] = 0
    F = rng.normal(size=n)
    f = (rng.random(n) < 0.5).astype(np.float64)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    state = prepare_queries(2.0**labels - 1.0, offsets)
    sums = np.empty((sizes.size, 2))
    step_sums(F, f, state.offsets, state.order, state.sorted_gain, state.inv_z, sums)
    for q, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        z = ideal_dcg(labels[a:b])
        lower = upper = 0.0
        for i in range(a, b):
            for j in range(a, b):
                if i != j and z > 0:
                    c = (2.0 ** labels[i] - 1.0) / z * gamma(F[i], F[j])
                    lower += c * (f[j] < f[i])
                    upper += c * (f[j] > f[i])
        np.testing.assert_allclose(sums[q], [lower, upper], rtol=1e-12, atol=1e-15)
    # lower - upper = sum_i w_i f_i: the weak learner's objective decides the sign of alpha
    np.testing.assert_allclose(sums[:, 0].sum() - sums[:, 1].sum(), eq16_weights(labels, F, sizes) @ f, rtol=1e-10)


def test_step_size_guards():
    assert step_size(0.0, 0.0, 10.0) == 0.0
    assert step_size(1.0, 0.0, 10.0) == 10.0
    assert step_size(0.0, 1.0, 10.0) == -10.0
    assert step_size(np.e**2, 1.0, 10.0) == pytest.approx(1.0)
    assert step_size(1e300, 1e-300, 3.0) == 3.0


# --------------------------------------------------------------------------- weak learner (eq. 17)
@pytest.mark.parametrize("seed", range(5))
def test_stump_is_the_exact_maximiser(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    X = rng.integers(0, 6, size=(n, 4)).astype(np.float64)  # many ties
    X[:, 3] = rng.normal(size=n)
    weight = rng.normal(size=n)
    feature, threshold, polarity, eta = best_stump(X, weight)
    expected = brute_force_stump(X, weight)
    assert eta == pytest.approx(expected, abs=1e-12)
    chosen = X[:, feature] > threshold if polarity > 0 else X[:, feature] <= threshold
    assert weight[chosen].sum() == pytest.approx(expected, abs=1e-12)
    assert 0 < chosen.sum() < n, "a stump must split the documents"


def test_stump_threshold_between_adjacent_floats_and_constant_features():
    lo = 1.0
    hi = np.nextafter(lo, 2.0)
    X = np.array([[lo, 5.0], [hi, 5.0], [lo, 5.0]])
    feature, threshold, polarity, eta = best_stump(X, np.array([-1.0, 2.0, -1.0]))
    assert (feature, polarity, eta) == (0, 1, 2.0)
    assert lo <= threshold < hi
    assert best_stump(np.full((4, 2), 3.0), np.array([1.0, -1.0, 2.0, 0.0]))[0] == -1


def test_first_iteration_uses_eq16_weights_and_the_best_stump():
    X, y, sizes = synthetic(seed=1, n_queries=8, max_docs=15)
    model = NDCGBoost(n_estimators=1).fit(X, y, group=sizes, eval_at=())
    w = eq16_weights(y, np.zeros(y.size), sizes)
    expected = brute_force_stump(X, w)
    assert model.history_["eta"][0] == pytest.approx(expected, rel=1e-10)
    d, t = model.stump_features_[0], model.stump_thresholds_[0]
    chosen = X[:, d] > t if model.stump_polarities_[0] > 0 else X[:, d] <= t
    assert w[chosen].sum() == pytest.approx(expected, rel=1e-10)


# --------------------------------------------------------------------------- training
def test_M_never_increases_on_synthetic_data_and_matches_eq11():
    X, y, sizes = synthetic(seed=2)
    model = NDCGBoost(n_estimators=60).fit(X, y, group=sizes, eval_at=(5,))
    M = np.array(model.history_["M"])
    assert len(M) == model.n_estimators_ == 60
    assert M[0] < model.initial_M_
    assert np.all(np.diff(M) <= 1e-12 * M[:-1])
    assert M[-1] < 0.8 * model.initial_M_
    F = model.predict(X)
    assert M[-1] == pytest.approx(relaxation_mean(y, F, sizes), rel=1e-10)
    # the objective's scores are s = F / 2
    assert M[-1] == pytest.approx(ndcg_boost().loss(y, F / 2, sizes) / sizes.size, rel=1e-12)
    assert model.initial_M_ == pytest.approx(relaxation_mean(y, np.zeros(y.size), sizes), rel=1e-12)
    assert np.all(np.array(model.history_["alpha"]) > 0)
    assert np.all(np.array(model.history_["eta"]) > 0)


def test_sampling_option_also_decreases_M_and_is_reproducible():
    X, y, sizes = synthetic(seed=3)
    a = NDCGBoost(n_estimators=40, sample=True, random_state=7).fit(X, y, group=sizes, eval_at=())
    b = NDCGBoost(n_estimators=40, sample=True, random_state=7).fit(X, y, group=sizes, eval_at=())
    exact = NDCGBoost(n_estimators=40).fit(X, y, group=sizes, eval_at=())
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert not np.array_equal(a.predict(X), exact.predict(X))
    M = np.array(a.history_["M"])
    assert M[0] < a.initial_M_ and np.all(np.diff(M) <= 1e-12 * M[:-1])


def test_history_ndcg_matches_the_metric_and_staged_predict():
    from gbrank.metrics import ndcg

    X, y, sizes = synthetic(seed=4)
    Xv, yv, sv = synthetic(seed=5, n_queries=10)
    model = NDCGBoost(n_estimators=15).fit(X, y, group=sizes, eval_set=[(Xv, yv, sv)], eval_at=(3, 10))
    stages = list(model.staged_predict(Xv))
    assert len(stages) == 15
    np.testing.assert_array_equal(stages[-1], model.predict(Xv))
    for t in (0, 7, 14):
        assert model.history_["valid_0_ndcg@3"][t] == pytest.approx(ndcg(yv, stages[t], sv, k=3))
        assert model.history_["valid_0_ndcg@10"][t] == pytest.approx(ndcg(yv, stages[t], sv, k=10))
    assert model.history_["train_ndcg@10"][-1] == pytest.approx(ndcg(y, model.predict(X), sizes, k=10))
    assert model.history_["train_ndcg@10"][-1] > ndcg(y, np.zeros(y.size), sizes, k=10)


def test_early_stopping_keeps_the_best_iteration():
    X, y, sizes = synthetic(seed=6)
    Xv, yv, sv = synthetic(seed=7, n_queries=8)
    model = NDCGBoost(n_estimators=200).fit(X, y, group=sizes, eval_set=[(Xv, yv, sv)], eval_at=(5,), early_stopping_rounds=5)
    scores = model.history_["valid_0_ndcg@5"]
    assert len(scores) < 200
    assert model.best_iteration_ == int(np.argmax(scores)) + 1
    assert model.n_estimators_ == model.best_iteration_
    assert len(scores) - model.best_iteration_ == 5
    with pytest.raises(ValueError, match="eval_set"):
        NDCGBoost(5).fit(X, y, group=sizes, early_stopping_rounds=3)


def test_perfect_split_hits_the_alpha_guard():
    X = np.array([[1.0], [0.0], [1.0], [0.0]])
    y = np.array([1.0, 0.0, 2.0, 0.0])
    model = NDCGBoost(n_estimators=3, max_alpha=4.0).fit(X, y, group=[2, 2], eval_at=())
    assert model.alphas_[0] == 4.0
    assert model.history_["M"][0] < model.initial_M_


def test_qid_equals_group_and_degenerate_queries():
    X, y, sizes = synthetic(seed=8, n_queries=12)
    y[: sizes[0]] = 0  # a query without relevant document
    X = np.vstack([X, np.ones((1, X.shape[1]))])
    y = np.append(y, 2.0)  # a single-document query
    sizes = np.append(sizes, 1)
    qid = np.repeat(np.arange(sizes.size) * 3 + 1, sizes)
    a = NDCGBoost(n_estimators=10).fit(X, y, group=sizes)
    b = NDCGBoost(n_estimators=10).fit(X, y, qid=qid)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert np.isfinite(a.history_["M"]).all()


def test_constant_features_fit_no_stump():
    model = NDCGBoost(n_estimators=5).fit(np.ones((6, 2)), [0, 1, 2, 0, 1, 0], group=[3, 3], eval_at=())
    assert model.n_estimators_ == 0
    np.testing.assert_array_equal(model.predict(np.ones((2, 2))), 0.0)


# --------------------------------------------------------------------------- API
def test_save_load_round_trip(tmp_path):
    X, y, sizes = synthetic(seed=9)
    model = NDCGBoost(n_estimators=25, max_alpha=5.0).fit(X, y, group=sizes, eval_at=())
    path = tmp_path / "model.json"
    model.save_model(path)
    doc = json.loads(path.read_text())
    assert doc["format"] == "gbrank.NDCGBoost" and doc["version"] == 1 and len(doc["stumps"]) == 25
    loaded = NDCGBoost.load_model(path)
    Xt = np.random.default_rng(0).normal(size=(300, X.shape[1]))
    np.testing.assert_array_equal(loaded.predict(Xt), model.predict(Xt))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.get_params() == model.get_params()
    doc["version"] = 99
    with pytest.raises(ValueError, match="version 99"):
        NDCGBoost.from_dict(doc)
    with pytest.raises(ValueError, match="not a gbrank.NDCGBoost"):
        NDCGBoost.from_dict({"format": "other"})


def test_a_dataframes_columns_are_kept_and_checked(tmp_path):
    # as Ranker: reordered columns would be read by position, a silently wrong score
    pd = pytest.importorskip("pandas")
    X, y, sizes = synthetic(seed=10)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    model = NDCGBoost(n_estimators=10).fit(frame, y, group=sizes, eval_at=())
    assert list(model.feature_names_in_) == list(frame.columns)
    with pytest.raises(ValueError, match="feature names should match"):
        model.predict(frame[frame.columns[::-1]])
    model.save_model(tmp_path / "model.json")
    loaded = NDCGBoost.load_model(tmp_path / "model.json")
    assert list(loaded.feature_names_in_) == list(frame.columns)
    np.testing.assert_array_equal(loaded.predict(frame), model.predict(frame))
    assert not hasattr(NDCGBoost(n_estimators=2).fit(X, y, group=sizes, eval_at=()), "feature_names_in_")


def test_get_set_params_and_clone():
    model = NDCGBoost(n_estimators=7, sample=True, random_state=3)
    assert model.get_params() == {"n_estimators": 7, "sample": True, "max_alpha": 10.0, "gain": "exp2", "random_state": 3}
    model.set_params(n_estimators=9)
    assert clone(model).n_estimators == 9
    assert repr(NDCGBoost(n_estimators=3)) == "NDCGBoost(n_estimators=3)"


def test_bad_input_gives_clear_errors():
    X, y, sizes = synthetic(seed=10, n_queries=5)
    with pytest.raises(ValueError, match="NaN"):
        Xn = X.copy()
        Xn[3, 1] = np.nan
        NDCGBoost(3).fit(Xn, y, group=sizes)
    with pytest.raises(ValueError, match="largest supported label 31"):
        NDCGBoost(3).fit(X, np.where(np.arange(y.size) == 2, 40.0, y), group=sizes)
    with pytest.raises(ValueError, match="integers"):
        NDCGBoost(3).fit(X, y + 0.5, group=sizes)
    with pytest.raises(ValueError, match="group sizes sum to"):
        NDCGBoost(3).fit(X, y, group=sizes[:-1])
    with pytest.raises(ValueError, match="exactly one of"):
        NDCGBoost(3).fit(X, y)
    with pytest.raises(ValueError, match="n_estimators"):
        NDCGBoost(0).fit(X, y, group=sizes)
    with pytest.raises(ValueError, match="max_alpha"):
        NDCGBoost(3, max_alpha=-1.0).fit(X, y, group=sizes)
    with pytest.raises(ValueError, match="eval_at"):
        NDCGBoost(3).fit(X, y, group=sizes, eval_at=(0,))
    model = NDCGBoost(3).fit(X, y, group=sizes, eval_at=())
    with pytest.raises(ValueError, match="expecting 6 features"):
        model.predict(X[:, :4])
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        NDCGBoost().predict(X)


# --------------------------------------------------------------------------- real data
@pytest.mark.slow
def test_M_never_increases_on_ohsumed_and_test_ndcg_improves():
    from gbrank.metrics import ndcg

    train, _, test = ohsumed_fold()
    model = NDCGBoost(n_estimators=100).fit(train.X, train.y, group=train.group, eval_set=[(test.X, test.y, test.group)], eval_at=(10,))
    M = np.array(model.history_["M"])
    assert len(M) == 100
    assert M[0] < model.initial_M_
    assert np.all(np.diff(M) <= 1e-12 * M[:-1])
    # the initial model scores every document 0: its NDCG is that of a random order
    # (ties="average"); LETOR files list documents in an informative order, so "input"
    # would credit the zero model with the file's order.
    for data, name in ((train, "train"), (test, "valid_0")):
        initial = ndcg(data.y, np.zeros(data.y.size), data.group, k=10, ties="average")
        final = ndcg(data.y, model.predict(data.X), data.group, k=10, ties="average")
        assert final > initial + 0.1
        assert model.history_[f"{name}_ndcg@10"][-1] == pytest.approx(ndcg(data.y, model.predict(data.X), data.group, k=10))
