"""The catalogue of bad and extreme inputs (docs/reliability.md), one test or case per row.

Every row asserts one behaviour: an error whose message names the problem and where it is
(row and query), or a documented result.
"""

from __future__ import annotations

import gzip
import warnings

import numpy as np
import pytest

import gbrank
from gbrank import metrics
from gbrank.datasets import RankingData, kfold_queries, load_letor, make_ranking, split_queries
from gbrank.groups import check_group, qid_to_sizes

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

# --------------------------------------------------------------------------- objectives
OBJECTIVES = {
    "listmle": lambda: gbrank.listmle(),
    "listmle_topk": lambda: gbrank.listmle_topk(k=3),
    "wlistmle": lambda: gbrank.wlistmle(),
    "plackett_luce": lambda: gbrank.plackett_luce([1.0, 0.5, 0.25]),
    "ranknet": lambda: gbrank.ranknet(),
    "ranknet_truncated": lambda: gbrank.ranknet(truncation=3),
    "wranknet": lambda: gbrank.wranknet(),
    "listnet": lambda: gbrank.listnet(),
    "listnet_k2": lambda: gbrank.listnet(k=2),
    "listnet_k3": lambda: gbrank.listnet(k=3),
    "listnet_k3_sampled": lambda: gbrank.listnet(k=3, exact_limit=0),
    "cosine": lambda: gbrank.cosine(),
    "ndcg_boost": lambda: gbrank.ndcg_boost(),
    "lambdarank": lambda: gbrank.lambdarank(truncation=3),
    "lambdarank_map": lambda: gbrank.lambdarank("map"),
    "lambdaloss": lambda: gbrank.lambdaloss(),
}
# Objectives whose labels go through 2**l - 1 (a gain or a target): integers 0..31 only.
EXP2 = {"wlistmle", "wranknet", "listnet", "listnet_k2", "listnet_k3", "listnet_k3_sampled", "cosine", "ndcg_boost",
        "lambdarank", "lambdaloss"}
# The others use the labels' order only.
ORDER_ONLY = sorted(set(OBJECTIVES) - EXP2)
NAMES = list(OBJECTIVES)

ENGINES = ["lgb.train", "LGBMRanker", "xgb.train"]
LGB_PARAMS = {"metric": "None", "verbose": -1, "num_threads": 1, "num_leaves": 4, "min_data_in_leaf": 2,
              "deterministic": True, "seed": 1}
XGB_PARAMS = {"max_depth": 2, "min_child_weight": 0.0, "eta": 0.3, "nthread": 1, "seed": 1}

# Nine rows in two queries (4 + 5); row 6 is the third row of query 1.
Y = np.array([2, 1, 0, 1, 0, 3, 0, 2, 1], dtype=float)
S = np.linspace(-1.0, 1.0, 9)
G = [4, 5]


def at_row6(values, bad):
    out = np.array(values, dtype=float)
    out[6] = bad
    return out


def small_data(seed=0, n_queries=6, n_features=4):
    """Queries of 4..9 documents with tied graded labels 0..3."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 10, size=n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, n_features))
    y = np.clip(np.round(X[:, 0] + 0.5 * rng.normal(size=n) + 1.0), 0, 3)
    return X, y, sizes


def train(engine, objective, X, y, group, *, weight=None, init_score=None, rounds=2):
    """Train on one engine path; return (model bytes, raw predictions on X)."""
    if engine == "lgb.train":
        dtrain = lgb.Dataset(X, y, group=group, weight=weight, init_score=init_score)
        booster = lgb.train({**LGB_PARAMS, "objective": objective}, dtrain, num_boost_round=rounds)
        return booster.model_to_string(), booster.predict(X, raw_score=True)
    if engine == "LGBMRanker":
        ranker = lgb.LGBMRanker(objective=objective, n_estimators=rounds, num_leaves=4, min_child_samples=2,
                                n_jobs=1, verbose=-1, metric="None", deterministic=True, random_state=1)
        ranker.fit(X, y, group=group, sample_weight=weight, init_score=init_score)
        return ranker.booster_.model_to_string(), ranker.predict(X, raw_score=True)
    qweight = None
    if weight is not None:
        qweight = np.asarray(weight, dtype=float)[np.concatenate(([0], np.cumsum(group)[:-1]))]
    dtrain = xgb.DMatrix(X, y, group=group, weight=qweight, base_margin=init_score)
    booster = xgb.train(XGB_PARAMS, dtrain, num_boost_round=rounds, obj=objective)
    return bytes(booster.save_raw()), booster.predict(xgb.DMatrix(X), output_margin=True)


class Spy:
    """Passes calls through and keeps what the engine handed over and what it got back:
    ``(scores, labels, weights, grad, hess)`` per call.

    ``__deepcopy__`` returns self because lgb.train deep-copies its parameters.
    """

    def __init__(self, inner):
        self.inner = inner
        self.seen = []

    def __deepcopy__(self, memo):
        return self

    def __call__(self, preds, data):
        grad, hess = self.inner(preds, data)
        self.seen.append((np.array(preds, dtype=float), data.get_label().copy(), data.get_weight(), grad, hess))
        return grad, hess


def check_finite(objective, y, s, group, sums=True):
    """Finite gradient and hessian, hessian >= 0, and (``sums``) per-query gradient sums of
    zero for the shift-invariant losses: a lost digit shows there first."""
    grad, hess = objective.grad_hess(y, s, group)
    assert np.isfinite(grad).all() and np.isfinite(hess).all()
    assert (hess >= 0).all()
    if sums and objective.shift_invariant:
        offsets = check_group(group, len(y))
        sums = np.add.reduceat(grad, offsets[:-1])
        scale = np.add.reduceat(np.abs(grad), offsets[:-1]) + 1e-300
        np.testing.assert_array_less(np.abs(sums), 1e-9 * scale + 1e-12)
    return grad, hess


# =========================================================================== objectives
# Direct calls: obj.grad_hess(y_true, y_pred, group, weight) and obj.loss(...).

@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad, shown", [(np.nan, "NaN"), (np.inf, "inf"), (-np.inf, "-inf")])
def test_objective_non_finite_score_is_named(name, bad, shown):
    obj = OBJECTIVES[name]()
    message = rf"y_pred contains {shown} at row 6 \(query 1\); scores must be finite"
    with pytest.raises(ValueError, match=message):
        obj.grad_hess(Y, at_row6(S, bad), G)
    with pytest.raises(ValueError, match=message):
        obj.loss(Y, at_row6(S, bad), G)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "group, message",
    [([4, 4], r"group sizes sum to 8 but there are 9 rows"),
     ([4, 6], r"group sizes sum to 10 but there are 9 rows"),
     ([4, 0, 5], r"group sizes must be positive; group\[1\] = 0 \(query 1 has no documents\)"),
     ([4, -1, 6], r"group sizes must be positive; group\[1\] = -1"),
     ([4.5, 4.5], r"group must hold integers; group\[0\] = "),
     (None, r"query groups are required")],
    ids=["short", "long", "zero-size", "negative", "fractional", "missing"],
)
def test_objective_bad_groups_are_named(name, group, message):
    with pytest.raises(ValueError, match=message):
        OBJECTIVES[name]().grad_hess(Y, S, group)


@pytest.mark.parametrize("call, message", [
    (lambda: gbrank.listmle().grad_hess(Y, S, [4.5, 4.5]), r"group\[0\] = 4\.5$"),
    (lambda: gbrank.Ranker().fit(np.zeros((4, 1)), [0, 1, 0, 1], qid=[0, 0, np.nan, 1]),
     r"qid contains nan at row 2;"),
], ids=["group", "qid"])
def test_messages_show_plain_numbers(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_qid_must_be_contiguous_and_may_be_unsorted():
    # unsorted but contiguous ids are fine: sizes in order of appearance
    np.testing.assert_array_equal(qid_to_sizes([5, 5, 2, 2, 2, 9]), [2, 3, 1])
    with pytest.raises(ValueError, match=r"qid must be sorted: qid 5 at row 1 is followed by qid 2 at row 2"):
        qid_to_sizes([5, 5, 2, 2, 2, 9], require_sorted=True)
    with pytest.raises(ValueError, match=r"contiguous: qid 1 starts blocks at rows 0 and 3"):
        qid_to_sizes([1, 1, 2, 1])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "bad, message",
    [(-1.0, r"y_true must be non-negative; y_true\[6\] = -1 at row 6 \(query 1\)"),
     (np.nan, r"y_true contains NaN at row 6 \(query 1\); labels must be finite"),
     (np.inf, r"y_true contains inf at row 6 \(query 1\); labels must be finite")],
    ids=["negative", "nan", "inf"],
)
def test_objective_bad_label_is_named(name, bad, message):
    with pytest.raises(ValueError, match=message):
        OBJECTIVES[name]().grad_hess(at_row6(Y, bad), S, G)


@pytest.mark.parametrize("name", sorted(EXP2))
@pytest.mark.parametrize(
    "bad, message",
    [(0.5, r"y_true must hold integers with (gain|target)='exp2' .*y_true\[6\] = 0\.5 at row 6 \(query 1\)"),
     (32.0, r"y_true\[6\] = 32 at row 6 \(query 1\) exceeds the largest supported label 31 with (gain|target)='exp2'")],
    ids=["non-integer", "above-31"],
)
def test_exp2_objectives_reject_labels_outside_the_gain_table(name, bad, message):
    with pytest.raises(ValueError, match=message):
        OBJECTIVES[name]().grad_hess(at_row6(Y, bad), S, G)


@pytest.mark.parametrize("name", ORDER_ONLY)
def test_order_only_objectives_use_only_the_order_of_the_labels(name):
    # non-integer labels and labels far above 31 are accepted: only their order matters
    obj = OBJECTIVES[name]()
    ranks = np.array([2, 1, 0, 1, 0, 3, 0, 2, 1], dtype=float)
    odd = np.array([7.5, 0.25, 0.0, 0.25, 0.0, 1e6, 0.0, 40.0, 3.5])
    for a, b in zip(obj.grad_hess(ranks, S, G), obj.grad_hess(odd, S, G)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["wlistmle", "wranknet", "listnet", "cosine", "ndcg_boost", "lambdarank", "lambdaloss"])
def test_exp2_objectives_take_any_label_with_a_linear_gain(name):
    make = {
        "lambdarank": lambda: gbrank.lambdarank(gain="linear"),
        "lambdaloss": lambda: gbrank.lambdaloss(gain="linear"),
        "wlistmle": lambda: gbrank.wlistmle(gain="linear"),
        "wranknet": lambda: gbrank.wranknet(gain="linear"),
        "listnet": lambda: gbrank.listnet(target="linear"),
        "cosine": lambda: gbrank.cosine(target="linear"),
        "ndcg_boost": lambda: gbrank.ndcg_boost(gain="linear"),
    }[name]
    check_finite(make(), np.array([7.5, 0.25, 0.0, 0.25, 0.0, 1e6, 0.0, 40.0, 3.5]), S, G)


@pytest.mark.parametrize(
    "name",
    NAMES,
)
def test_objective_non_numeric_labels(name):
    with pytest.raises(TypeError, match=r"y_true must be numeric, got dtype <U1"):
        OBJECTIVES[name]().grad_hess(np.array(list("abcdefghi")), S, G)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("labels", ["all-equal", "single-document"])
def test_queries_without_order_get_zero_gradient(name, labels):
    obj = OBJECTIVES[name]()
    if labels == "all-equal":
        y, group = np.full(9, 2.0), G
    else:
        y, group = Y, [1] * 9
    grad, hess = obj.grad_hess(y, S, group)
    np.testing.assert_array_equal(grad, 0.0)
    np.testing.assert_array_equal(hess, obj.hess_floor)
    # the loss does not depend on the scores (NDCG_Boost's M_q holds a constant for tied pairs)
    assert obj.loss(y, S, group) == obj.loss(y, -3 * S[::-1], group)


@pytest.mark.parametrize("name", NAMES)
def test_empty_input_gives_empty_output(name):
    obj = OBJECTIVES[name]()
    grad, hess = obj.grad_hess(np.zeros(0), np.zeros(0), [])
    assert grad.shape == hess.shape == (0,) and grad.dtype == np.float64
    assert obj.loss(np.zeros(0), np.zeros(0), []) == 0.0



@pytest.mark.parametrize("magnitude", [1e4, 1e30, 1e300])
@pytest.mark.parametrize("name", NAMES)
def test_extreme_scores_stay_finite_and_exact(name, magnitude):
    # finite, non-negative hessians, and gradients that still sum to zero per query (for the
    # log-space kernels beyond 1e4, exactness is the stable-reference row below)
    obj = OBJECTIVES[name]()
    rng = np.random.default_rng(3)
    for s in (np.sign(rng.normal(size=9)) * magnitude, rng.normal(size=9) * magnitude,
              np.where(np.arange(9) % 2, magnitude, -magnitude)):
        check_finite(obj, Y, s, G)
        assert np.isfinite(obj.loss(Y, s, G))


@pytest.mark.parametrize("magnitude", [1e4, 1e30, 1e300])
def test_listmle_gradient_at_tied_extreme_scores(magnitude):
    # labels 2, 1, 0, 1 and scores +M, -M, +M, -M, order y = (0, 1, 3, 2): documents 0 and 2
    # share the first softmax, document 2 wins every later one
    s = np.array([1.0, -1.0, 1.0, -1.0]) * magnitude
    grad, _ = gbrank.listmle(ties="input").grad_hess([2, 1, 0, 1], s, [4])
    np.testing.assert_allclose(grad, [-0.5, -1.0, 2.5, -1.0], atol=1e-12)


def stable_pl_gradient(scores, perm, weights):
    """sum_{i <= r(d)} w_i p_i(d) - w_r(d), each softmax p_i taken relative to its own suffix's maximum."""
    grad = np.zeros(len(perm))
    for i in range(len(perm)):
        tail = perm[i:]
        e = np.exp(scores[tail] - scores[tail].max())
        grad[tail] += weights[i] * e / e.sum()
        grad[perm[i]] -= weights[i]
    return grad


LOG_SPACE_CASES = {
    # name: (objective, position weights for the labels 0..n-1 in decreasing order)
    "listmle": (lambda: gbrank.listmle(ties="input"), lambda n: np.ones(n)),
    "listmle_topk": (lambda: gbrank.listmle_topk(k=3, ties="input"), lambda n: (np.arange(n) < 3) * 1.0),
    "wlistmle": (lambda: gbrank.wlistmle(ties="input"),
                 lambda n: (2.0 ** np.arange(n - 1, -1, -1) - 1) / np.log2(2.0 + np.arange(n))),
    "plackett_luce": (lambda: gbrank.plackett_luce([1.0, 0.5, 0.25], ties="input"),
                      lambda n: np.r_[1.0, 0.5, 0.25, np.zeros(n)][:n]),
    # a target far apart draws the same top 3 every time: the top-3 ListMLE of the label order
    "listnet_k3_sampled": (lambda: gbrank.listnet(k=3, target=lambda lab: 1000.0 * lab, exact_limit=0),
                           lambda n: (np.arange(n) < 3) * 1.0),
}


@pytest.mark.parametrize(
    "name, magnitude",
    [(n, m)
     for m in (1e4, 1e12, 1e30, 1e300) for n in LOG_SPACE_CASES],
)
def test_log_space_gradients_match_a_stable_reference(name, magnitude):
    make, position_weights = LOG_SPACE_CASES[name]
    rng = np.random.default_rng(6)
    n = 7
    labels = np.arange(n - 1, -1, -1, dtype=float)  # no ties: rows are already in label order
    weights = position_weights(n)
    patterns = [
        np.array([1, 1, -1, -1, -1, 0.5, 0.5]),  # a tied top block, a tied block far below
        np.array([-1, 1, -1, -1, 0.5, -1, 1]),
        np.array([1, -1, -1, -0.5, -0.5, -1, -1]),  # below the top, ties far from it
        rng.normal(size=n),
        np.round(rng.normal(size=n) * 2) / 2,
    ]
    for pattern in patterns:
        s = pattern * magnitude
        grad, _ = make().grad_hess(labels, s, [n])
        np.testing.assert_allclose(grad, stable_pl_gradient(s, np.arange(n), weights), rtol=0, atol=1e-9,
                                   err_msg=f"scores {s}")


@pytest.mark.parametrize(
    "name", NAMES,
)
def test_scores_near_the_float64_maximum_keep_finite_gradients(name):
    # the loss itself may overflow to inf here (score gaps beyond 1e308), the gradient must not
    s = np.array([1.7e308, -1.7e308, 1e308, 0.0, 1.7e308, 1.7e308, -1.7e308, 5.0, 8e307])
    with np.errstate(over="ignore", invalid="ignore"):
        check_finite(OBJECTIVES[name](), Y, s, G)


@pytest.mark.parametrize("name", NAMES)
def test_ten_thousand_document_query(name):
    rng = np.random.default_rng(4)
    n = 10_000
    y = rng.integers(0, 5, size=n).astype(float)
    s = rng.uniform(-1e4, 1e4, size=n)
    obj = OBJECTIVES[name]()
    grad, _ = check_finite(obj, y, s, [n])
    assert np.abs(grad).max() > 0
    assert np.isfinite(obj.loss(y, s, [n]))


@pytest.mark.parametrize("name", NAMES)
def test_float32_inputs_give_the_float64_result(name):
    rng = np.random.default_rng(5)
    s32 = rng.normal(size=9).astype(np.float32)
    w32 = rng.uniform(0.5, 2.0, size=9).astype(np.float32)
    obj = OBJECTIVES[name]()
    out32 = obj.grad_hess(Y.astype(np.float32), s32, np.array(G, dtype=np.int32), w32)
    out64 = obj.grad_hess(Y, s32.astype(np.float64), G, w32.astype(np.float64))
    for a, b in zip(out32, out64):
        assert a.dtype == np.float64
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", NAMES)
def test_zero_weights_silence_rows(name):
    obj = OBJECTIVES[name]()
    weight = np.ones(9)
    weight[[1, 6]] = 0.0
    grad, hess = obj.grad_hess(Y, S, G, weight)
    grad1, hess1 = obj.grad_hess(Y, S, G)
    np.testing.assert_array_equal(grad[[1, 6]], 0.0)
    np.testing.assert_array_equal(hess[[1, 6]], 0.0)
    keep = weight > 0
    np.testing.assert_array_equal(grad[keep], grad1[keep])
    np.testing.assert_array_equal(hess[keep], hess1[keep])
    zero = obj.grad_hess(Y, S, G, np.zeros(9))
    np.testing.assert_array_equal(zero[0], 0.0)
    np.testing.assert_array_equal(zero[1], 0.0)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "bad, message",
    [(-1.0, r"weight must be non-negative; weight\[6\] = -1 at row 6 \(query 1\)"),
     (np.nan, r"weight contains NaN at row 6 \(query 1\); weights must be finite")],
    ids=["negative", "nan"],
)
def test_bad_weight_is_named(name, bad, message):
    with pytest.raises(ValueError, match=message):
        OBJECTIVES[name]().grad_hess(Y, S, G, at_row6(np.ones(9), bad))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "call, message",
    [(lambda o: o.grad_hess(Y, S[:8], G), r"y_pred has 8 rows but the labels have 9"),
     (lambda o: o.grad_hess(Y, np.stack([S, S], axis=1), G), r"y_pred must be one-dimensional, got shape \(9, 2\)"),
     (lambda o: o.grad_hess(Y, S, G, np.ones(8)), r"weight has shape \(8,\) but there are 9 rows"),
     (lambda o: o.grad_hess(Y[:8], S, [4, 4]), r"y_pred has 9 rows but the labels have 8"),
     (lambda o: o.loss(Y, S[:8], G), r"y_pred has 8 rows but the labels have 9")],
    ids=["scores", "2d-scores", "weights", "labels", "loss"],
)
def test_mismatched_lengths_are_named(name, call, message):
    with pytest.raises(ValueError, match=message):
        call(OBJECTIVES[name]())


# =========================================================================== engine paths
# lgb.train(params={"objective": obj}), LGBMRanker(objective=obj), xgb.train(obj=obj).

@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", NAMES)
def test_nan_features_are_missing_values(engine, name):
    X, y, sizes = small_data(seed=1)
    X[::4, 0] = np.nan
    X[1::5, 2] = np.nan
    _, pred = train(engine, OBJECTIVES[name](), X, y, sizes)
    assert np.isfinite(pred).all()


@pytest.mark.parametrize("name", NAMES)
def test_infinite_features(name):
    X, y, sizes = small_data(seed=2)
    X[3, 1] = np.inf
    X[7, 1] = -np.inf
    # LightGBM bins +-inf with the extreme values
    for engine in ("lgb.train", "LGBMRanker"):
        assert np.isfinite(train(engine, OBJECTIVES[name](), X, y, sizes)[1]).all()
    # XGBoost refuses them when building the DMatrix
    with pytest.raises(xgb.core.XGBoostError, match="Input data contains `inf`"):
        train("xgb.train", OBJECTIVES[name](), X, y, sizes)


@pytest.mark.parametrize("name", NAMES)
def test_nan_initial_scores(name):
    X, y, sizes = small_data(seed=3)
    init = np.zeros(len(y))
    init[int(sizes[0]) + 2] = np.nan
    where = rf"row {int(sizes[0]) + 2} \(query 1\)"
    with pytest.raises(ValueError, match=rf"y_pred contains NaN at {where}"):
        train("xgb.train", OBJECTIVES[name](), X, y, sizes, init_score=init)
    # LightGBM replaces a NaN initial score by 0 when it builds the Dataset
    spy = Spy(OBJECTIVES[name]())
    lgb.train({**LGB_PARAMS, "objective": spy}, lgb.Dataset(X, y, group=sizes, init_score=init), num_boost_round=1)
    assert spy.seen[0][0][int(sizes[0]) + 2] == 0.0


@pytest.mark.parametrize("engine", ["lgb.train", "xgb.train"])
@pytest.mark.parametrize("name", NAMES)
def test_huge_initial_scores(engine, name):
    X, y, sizes = small_data(seed=4)
    init = np.where(np.arange(len(y)) % 2, 1e30, -1e30)
    spy = Spy(OBJECTIVES[name]())
    _, pred = train(engine, spy, X, y, sizes, init_score=init)
    assert np.abs(spy.seen[0][0]).min() > 0.99e30  # XGBoost keeps margins in float32
    for *_, grad, hess in spy.seen:
        assert np.isfinite(grad).all() and np.isfinite(hess).all()
    assert np.isfinite(pred).all()


@pytest.mark.parametrize("engine, message", [
    ("lgb.train", r"query groups are required: pass group sizes"),
    ("LGBMRanker", r"Should set group for ranking task"),  # LightGBM's own check
    ("xgb.train", r"the DMatrix has no query groups: build it with qid= or group="),
])
@pytest.mark.parametrize("name", NAMES)
def test_data_without_groups(engine, message, name):
    X, y, _ = small_data(seed=5)
    with pytest.raises(ValueError, match=message):
        train(engine, OBJECTIVES[name](), X, y, None)


@pytest.mark.parametrize("engine, error, message", [
    ("lgb.train", lgb.basic.LightGBMError, r"Sum of query counts \(\d+\) differs from the length of #data"),
    ("LGBMRanker", lgb.basic.LightGBMError, r"Sum of query counts \(\d+\) differs from the length of #data"),
    ("xgb.train", xgb.core.XGBoostError, r"Invalid query group structure"),
])
def test_engines_reject_groups_that_do_not_sum_to_the_rows(engine, error, message):
    X, y, sizes = small_data(seed=6)
    with pytest.raises(error, match=message):
        train(engine, gbrank.listmle(), X, y, np.append(sizes, 3))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", NAMES)
def test_zero_size_group_in_an_engine(engine, name):
    X, y, sizes = small_data(seed=7)
    group = np.insert(sizes, 2, 0)
    with pytest.raises(ValueError, match=r"group\[2\] = 0 \(query 2 has no documents\)"):
        train(engine, OBJECTIVES[name](), X, y, group)


def test_xgboost_rejects_unsorted_qid():
    X, y, sizes = small_data(seed=8)
    qid = np.repeat(np.arange(len(sizes))[::-1], sizes)
    with pytest.raises(xgb.core.XGBoostError, match="`qid` must be sorted"):
        xgb.train(XGB_PARAMS, xgb.DMatrix(X, y, qid=qid), num_boost_round=1, obj=gbrank.listmle())
    # the same rows with their sizes train: LightGBM and gbrank take queries in any order
    train("xgb.train", gbrank.listmle(), X, y, qid_to_sizes(qid))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", NAMES)
def test_negative_label_in_an_engine(engine, name):
    X, y, sizes = small_data(seed=9)
    y[int(sizes[0]) + 1] = -1
    with pytest.raises(ValueError, match=rf"y_true must be non-negative; y_true\[{int(sizes[0]) + 1}\] = -1 at row {int(sizes[0]) + 1} \(query 1\)"):
        train(engine, OBJECTIVES[name](), X, y, sizes)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", NAMES)
def test_label_above_the_gain_table_in_an_engine(engine, name):
    X, y, sizes = small_data(seed=10)
    row = int(sizes[0]) + 1
    y[row] = 40
    if name in EXP2:
        with pytest.raises(ValueError, match=rf"y_true\[{row}\] = 40 at row {row} \(query 1\) exceeds the largest supported label 31"):
            train(engine, OBJECTIVES[name](), X, y, sizes)
    else:
        assert np.isfinite(train(engine, OBJECTIVES[name](), X, y, sizes)[1]).all()


def test_nan_label_in_an_engine():
    X, y, sizes = small_data(seed=11)
    y[5] = np.nan
    with pytest.raises(xgb.core.XGBoostError, match="Label contains NaN"):
        train("xgb.train", gbrank.listmle(), X, y, sizes)
    # LightGBM replaces a NaN label by 0 when it builds the Dataset: gbrank sees a 0
    spy = Spy(gbrank.listmle())
    lgb.train({**LGB_PARAMS, "objective": spy}, lgb.Dataset(X, y, group=sizes), num_boost_round=1)
    assert spy.seen[0][1][5] == 0.0


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("labels", ["all-equal", "single-document"])
def test_data_without_order_trains_a_constant_model(engine, name, labels):
    X, y, sizes = small_data(seed=12)
    if labels == "all-equal":
        y = np.ones_like(y)
    else:
        sizes = np.ones(len(y), dtype=int)
    _, pred = train(engine, OBJECTIVES[name](), X, y, sizes)
    assert np.isfinite(pred).all()
    assert np.unique(pred).size == 1


@pytest.mark.filterwarnings("ignore:.*Empty dataset:UserWarning")
@pytest.mark.parametrize("engine, error, message", [
    ("lgb.train", lgb.basic.LightGBMError, r"Check failed: \(num_data\) > \(0\)"),
    ("LGBMRanker", ValueError, r"0 sample\(s\)"),
    ("xgb.train", ValueError, r"the DMatrix has no rows"),
])
def test_empty_dataset_in_an_engine(engine, error, message):
    X, y, _ = small_data(seed=13)
    with pytest.raises(error, match=message):
        train(engine, gbrank.listmle(), X[:0], y[:0], np.zeros(0, dtype=int))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", NAMES)
def test_zero_weights_in_an_engine(engine, name):
    X, y, sizes = small_data(seed=14)
    weight = np.ones(len(y))
    weight[: sizes[0] + sizes[1]] = 0.0  # the first two queries
    if engine == "LGBMRanker":  # calls objective(y_true, y_pred, weight, group): nothing to spy on
        assert np.isfinite(train(engine, OBJECTIVES[name](), X, y, sizes, weight=weight)[1]).all()
        return
    spy = Spy(OBJECTIVES[name]())
    _, pred = train(engine, spy, X, y, sizes, weight=weight)
    assert np.isfinite(pred).all()
    for *_, grad, hess in spy.seen:  # what the engine received
        np.testing.assert_array_equal(grad[weight == 0], 0.0)
        np.testing.assert_array_equal(hess[weight == 0], 0.0)
        assert np.abs(grad[weight > 0]).max() > 0


@pytest.mark.parametrize("engine", ["lgb.train", "xgb.train"])
def test_all_zero_weights_train_a_constant_model(engine):
    X, y, sizes = small_data(seed=15)
    _, pred = train(engine, gbrank.listmle(), X, y, sizes, weight=np.zeros(len(y)))
    assert np.isfinite(pred).all() and np.unique(pred).size == 1


@pytest.mark.parametrize("engine, error, message", [
    ("lgb.train", ValueError, r"weight must be non-negative; weight\[0\] = -1"),
    ("LGBMRanker", ValueError, r"weight must be non-negative; weight\[0\] = -1"),
    ("xgb.train", xgb.core.XGBoostError, r"Weights must be positive values"),  # XGBoost's own check
])
@pytest.mark.parametrize("name", NAMES)
def test_negative_weights_in_an_engine(engine, error, message, name):
    X, y, sizes = small_data(seed=16)
    weight = np.ones(len(y))
    weight[: sizes[0]] = -1.0
    with pytest.raises(error, match=message):
        train(engine, OBJECTIVES[name](), X, y, sizes, weight=weight)


def test_nan_weight_in_an_engine():
    X, y, sizes = small_data(seed=17)
    weight = np.full(len(y), 2.0)
    weight[: sizes[0]] = np.nan  # the first query
    with pytest.raises(xgb.core.XGBoostError, match="Weights must be positive values"):
        train("xgb.train", gbrank.listmle(), X, y, sizes, weight=weight)
    # LightGBM replaces a NaN weight by 0 when it builds the Dataset: the row is silenced
    spy = Spy(gbrank.listmle())
    lgb.train({**LGB_PARAMS, "objective": spy}, lgb.Dataset(X, y, group=sizes, weight=weight), num_boost_round=1)
    np.testing.assert_array_equal(spy.seen[0][2][: sizes[0]], 0.0)


@pytest.mark.parametrize("engine, error, message", [
    ("lgb.train", lgb.basic.LightGBMError, r"Length of labels differs from the length of #data"),
    ("LGBMRanker", ValueError, r"inconsistent numbers of samples"),
    ("xgb.train", xgb.core.XGBoostError, r"Invalid size for `label`"),
])
def test_engines_reject_labels_of_the_wrong_length(engine, error, message):
    X, y, sizes = small_data(seed=18)
    with pytest.raises(error, match=message):
        train(engine, gbrank.listmle(), X, y[:-1], sizes)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", NAMES)
def test_objective_reused_across_trainings(engine, name):
    A = small_data(seed=19)
    B = small_data(seed=20, n_queries=4)
    obj = OBJECTIVES[name]()
    first = train(engine, obj, *A)[0]
    other = train(engine, obj, *B)[0]
    assert train(engine, obj, *A)[0] == first  # the cached state of B does not leak into A
    assert train(engine, OBJECTIVES[name](), *B)[0] == other
    assert other != first


@pytest.mark.parametrize("engine", ["lgb.train", "xgb.train"])
@pytest.mark.parametrize("name", NAMES)
def test_float32_and_float64_features_train_the_same_model(engine, name):
    X, y, sizes = small_data(seed=21)
    X32 = X.astype(np.float32)
    m32 = train(engine, OBJECTIVES[name](), X32, y.astype(np.float32), sizes)[0]
    m64 = train(engine, OBJECTIVES[name](), X32.astype(np.float64), y, sizes)[0]
    assert m32 == m64


# =========================================================================== metrics
METRICS = {
    "ndcg": metrics.ndcg,
    "map": metrics.mean_average_precision,
    "mrr": metrics.mrr,
    "precision": metrics.precision_at_k,
    "err": metrics.err,
}
GAIN_METRICS = {"ndcg", "err"}  # labels are integers 0..31 (exp2 gain, ERR's stop probability)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize(
    "call, message",
    [(lambda f: f(Y, at_row6(S, np.nan), G), r"y_pred contains NaN at row 6 \(query 1\)"),
     (lambda f: f(Y, at_row6(S, -np.inf), G), r"y_pred contains -inf at row 6 \(query 1\)"),
     (lambda f: f(at_row6(Y, -1), S, G), r"y_true must be non-negative; y_true\[6\] = -1 at row 6 \(query 1\)"),
     (lambda f: f(at_row6(Y, np.nan), S, G), r"y_true contains NaN at row 6 \(query 1\)"),
     (lambda f: f(np.zeros(0), np.zeros(0), []), r"empty input: y_true has no rows"),
     (lambda f: f(Y, S, [4, 4]), r"group sizes sum to 8 but there are 9 rows"),
     (lambda f: f(Y, S, [4, 0, 5]), r"group\[1\] = 0 \(query 1 has no documents\)"),
     (lambda f: f(Y, S, None), r"query groups are required"),
     (lambda f: f(Y, S[:8], G), r"y_pred has 8 rows but the labels have 9")],
    ids=["nan-score", "inf-score", "negative-label", "nan-label", "empty", "group-sum", "zero-group",
         "no-group", "length"],
)
def test_metric_bad_input_is_named(metric, call, message):
    with pytest.raises(ValueError, match=message):
        call(METRICS[metric])


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("bad", [0.5, 32.0])
def test_metric_labels_outside_the_gain_table(metric, bad):
    f = METRICS[metric]
    if metric in GAIN_METRICS:
        with pytest.raises(ValueError, match=r"y_true.*row 6 \(query 1\)"):
            f(at_row6(Y, bad), S, G)
    else:
        # binary measures: relevant means label > relevance_threshold (0)
        assert f(at_row6(Y, bad), S, G) == f(at_row6(Y, 1.0), S, G)


@pytest.mark.parametrize("metric", METRICS)
def test_metric_non_numeric_labels(metric):
    with pytest.raises(TypeError, match=r"y_true must be numeric"):
        METRICS[metric](np.array(list("abcdefghi")), S, G)


@pytest.mark.parametrize("metric", METRICS)
def test_metric_queries_without_relevant_documents(metric):
    f = METRICS[metric]
    np.testing.assert_array_equal(f(np.zeros(9), S, G, per_query=True), [1.0, 1.0])
    np.testing.assert_array_equal(f(np.zeros(9), S, G, per_query=True, no_relevant=0.0), [0.0, 0.0])
    with pytest.warns(RuntimeWarning, match="no query has a relevant document"):
        assert np.isnan(f(np.zeros(9), S, G, no_relevant="exclude"))


@pytest.mark.parametrize("metric", ["ndcg", "map", "mrr", "precision"])
def test_metric_all_equal_and_single_document_queries(metric):
    f = METRICS[metric]
    # every order is ideal when all labels are equal, and for a single document
    np.testing.assert_array_equal(f(np.full(9, 2.0), S, G, per_query=True), [1.0, 1.0])
    assert f(Y, S, [1] * 9) == 1.0


@pytest.mark.parametrize("metric", METRICS)
def test_metric_extreme_scores_keep_the_ranking(metric):
    f = METRICS[metric]
    rng = np.random.default_rng(22)
    n = 10_000
    y = rng.integers(0, 5, size=n).astype(float)
    ranks = rng.permutation(n).astype(float)
    group = [n // 2, n // 2]
    expected = f(y, ranks, group, 10)
    for scale in (1e4, 1e30, 1e300):
        assert f(y, (ranks - n / 2) * scale, group, 10) == expected


@pytest.mark.parametrize("metric", METRICS)
def test_metric_float32_scores_give_the_float64_result(metric):
    s32 = np.random.default_rng(23).normal(size=9).astype(np.float32)
    f = METRICS[metric]
    assert f(Y.astype(np.float32), s32, G) == f(Y, s32.astype(np.float64), G)


def test_metric_callbacks_on_data_without_groups():
    X, y, sizes = small_data(seed=24)
    m = metrics.make_metrics(["ndcg@5"])
    with pytest.raises(ValueError, match=r"query groups are required"):
        lgb.train({**LGB_PARAMS, "objective": gbrank.listmle()}, lgb.Dataset(X, y, group=sizes),
                  num_boost_round=1, valid_sets=[lgb.Dataset(X, y)], feval=m.lightgbm)
    with pytest.raises(ValueError, match=r"the DMatrix has no query groups"):
        xgb.train(XGB_PARAMS, xgb.DMatrix(X, y, group=sizes), num_boost_round=1, obj=gbrank.listmle(),
                  evals=[(xgb.DMatrix(X, y), "valid")], custom_metric=m.xgboost)


# =========================================================================== datasets
LINES = ["0 qid:1 1:0.1 2:0.2 3:0.3", "1 qid:1 1:0.4 2:0.5 3:0.6", "2 qid:2 1:0.7 2:0.8 3:0.9"]


def write(path, text, compress=False):
    data = text.encode() if isinstance(text, str) else text
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize(
    "last, message",
    [("1 qid:2 1:0.1 2:", r"line 4: could not convert string to float.*'1 qid:2 1:0\.1 2:'"),
     ("1 qid: 1:0.1", r"line 4: invalid literal for int\(\).*'1 qid: 1:0\.1'"),
     ("1 qid:2 1:0.1 1:0.2", r"line 4: .*'1 qid:2 1:0\.1 1:0\.2'")],
    ids=["value-cut", "qid-cut", "repeated-index"],
)
def test_letor_line_cut_short_is_named(tmp_path, compress, last, message):
    path = write(tmp_path / ("cut.txt.gz" if compress else "cut.txt"), "\n".join(LINES + [last]) + "\n", compress)
    with pytest.raises(ValueError, match=r"cut\.txt(\.gz)?: " + message):
        load_letor(path)


def test_letor_file_cut_mid_line_or_mid_stream(tmp_path):
    text = "\n".join(LINES) + "\n"
    with pytest.raises(ValueError, match=r"plain\.txt: line 3 does not end with a newline, so the file looks truncated"):
        load_letor(write(tmp_path / "plain.txt", text[:-5]))
    blob = gzip.compress(text.encode() * 50)
    with pytest.raises(ValueError, match=r"gz\.txt\.gz: cannot decompress.*truncated or corrupt gzip"):
        load_letor(write(tmp_path / "gz.txt.gz", blob[:20]))


def test_letor_binary_garbage_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"garbage\.bin: "):
        load_letor(write(tmp_path / "garbage.bin", bytes(range(256)) * 4))
    with pytest.raises(ValueError, match=r"garbage\.bin: line \d+: "):
        load_letor(write(tmp_path / "garbage.bin", bytes(range(256)) * 4 + b"\n"))


def test_letor_non_finite_features_are_kept_as_read(tmp_path):
    data = load_letor(write(tmp_path / "x.txt", "\n".join(LINES + ["1 qid:2 1:nan 2:inf 3:-inf"]) + "\n"))
    assert np.isnan(data.X[3, 0]) and data.X[3, 1] == np.inf and data.X[3, 2] == -np.inf


def test_letor_labels_are_kept_and_checked_by_the_loss(tmp_path):
    # LETOR's semi-supervised sets mark unjudged documents -1: read as written, refused by the loss
    data = load_letor(write(tmp_path / "semi.txt", "\n".join(LINES + ["-1 qid:2 1:1", "1e40 qid:2 1:1"]) + "\n"))
    np.testing.assert_array_equal(data.y, [0, 1, 2, -1, 1e40])
    with pytest.raises(ValueError, match=r"y_true\[3\] = -1 at row 3 \(query 1\)"):
        gbrank.listmle().grad_hess(data.y, np.zeros(len(data)), data.group)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_ranking_data_refuses_non_finite_labels(bad):
    with pytest.raises(ValueError, match=r"row 4 \(query 1\)"):
        RankingData(np.zeros((6, 2)), [0, 1, 2, 0, bad, 1], group=[3, 3])


@pytest.mark.parametrize(
    "kwargs, message",
    [(dict(y=[0, 1, 2], group=[2, 2]), r"group sizes sum to 4 but there are 3 rows"),
     (dict(y=[0, 1, 2], group=[3, 0]), r"group\[1\] = 0 \(query 1 has no documents\)"),
     (dict(y=[0, 1, 2], qid=[1, 2, 1]), r"contiguous: qid 1 starts blocks at rows 0 and 2"),
     (dict(y=[0, 1], group=[3]), r"y has shape \(2,\) but X has 3 rows"),
     (dict(y=[0, 1, 2]), r"pass group= \(query sizes\) or qid=")],
    ids=["group-sum", "zero-group", "non-contiguous-qid", "label-length", "no-groups"],
)
def test_ranking_data_bad_groups_and_lengths(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RankingData(np.zeros((3, 2)), **kwargs)


def test_empty_ranking_data_is_a_dataset_of_no_queries():
    data = RankingData(np.zeros((0, 2)), np.zeros(0), group=np.zeros(0, dtype=int))
    assert data.n_queries == 0 and len(data) == 0
    with pytest.raises(ValueError, match=r"n_queries must be at least 1, got 0"):
        make_ranking(n_queries=0)


def test_query_splits_of_too_few_queries():
    data = make_ranking(n_queries=3, docs_per_query=(1, 1), n_features=2)
    with pytest.raises(ValueError, match=r"3 queries cannot be split into parts of .*: part 2 would be empty"):
        split_queries(data, (1, 1, 1, 1))
    with pytest.raises(ValueError, match=r"n_splits must lie in \[2, n_queries=3\], got 5"):
        list(kfold_queries(data, 5))
    # single-document queries are valid data: objectives give them zero gradient
    grad, _ = gbrank.listmle().grad_hess(data.y, np.zeros(3), data.group)
    np.testing.assert_array_equal(grad, 0.0)


def test_no_warning_leaks_from_valid_input():
    # the happy path of every objective is silent (no RuntimeWarning from numpy)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for make in OBJECTIVES.values():
            obj = make()
            obj.grad_hess(Y, S, G)
            obj.loss(Y, S, G)


# =========================================================================== gbrank.Ranker
RANKER_ENGINES = ["lightgbm", "xgboost"]


def ranker(engine, objective=None, **kwargs):
    params = {"min_data_in_leaf": 2} if engine == "lightgbm" else {}
    return gbrank.Ranker(objective if objective is not None else gbrank.listmle(), engine=engine,
                         n_estimators=3, n_jobs=1, random_state=0, params=params, **kwargs)


def interleaved_qid(sizes):
    """Query ids whose rows take turns (q0, q1, q2, q0, ...), and the grouped order of rows."""
    qid = np.repeat(np.arange(len(sizes)), sizes)
    position = np.arange(len(qid)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return qid, np.lexsort((qid, position))


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("engine", RANKER_ENGINES)
def test_ranker_nan_features_are_missing_values(engine):
    X, y, sizes = small_data(seed=30)
    X[::3, 1] = np.nan
    model = ranker(engine).fit(X, y, group=sizes)
    assert np.isfinite(model.predict(X)).all()
    assert np.isfinite(model.predict(np.full((2, X.shape[1]), np.nan))).all()


@pytest.mark.parametrize("engine", RANKER_ENGINES)
def test_ranker_refuses_infinite_features(engine):
    X, y, sizes = small_data(seed=31)
    X[4, 2] = np.inf
    with pytest.raises(ValueError, match=r"Input X contains infinity"):
        ranker(engine).fit(X, y, group=sizes)


@pytest.mark.parametrize("engine", RANKER_ENGINES)
@pytest.mark.parametrize(
    "fit, message",
    [(lambda m, X, y, g: m.fit(X, at_row6(y, -1), group=g), r"y must be non-negative; y\[6\] = -1 at row 6 \(query 1\)"),
     (lambda m, X, y, g: m.fit(X, y, group=g[:-1]), r"group sizes sum to \d+ but there are \d+ rows"),
     (lambda m, X, y, g: m.fit(X, y, group=np.insert(g, 1, 0)), r"group\[1\] = 0 \(query 1 has no documents\)"),
     (lambda m, X, y, g: m.fit(X, y), r"Ranker needs query groups: pass group="),
     (lambda m, X, y, g: m.fit(X, y, group=g, qid=np.repeat(np.arange(len(g)), g)), r"pass query groups once"),
     (lambda m, X, y, g: m.fit(X, y, qid=at_row6(np.repeat(np.arange(len(g)), g), np.nan)), r"qid contains .*nan.* at row 6; query ids must be finite"),
     (lambda m, X, y, g: m.fit(X[:0], y[:0], group=[]), r"Found array with 0 sample\(s\)"),
     (lambda m, X, y, g: m.fit(X[:1], y[:1], group=[1]), r"Found array with 1 sample\(s\).*minimum of 2"),
     (lambda m, X, y, g: m.fit(X, y[:-1], group=g), r"inconsistent numbers of samples"),
     (lambda m, X, y, g: m.fit(X, y, group=g, sample_weight=np.zeros(len(y))), r"sample_weight is zero for every row"),
     (lambda m, X, y, g: m.fit(X, y, group=g, sample_weight=at_row6(np.ones(len(y)), -1)), r"sample_weight must be non-negative; sample_weight\[6\] = -1"),
     (lambda m, X, y, g: m.fit(X, y, group=g, sample_weight=at_row6(np.ones(len(y)), np.nan)), r"sample_weight contains NaN at row 6"),
     (lambda m, X, y, g: m.fit(X, y, group=g, sample_weight=np.ones(len(y) - 1)), r"sample_weight has shape \(\d+,\) but there are \d+ rows")],
    ids=["negative-label", "group-sum", "zero-group", "no-groups", "groups-twice", "nan-qid", "empty", "one-row",
         "label-length", "zero-weights", "negative-weight", "nan-weight", "weight-length"],
)
def test_ranker_bad_input_is_named(engine, fit, message):
    X, y, _ = small_data(seed=32)
    sizes = np.array([4, 5, 6, 7])
    X, y = X[: sizes.sum()], y[: sizes.sum()]
    with pytest.raises(ValueError, match=message):
        fit(ranker(engine), X, y, sizes)


@pytest.mark.parametrize("engine", RANKER_ENGINES)
def test_ranker_nan_label_is_named(engine):
    X, y, sizes = small_data(seed=33)
    query = int(np.searchsorted(np.cumsum(sizes), 6, side="right"))
    with pytest.raises(ValueError, match=rf"y contains NaN at row 6 \(query {query}\)"):
        ranker(engine).fit(X, at_row6(y, np.nan), group=sizes)


@pytest.mark.parametrize("objective, bad", [("listmle", -1.0), ("wlistmle", 40.0)])
def test_ranker_label_errors_name_the_callers_row(objective, bad):
    X, y, sizes = small_data(seed=34)
    qid, order = interleaved_qid(sizes)
    X, y, qid = X[order], y[order], qid[order]  # rows of the queries take turns
    y[7] = bad
    with pytest.raises(ValueError, match=r"\[7\] = .* at row 7\b"):
        ranker("lightgbm", getattr(gbrank, objective)()).fit(X, y, qid=qid)


@pytest.mark.parametrize("engine", RANKER_ENGINES)
def test_ranker_trains_the_same_model_for_any_row_order_of_the_queries(engine):
    X, y, sizes = small_data(seed=35)
    qid = np.concatenate([np.full(n, q) for q, n in enumerate(sizes)])
    grouped = ranker(engine).fit(X, y, qid=qid)
    _, order = interleaved_qid(sizes)
    shuffled = ranker(engine).fit(X[order], y[order], qid=qid[order])
    np.testing.assert_array_equal(shuffled.predict(X), grouped.predict(X))
    # contiguous but descending ids: queries are taken by ascending id
    descending = ranker(engine).fit(X, y, qid=qid.max() - qid)
    assert np.isfinite(descending.predict(X)).all()


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("engine", RANKER_ENGINES)
@pytest.mark.parametrize("labels", ["all-equal", "single-document"])
def test_ranker_data_without_order_trains_a_constant_model(engine, labels):
    X, y, sizes = small_data(seed=36)
    if labels == "all-equal":
        y = np.full_like(y, 2.0)
    else:
        sizes = np.ones(len(y), dtype=int)
    pred = ranker(engine).fit(X, y, group=sizes).predict(X)
    assert np.isfinite(pred).all() and np.unique(pred).size == 1


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("engine", RANKER_ENGINES)
def test_ranker_float32_and_float64_features_give_the_same_model(engine):
    X, y, sizes = small_data(seed=37)
    X32 = X.astype(np.float32)
    p32 = ranker(engine).fit(X32, y, group=sizes).predict(X32)
    p64 = ranker(engine).fit(X32.astype(np.float64), y, group=sizes).predict(X32.astype(np.float64))
    np.testing.assert_array_equal(p32, p64)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("engine", RANKER_ENGINES)
def test_ranker_zero_weights_on_some_queries(engine):
    X, y, sizes = small_data(seed=38)
    weight = np.ones(len(y))
    weight[: sizes[0]] = 0.0
    assert np.isfinite(ranker(engine).fit(X, y, group=sizes, sample_weight=weight).predict(X)).all()


# =========================================================================== gbrank.NDCGBoost
def ndcg_boost_model(**kwargs):
    return gbrank.NDCGBoost(n_estimators=3, **kwargs)


@pytest.mark.parametrize(
    "fit, error, message",
    [(lambda m, X, y, g: m.fit(np.where(X > 1, np.nan, X), y, group=g), ValueError, r"Input contains NaN"),
     (lambda m, X, y, g: m.fit(np.where(X > 1, np.inf, X), y, group=g), ValueError, r"Input contains infinity"),
     (lambda m, X, y, g: m.fit(X, at_row6(y, np.nan), group=g), ValueError, r"y_true contains NaN at row 6 \(query 1\)"),
     (lambda m, X, y, g: m.fit(X, at_row6(y, -1), group=g), ValueError, r"y_true must be non-negative; y_true\[6\] = -1 at row 6 \(query 1\)"),
     (lambda m, X, y, g: m.fit(X, at_row6(y, 0.5), group=g), ValueError, r"must hold integers with gain='exp2'.*row 6 \(query 1\)"),
     (lambda m, X, y, g: m.fit(X, at_row6(y, 32), group=g), ValueError, r"y_true\[6\] = 32 at row 6 \(query 1\) exceeds the largest supported label 31"),
     (lambda m, X, y, g: m.fit(X, y), ValueError, r"pass exactly one of group= \(sizes\) or qid="),
     (lambda m, X, y, g: m.fit(X, y, group=g[:-1]), ValueError, r"group sizes sum to \d+ but there are \d+ rows"),
     (lambda m, X, y, g: m.fit(X, y, group=np.insert(g, 1, 0)), ValueError, r"group\[1\] = 0 \(query 1 has no documents\)"),
     (lambda m, X, y, g: m.fit(X, y, qid=np.arange(len(y)) % 2), ValueError, r"contiguous: qid 0 starts blocks at rows 0 and 2"),
     (lambda m, X, y, g: m.fit(X[:0], y[:0], group=[]), ValueError, r"Found array with 0 sample\(s\)"),
     (lambda m, X, y, g: m.fit(X, y[:-1], group=g), ValueError, r"y must be one-dimensional with \d+ entries"),
     (lambda m, X, y, g: m.fit(X, y, group=g).predict(np.full((2, X.shape[1]), np.nan)), ValueError, r"Input contains NaN")],
    ids=["nan-feature", "inf-feature", "nan-label", "negative-label", "non-integer-label", "label-above-31",
         "no-groups", "group-sum", "zero-group", "non-contiguous-qid", "empty", "label-length", "nan-at-predict"],
)
def test_ndcg_boost_bad_input_is_named(fit, error, message):
    X, y, _ = small_data(seed=40)
    sizes = np.array([4, 5, 6, 7])
    X, y = X[: sizes.sum()], y[: sizes.sum()]
    with pytest.raises(error, match=message):
        fit(ndcg_boost_model(), X, y, sizes)


def test_ndcg_boost_non_numeric_labels():
    X, y, sizes = small_data(seed=41)
    with pytest.raises(TypeError, match=r"y_true must be numeric"):
        ndcg_boost_model().fit(X, np.array(["a"] * len(y)), group=sizes)


def test_ndcg_boost_unsorted_qid_is_the_group_sizes():
    X, y, sizes = small_data(seed=42)
    qid = np.repeat(np.arange(len(sizes))[::-1] * 7, sizes)  # contiguous, descending ids
    by_qid = ndcg_boost_model().fit(X, y, qid=qid)
    by_group = ndcg_boost_model().fit(X, y, group=sizes)
    np.testing.assert_array_equal(by_qid.predict(X), by_group.predict(X))


@pytest.mark.parametrize("labels", ["all-equal", "no-relevant", "single-document"])
def test_ndcg_boost_data_without_order_fits_no_stump(labels):
    X, y, sizes = small_data(seed=43)
    if labels == "all-equal":
        y = np.full_like(y, 2.0)
    elif labels == "no-relevant":
        y = np.zeros_like(y)
    else:
        sizes = np.ones(len(y), dtype=int)
    model = ndcg_boost_model().fit(X, y, group=sizes)
    assert model.n_estimators_ == 0
    np.testing.assert_array_equal(model.predict(X), 0.0)


def test_ndcg_boost_float32_huge_features_and_a_long_query():
    X, y, sizes = small_data(seed=44)
    X32 = X.astype(np.float32)
    a = ndcg_boost_model().fit(X32, y, group=sizes).predict(X32)
    np.testing.assert_array_equal(a, ndcg_boost_model().fit(X32.astype(np.float64), y, group=sizes).predict(X32))
    # stumps compare features with thresholds: any finite magnitude works
    huge = ndcg_boost_model().fit(X * 1e300, y, group=sizes)
    np.testing.assert_array_equal(huge.predict(X * 1e300), ndcg_boost_model().fit(X, y, group=sizes).predict(X))
    rng = np.random.default_rng(45)
    n = 10_000
    Xl = rng.normal(size=(n, 3))
    yl = np.clip(np.round(Xl[:, 0] + rng.normal(size=n) + 1), 0, 4)
    model = gbrank.NDCGBoost(n_estimators=2).fit(Xl, yl, group=[n])
    assert model.n_estimators_ == 2 and np.isfinite(model.predict(Xl)).all()
    assert model.history_["M"][-1] < model.initial_M_


# =========================================================================== the page
def test_the_reliability_page_lists_every_row_of_this_file():
    import re
    import sys
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "reliability.md").read_text()
    rows = [line for line in page.splitlines() if re.match(r"^\| \d+ \|", line)]
    numbers = [int(line.split("|")[1]) for line in rows]
    assert numbers == list(range(1, len(rows) + 1)) and len(rows) >= 25
    named = set(re.findall(r"`(test_\w+)`", "\n".join(rows)))
    here = {name for name in dir(sys.modules[__name__]) if name.startswith("test_")}
    assert named <= here, f"the page names tests that do not exist: {sorted(named - here)}"
    assert here - named == {"test_the_reliability_page_lists_every_row_of_this_file"}, sorted(here - named)
