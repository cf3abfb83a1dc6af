"""Bad and extreme inputs to the objectives called directly (docs/reliability.md, first table).

``obj.grad_hess(y_true, y_pred, group, weight)`` and ``obj.loss(...)`` of every registered
objective and example setting: an error whose message names the problem and where it is
(row and query), or a documented result.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gbrank
from gbrank.groups import qid_to_sizes
from helpers import G, S, Y, at_row6, check_finite
from objective_cases import Case, case_labels, ids, label_kind, linear_gain, objective_cases


def catalogue():
    """The cases of this file: (all, the integer-label ``2**l - 1`` ones, the order-only ones,
    the ``2**l - 1`` ones that take any label with a linear gain)."""
    cases = list(objective_cases().values())
    exp2 = [c for c in cases if label_kind(c) == "exp2"]
    linear = [c for c in exp2 if linear_gain(c) and label_kind(Case(c.id, c.spec, {**c.kwargs, **linear_gain(c)})) == "any"]
    return cases, exp2, [c for c in cases if label_kind(c) == "order"], linear


CASES, EXP2, ORDER_ONLY, LINEAR = catalogue()


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
@pytest.mark.parametrize("bad, shown", [(np.nan, "NaN"), (np.inf, "inf"), (-np.inf, "-inf")])
def test_objective_non_finite_score_is_named(case, bad, shown):
    obj = case.build()
    message = rf"y_pred contains {shown} at row 6 \(query 1\); scores must be finite"
    with pytest.raises(ValueError, match=message):
        obj.grad_hess(case_labels(case, Y), at_row6(S, bad), G)
    with pytest.raises(ValueError, match=message):
        obj.loss(case_labels(case, Y), at_row6(S, bad), G)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
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
def test_objective_bad_groups_are_named(case, group, message):
    with pytest.raises(ValueError, match=message):
        case.build().grad_hess(case_labels(case, Y), S, group)


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


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
@pytest.mark.parametrize(
    "bad, message",
    [(-1.0, r"y_true must be non-negative; y_true\[6\] = -1 at row 6 \(query 1\)"),
     (np.nan, r"y_true contains NaN at row 6 \(query 1\); labels must be finite"),
     (np.inf, r"y_true contains inf at row 6 \(query 1\); labels must be finite")],
    ids=["negative", "nan", "inf"],
)
def test_objective_bad_label_is_named(case, bad, message):
    with pytest.raises(ValueError, match=message):
        case.build().grad_hess(at_row6(case_labels(case, Y), bad), S, G)


@pytest.mark.parametrize("case", EXP2, ids=ids(EXP2))
@pytest.mark.parametrize(
    "bad, message",
    [(0.5, r"y_true must hold integers (with (gain|target)='exp2'|for ERR).*y_true\[6\] = 0\.5 at row 6 \(query 1\)"),
     (32.0, r"y_true\[6\] = 32 at row 6 \(query 1\) exceeds the largest supported label 31 (with (gain|target)='exp2'|for ERR)")],
    ids=["non-integer", "above-31"],
)
def test_exp2_objectives_reject_labels_outside_the_gain_table(case, bad, message):
    with pytest.raises(ValueError, match=message):
        case.build().grad_hess(at_row6(case_labels(case, Y), bad), S, G)


@pytest.mark.parametrize("case", ORDER_ONLY, ids=ids(ORDER_ONLY))
def test_order_only_objectives_use_only_the_order_of_the_labels(case):
    # non-integer labels and labels far above 31 are accepted: only their order matters
    obj = case.build()
    ranks = np.array([2, 1, 0, 1, 0, 3, 0, 2, 1], dtype=float)
    odd = np.array([7.5, 0.25, 0.0, 0.25, 0.0, 1e6, 0.0, 40.0, 3.5])
    for a, b in zip(obj.grad_hess(ranks, S, G), obj.grad_hess(odd, S, G)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("case", LINEAR, ids=ids(LINEAR))
def test_exp2_objectives_take_any_label_with_a_linear_gain(case):
    check_finite(case.build(**linear_gain(case)), np.array([7.5, 0.25, 0.0, 0.25, 0.0, 1e6, 0.0, 40.0, 3.5]), S, G)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_objective_non_numeric_labels(case):
    with pytest.raises(TypeError, match=r"y_true must be numeric, got dtype <U1"):
        case.build().grad_hess(np.array(list("abcdefghi")), S, G)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
@pytest.mark.parametrize("labels", ["all-equal", "single-document"])
def test_queries_without_order_get_zero_gradient(case, labels):
    obj = case.build()
    if labels == "all-equal":
        y, group = case_labels(case, np.full(9, 2.0)), G
    else:
        y, group = case_labels(case, Y), [1] * 9
    grad, hess = obj.grad_hess(y, S, group)
    if not obj.ignores_orderless_queries and (labels == "all-equal" or not obj.shift_invariant):
        # documented: the loss keeps every query (the click objectives' unbiased estimate), and
        # a loss that reads absolute scores (a pointwise term) single documents too
        assert np.abs(grad).max() > 0
        return
    np.testing.assert_array_equal(grad, 0.0)
    np.testing.assert_array_equal(hess, obj.hess_floor)
    # the loss does not depend on the scores (NDCG_Boost's M_q holds a constant for tied pairs)
    assert obj.loss(y, S, group) == obj.loss(y, -3 * S[::-1], group)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_empty_input_gives_empty_output(case):
    obj = case.build()
    grad, hess = obj.grad_hess(np.zeros(0), np.zeros(0), [])
    assert grad.shape == hess.shape == (0,) and grad.dtype == np.float64
    assert obj.loss(np.zeros(0), np.zeros(0), []) == 0.0



@pytest.mark.parametrize("magnitude", [1e4, 1e30, 1e300])
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_extreme_scores_stay_finite_and_exact(case, magnitude):
    # finite, non-negative hessians, and gradients that still sum to zero per query (for the
    # log-space kernels beyond 1e4, exactness is the stable-reference row below)
    obj = case.build()
    rng = np.random.default_rng(3)
    for s in (np.sign(rng.normal(size=9)) * magnitude, rng.normal(size=9) * magnitude,
              np.where(np.arange(9) % 2, magnitude, -magnitude)):
        check_finite(obj, case_labels(case, Y), s, G)
        assert np.isfinite(obj.loss(case_labels(case, Y), s, G))


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


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_scores_near_the_float64_maximum_keep_finite_gradients(case):
    # the loss itself may overflow to inf here (score gaps beyond 1e308), the gradient must not
    s = np.array([1.7e308, -1.7e308, 1e308, 0.0, 1.7e308, 1.7e308, -1.7e308, 5.0, 8e307])
    with np.errstate(over="ignore", invalid="ignore"):
        check_finite(case.build(), case_labels(case, Y), s, G)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_ten_thousand_document_query(case):
    rng = np.random.default_rng(4)
    n = 10_000
    y = case_labels(case, rng.integers(0, 5, size=n).astype(float))
    s = rng.uniform(-1e4, 1e4, size=n)
    obj = case.build()
    grad, _ = check_finite(obj, y, s, [n])
    assert np.abs(grad).max() > 0
    assert np.isfinite(obj.loss(y, s, [n]))


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_float32_inputs_give_the_float64_result(case):
    rng = np.random.default_rng(5)
    s32 = rng.normal(size=9).astype(np.float32)
    w32 = rng.uniform(0.5, 2.0, size=9).astype(np.float32)
    obj = case.build()
    out32 = obj.grad_hess(case_labels(case, Y).astype(np.float32), s32, np.array(G, dtype=np.int32), w32)
    out64 = obj.grad_hess(case_labels(case, Y), s32.astype(np.float64), G, w32.astype(np.float64))
    for a, b in zip(out32, out64):
        assert a.dtype == np.float64
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_zero_weights_silence_rows(case):
    obj = case.build()
    weight = np.ones(9)
    weight[[1, 6]] = 0.0
    grad, hess = obj.grad_hess(case_labels(case, Y), S, G, weight)
    grad1, hess1 = obj.grad_hess(case_labels(case, Y), S, G)
    np.testing.assert_array_equal(grad[[1, 6]], 0.0)
    np.testing.assert_array_equal(hess[[1, 6]], 0.0)
    keep = weight > 0
    np.testing.assert_array_equal(grad[keep], grad1[keep])
    np.testing.assert_array_equal(hess[keep], hess1[keep])
    zero = obj.grad_hess(case_labels(case, Y), S, G, np.zeros(9))
    np.testing.assert_array_equal(zero[0], 0.0)
    np.testing.assert_array_equal(zero[1], 0.0)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
@pytest.mark.parametrize(
    "bad, message",
    [(-1.0, r"weight must be non-negative; weight\[6\] = -1 at row 6 \(query 1\)"),
     (np.nan, r"weight contains NaN at row 6 \(query 1\); weights must be finite")],
    ids=["negative", "nan"],
)
def test_bad_weight_is_named(case, bad, message):
    with pytest.raises(ValueError, match=message):
        case.build().grad_hess(case_labels(case, Y), S, G, at_row6(np.ones(9), bad))


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
@pytest.mark.parametrize(
    "call, message",
    [(lambda o, y: o.grad_hess(y, S[:8], G), r"y_pred has 8 rows but the labels have 9"),
     (lambda o, y: o.grad_hess(y, np.stack([S, S], axis=1), G), r"y_pred must be one-dimensional, got shape \(9, 2\)"),
     (lambda o, y: o.grad_hess(y, S, G, np.ones(8)), r"weight has shape \(8,\) but there are 9 rows"),
     (lambda o, y: o.grad_hess(y[:8], S, [4, 4]), r"y_pred has 9 rows but the labels have 8"),
     (lambda o, y: o.loss(y, S[:8], G), r"y_pred has 8 rows but the labels have 9")],
    ids=["scores", "2d-scores", "weights", "labels", "loss"],
)
def test_mismatched_lengths_are_named(case, call, message):
    with pytest.raises(ValueError, match=message):
        call(case.build(), case_labels(case, Y))


def test_no_warning_leaks_from_valid_input():
    # the happy path of every objective is silent (no RuntimeWarning from numpy)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for case in CASES:
            obj = case.build()
            obj.grad_hess(case_labels(case, Y), S, G)
            obj.loss(case_labels(case, Y), S, G)
