"""Ranking metrics against independent references.

The references (``metric_references.py``) are written from the formulas, in plain Python,
over one explicit ranking at a time; tie policies are checked by enumerating every order of
every tied block.
"""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
import warnings

import numpy as np
import pytest

from gbrank.metrics import (
    err,
    mean_average_precision,
    mean_reciprocal_rank,
    mrr,
    ndcg,
    precision_at_k,
)
from metric_references import (
    TIE_CASES,
    TIE_IDS,
    all_rankings,
    linear_gain,
    per_query_reference,
    ref_ap,
    ref_ndcg,
    ref_precision,
    ref_rr,
    split,
    stable_ranking,
    tiny_tied_data,
)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [None, 1, 2, 3, 5])
@pytest.mark.parametrize("name,func,ref,kwargs,ref_kwargs", TIE_CASES, ids=TIE_IDS)
def test_input_ties_follow_stable_sort(name, func, ref, kwargs, ref_kwargs, k, seed):
    labels, scores, group = tiny_tied_data(seed)
    got = func(labels, scores, group, k, per_query=True, **kwargs)
    want = [
        v[0]
        for v in per_query_reference(
            ref, labels, scores, group, k, lambda s: [stable_ranking(s)], **ref_kwargs
        )
    ]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert func(labels, scores, group, k, **kwargs) == pytest.approx(np.mean(want), abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [None, 1, 2, 3, 5])
@pytest.mark.parametrize("name,func,ref,kwargs,ref_kwargs", TIE_CASES, ids=TIE_IDS)
def test_pessimistic_ties_give_worst_order(name, func, ref, kwargs, ref_kwargs, k, seed):
    labels, scores, group = tiny_tied_data(seed)
    got = func(labels, scores, group, k, ties="pessimistic", per_query=True, **kwargs)
    every = per_query_reference(ref, labels, scores, group, k, all_rankings, **ref_kwargs)
    np.testing.assert_allclose(got, [min(v) for v in every], rtol=0, atol=1e-12)


AVERAGE_CASES = [case for case in TIE_CASES if case[1] is not err]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [None, 1, 2, 3, 5])
@pytest.mark.parametrize(
    "name,func,ref,kwargs,ref_kwargs", AVERAGE_CASES, ids=[c[0] for c in AVERAGE_CASES]
)
def test_average_ties_are_mean_over_all_orders(name, func, ref, kwargs, ref_kwargs, k, seed):
    labels, scores, group = tiny_tied_data(seed)
    got = func(labels, scores, group, k, ties="average", per_query=True, **kwargs)
    every = per_query_reference(ref, labels, scores, group, k, all_rankings, **ref_kwargs)
    np.testing.assert_allclose(got, [np.mean(v) for v in every], rtol=0, atol=1e-12)


@pytest.mark.parametrize("k", [1, 3, 7, 12])
def test_average_ties_on_a_long_tied_block_cut_by_k(k):
    """A tied block much longer than k: the cut falls inside it (the case the kernels
    handle by scanning the whole query)."""
    labels = np.array([1, 0, 0, 2, 0, 1, 0, 0, 3, 0, 1, 0], dtype=np.float64)
    scores = np.array([5, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1], dtype=np.float64)
    group = [12]
    # Every order of the 10 tied rows is equally likely, so the mean over the distinct label
    # sequences of the block (each stands for the same number of row orders) is the mean
    # over all 10! orders.
    block = [i for i in range(12) if scores[i] == 1]
    distinct = set(itertools.permutations([labels[i] for i in block]))
    before = [0]
    after = [9]
    for func, ref in [
        (ndcg, ref_ndcg),
        (mean_average_precision, ref_ap),
        (mean_reciprocal_rank, ref_rr),
        (precision_at_k, ref_precision),
    ]:
        values = []
        for perm in distinct:
            ranked_labels = [labels[i] for i in before] + list(perm) + [labels[i] for i in after]
            values.append(ref(ranked_labels, list(range(12)), k))
        # Each distinct label sequence stands for the same number of row orders.
        assert func(labels, scores, group, k, ties="average") == pytest.approx(
            np.mean(values), abs=1e-12
        )


def test_err_average_ties_not_implemented():
    with pytest.raises(NotImplementedError, match="ties='average' is not implemented for ERR"):
        err([1, 0], [0.5, 0.5], [2], ties="average")


# ---------------------------------------------------------------------------------------
# Worked example of metric-conventions.md and hand-computed discounts.

EX_LABELS = np.array([2, 0, 0, 1, 3, 1], dtype=np.float64)
EX_SCORES = np.array([0.9, 0.8, 0.5, 0.5, 0.5, 0.1])
EX_GROUP = [6]


def test_worked_example_input_order():
    assert ndcg(EX_LABELS, EX_SCORES, EX_GROUP, 3) == pytest.approx(0.319394, abs=1e-6)
    assert ndcg(EX_LABELS, EX_SCORES, EX_GROUP, 3, gain="linear") == pytest.approx(
        0.420004, abs=1e-6
    )
    assert ndcg(EX_LABELS, EX_SCORES, EX_GROUP, 6) == pytest.approx(0.661157, abs=1e-6)
    assert ndcg(EX_LABELS, EX_SCORES, EX_GROUP, 6, gain="linear") == pytest.approx(
        0.760215, abs=1e-6
    )
    assert mean_average_precision(EX_LABELS, EX_SCORES, EX_GROUP, 6) == pytest.approx(
        0.691667, abs=1e-6
    )
    assert mean_average_precision(EX_LABELS, EX_SCORES, EX_GROUP, 3) == pytest.approx(
        1 / 3, abs=1e-12
    )


def test_worked_example_tie_averaged():
    assert ndcg(EX_LABELS, EX_SCORES, EX_GROUP, 3, gain="linear", ties="average") == pytest.approx(
        0.560005, abs=1e-6
    )
    assert ndcg(EX_LABELS, EX_SCORES, EX_GROUP, 6, gain="linear", ties="average") == pytest.approx(
        0.792082, abs=1e-6
    )


def test_worked_example_matches_scikit_learn_tie_average():
    from sklearn.metrics import ndcg_score

    for k in (1, 2, 3, 4, 5, 6):
        want = ndcg_score([EX_LABELS], [EX_SCORES], k=k)
        assert ndcg(
            EX_LABELS, EX_SCORES, EX_GROUP, k, gain="linear", ties="average"
        ) == pytest.approx(want, abs=1e-12)


def test_worked_example_in_trec_eval_order():
    # trec_eval breaks the tie (d3, d4, d5) by docno descending: d5, d4, d3. Listing the rows
    # in that order makes it the input order.
    order = [0, 1, 4, 3, 2, 5]
    lab, sco = EX_LABELS[order], EX_SCORES[order]
    assert ndcg(lab, sco, EX_GROUP, 3, gain="linear") == pytest.approx(0.735007, abs=1e-6)
    assert ndcg(lab, sco, EX_GROUP, 6, gain="linear") == pytest.approx(0.825586, abs=1e-6)
    assert mean_average_precision(lab, sco, EX_GROUP, denominator="R") == pytest.approx(
        0.770833, abs=1e-6
    )
    assert mean_average_precision(lab, sco, EX_GROUP, 3, denominator="R") == pytest.approx(
        0.416667, abs=1e-6
    )


def test_zipf_discount_by_hand():
    # Input order ranks labels 2, 0, 0, 1, 3, 1. Ideal: 3, 2, 1, 1, 0, 0.
    dcg = 2 / 1 + 1 / 4 + 3 / 5 + 1 / 6  # = 181/60
    ideal = 3 / 1 + 2 / 2 + 1 / 3 + 1 / 4  # = 55/12
    assert dcg / ideal == pytest.approx(181 / 275, abs=1e-15)
    got = ndcg(EX_LABELS, EX_SCORES, EX_GROUP, gain="linear", discount="zipf")
    assert got == pytest.approx(181 / 275, abs=1e-12)
    # exp2 gain at k = 3: DCG = 3/1, ideal = 7/1 + 3/2 + 1/3 = 53/6.
    assert ndcg(EX_LABELS, EX_SCORES, EX_GROUP, 3, discount="zipf") == pytest.approx(
        18 / 53, abs=1e-12
    )


def test_polynomial_discount_by_hand():
    # D(r) = r ** -0.5.
    dcg = 2 + 1 / math.sqrt(4) + 3 / math.sqrt(5) + 1 / math.sqrt(6)
    ideal = 3 + 2 / math.sqrt(2) + 1 / math.sqrt(3) + 1 / math.sqrt(4)
    got = ndcg(EX_LABELS, EX_SCORES, EX_GROUP, gain="linear", discount=0.5)
    assert got == pytest.approx(dcg / ideal, abs=1e-12)
    assert got == pytest.approx(0.773894, abs=1e-6)
    # beta = 2 at k = 4: DCG = 2 + 1/16, ideal = 3 + 2/4 + 1/9 + 1/16.
    got = ndcg(EX_LABELS, EX_SCORES, EX_GROUP, 4, gain="linear", discount=2.0)
    assert got == pytest.approx((2 + 1 / 16) / (3 + 1 / 2 + 1 / 9 + 1 / 16), abs=1e-12)


def test_discount_and_gain_arrays():
    disc = [1.0, 0.5, 0.25]  # ranks past 3 get 0
    gain = [0.0, 10.0, 20.0, 40.0]
    got = ndcg(EX_LABELS, EX_SCORES, EX_GROUP, gain=gain, discount=disc)
    assert got == pytest.approx((20 * 1.0) / (40 * 1.0 + 20 * 0.5 + 10 * 0.25), abs=1e-12)


def test_map_denominators_by_hand():
    labels = [1, 0, 1, 1]
    scores = [4.0, 3.0, 2.0, 1.0]
    # Relevant at ranks 1, 3, 4. At k = 2 only rank 1 counts: P@1 = 1.
    assert mean_average_precision(labels, scores, [4], 2) == pytest.approx(1 / 2)
    assert mean_average_precision(labels, scores, [4], 2, denominator="R") == pytest.approx(1 / 3)
    full = (1 + 2 / 3 + 3 / 4) / 3
    assert mean_average_precision(labels, scores, [4]) == pytest.approx(full)
    assert mean_average_precision(labels, scores, [4], denominator="R") == pytest.approx(full)


def test_precision_and_mrr_by_hand():
    labels = [0, 0, 2, 1]
    scores = [4.0, 3.0, 2.0, 1.0]
    assert mrr(labels, scores, [4]) == pytest.approx(1 / 3)
    assert mean_reciprocal_rank(labels, scores, [4], 2) == 0.0
    assert precision_at_k(labels, scores, [4], 3) == pytest.approx(1 / 3)
    assert precision_at_k(labels, scores, [4], 10) == pytest.approx(2 / 10)
    assert precision_at_k(labels, scores, [4], 10, divide_by="min_kn") == pytest.approx(2 / 4)
    assert precision_at_k(labels, scores, [4]) == pytest.approx(2 / 4)
    assert precision_at_k(labels, scores, [4], 3, relevance_threshold=1.0) == pytest.approx(1 / 3)
    assert mrr(labels, scores, [4], relevance_threshold=1.5) == pytest.approx(1 / 3)


def test_err_by_hand():
    labels = [1, 0, 2]
    scores = [3.0, 2.0, 1.0]
    r1, r3 = (2**1 - 1) / 4, (2**2 - 1) / 4
    want = r1 + (1 - r1) * r3 / 3
    assert err(labels, scores, [3]) == pytest.approx(want, abs=1e-15)
    assert err(labels, scores, [3], 2) == pytest.approx(r1, abs=1e-15)
    # A larger grade scale lowers every stop probability.
    r1, r3 = 1 / 16, 3 / 16
    assert err(labels, scores, [3], max_label=4) == pytest.approx(r1 + (1 - r1) * r3 / 3, abs=1e-15)


# ---------------------------------------------------------------------------------------
# Conventions: queries without relevant documents, float32, long lists.

ALL_METRICS = [ndcg, mean_average_precision, mean_reciprocal_rank, precision_at_k, err]


@pytest.mark.parametrize("func", ALL_METRICS)
def test_no_relevant_conventions(func):
    labels = [0, 0, 0, 1, 0, 2]
    scores = [0.3, 0.2, 0.1, 0.1, 0.9, 0.5]
    group = [3, 3]
    second = func(labels, scores, group, per_query=True)[1]
    assert 0 < second < 1
    np.testing.assert_allclose(func(labels, scores, group, per_query=True), [1.0, second])
    np.testing.assert_allclose(
        func(labels, scores, group, no_relevant=0.0, per_query=True), [0.0, second]
    )
    per_query = func(labels, scores, group, no_relevant="exclude", per_query=True)
    assert np.isnan(per_query[0]) and per_query[1] == second
    assert func(labels, scores, group, no_relevant="exclude") == second
    assert func(labels, scores, group) == pytest.approx((1 + second) / 2)
    assert func(labels, scores, group, no_relevant=0.0) == pytest.approx(second / 2)


@pytest.mark.parametrize("func", ALL_METRICS)
def test_all_queries_excluded_warns_and_returns_nan(func):
    with pytest.warns(RuntimeWarning, match="no query has a relevant document"):
        value = func([0, 0, 0], [1.0, 2.0, 3.0], [2, 1], no_relevant="exclude")
    assert np.isnan(value)


@pytest.mark.parametrize("func", ALL_METRICS)
def test_single_document_queries(func):
    # A lone relevant document is ranked first, so every metric is 1 (ERR: its stop
    # probability); a lone irrelevant one takes no_relevant.
    values = func([1, 0, 2], [0.3, -1.0, 5.0], [1, 1, 1], no_relevant=0.0, per_query=True)
    want = [1 / 4, 0.0, 3 / 4] if func is err else [1.0, 0.0, 1.0]
    np.testing.assert_allclose(values, want, rtol=0, atol=1e-15)


@pytest.mark.parametrize("func", ALL_METRICS)
def test_float32_input_gives_the_float64_result(func):
    labels, scores, group = tiny_tied_data(3, n_queries=6)
    want = func(labels, scores, group, 3, per_query=True)
    got = func(
        labels.astype(np.float32),
        scores.astype(np.float32),
        group.astype(np.int32),
        3,
        per_query=True,
    )
    np.testing.assert_array_equal(got, want)
    got = func(labels.astype(np.int64), scores.astype(np.float32), list(group), 3, per_query=True)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("ties", ["input", "pessimistic", "average"])
def test_long_query_with_extreme_scores(ties):
    rng = np.random.default_rng(7)
    n = 10_000
    labels = rng.integers(0, 5, n).astype(np.float64)
    scores = rng.choice([-1e4, -1.0, 0.0, 3.5, 1e4], size=n) + rng.integers(0, 50, n)
    for k in (10, 100, None):
        got = ndcg(labels, scores, [n], k, ties=ties)
        assert np.isfinite(got)
        if ties == "input":
            want = ref_ndcg(list(labels), stable_ranking(list(scores)), k)
            assert got == pytest.approx(want, abs=1e-12)
        if ties == "pessimistic":
            ranking = sorted(range(n), key=lambda i: (-scores[i], labels[i]))
            assert got == pytest.approx(ref_ndcg(list(labels), ranking, k), abs=1e-12)
        if ties == "average":
            from sklearn.metrics import ndcg_score

            # scikit-learn averages over tied orders and takes y_true as the gains.
            want = ndcg_score([2.0**labels - 1.0], [scores], k=k)
            assert got == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("ties", ["input", "pessimistic"])
@pytest.mark.parametrize("name,func,ref,kwargs,ref_kwargs", TIE_CASES, ids=TIE_IDS)
def test_large_cutoffs_use_the_sorting_path(name, func, ref, kwargs, ref_kwargs, ties):
    """k above the insertion limit goes through a full sort; both paths must agree with the
    reference."""
    rng = np.random.default_rng(11)
    group = rng.integers(30, 120, 20)
    n = int(group.sum())
    labels = rng.integers(0, 4, n).astype(np.float64)
    scores = rng.integers(0, 25, n).astype(np.float64)

    def ranking(lab, sco):
        if ties == "input":
            return stable_ranking(sco)
        return sorted(range(len(sco)), key=lambda i: (-sco[i], lab[i]))

    for k in (5, 40, 100, None):
        got = func(labels, scores, group, k, ties=ties, per_query=True, **kwargs)
        want = [
            ref(lab, ranking(lab, sco), k, **ref_kwargs)
            for lab, sco in zip(split(labels, group), split(scores, group))
        ]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("k", [10, 35, 50, None])
@pytest.mark.parametrize(
    "func,ref",
    [
        (ndcg, ref_ndcg),
        (mean_average_precision, ref_ap),
        (mean_reciprocal_rank, ref_rr),
        (precision_at_k, ref_precision),
    ],
)
def test_average_ties_on_a_block_of_40(func, ref, k):
    """A tied block of 40 rows holding 3 relevant ones, behind 12 untied rows: the mean over
    the C(40, 3) placements of the relevant rows is the mean over all 40! orders."""
    rng = np.random.default_rng(3)
    head = 12
    labels = np.concatenate((rng.integers(0, 2, head), np.zeros(40), rng.integers(0, 2, 8))).astype(
        np.float64
    )
    labels[head + np.array([0, 17, 39])] = 1.0
    scores = np.concatenate(
        (np.arange(100.0, 100.0 - head, -1), np.full(40, 50.0), np.arange(8.0)[::-1])
    )
    values = []
    for placed in itertools.combinations(range(40), 3):
        block = np.zeros(40)
        block[list(placed)] = 1.0
        ranked = list(labels[:head]) + list(block) + list(labels[head + 40 :])
        values.append(ref(ranked, list(range(len(ranked))), k))
    got = func(labels, scores, [labels.size], k, ties="average")
    assert got == pytest.approx(np.mean(values), abs=1e-12)


def test_huge_linear_labels():
    labels = np.array([1e6, 0.0, 3e7, 2.5])
    assert ndcg(labels, [1.0, 2.0, 3.0, 4.0], [4], gain="linear") == pytest.approx(
        ref_ndcg(list(labels), [3, 2, 1, 0], None, gain=linear_gain), abs=1e-12
    )


def test_importing_compiles_nothing():
    code = (
        "import importlib\n"
        "mods = [importlib.import_module('gbrank.metrics.' + m) for m in ('ndcg', 'average_precision', "
        "'reciprocal_rank', 'precision', 'err', '_ranking')]\n"
        "from numba.core.registry import CPUDispatcher\n"
        "kernels = [v for m in mods for v in vars(m).values() if isinstance(v, CPUDispatcher)]\n"
        "assert len(kernels) >= 10, kernels\n"
        "compiled = [k.py_func.__name__ for k in kernels if k.signatures]\n"
        "assert not compiled, compiled\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------------------
# Bad input: a clear error naming the problem.

# labels, scores and group sizes of one valid query, for the checks of bad settings
TWO_DOCS = ([1, 0], [1.0, 2.0], [2])


@pytest.mark.parametrize(
    "call,error,match",
    [
        (
            lambda: ndcg([1, 0], [np.nan, 1.0], [2]),
            ValueError,
            r"y_pred contains NaN at row 0 \(query 0\); scores must be finite",
        ),
        (
            lambda: mean_average_precision([1, 0, 1], [1.0, 2.0, np.inf], [1, 2]),
            ValueError,
            r"inf at row 2 \(query 1\)",
        ),
        (lambda: ndcg([1, -1], [1.0, 2.0], [2]), ValueError, r"non-negative; y_true\[1\] = -1"),
        (lambda: mrr([1, -1], [1.0, 2.0], [2]), ValueError, "non-negative"),
        (
            lambda: ndcg([1, 0.5], [1.0, 2.0], [2]),
            ValueError,
            r"integers with gain='exp2'.*y_true\[1\] = 0.5 at row 1 \(query 0\)",
        ),
        (lambda: err([1, 0.5], [1.0, 2.0], [2]), ValueError, r"integers for ERR"),
        (
            lambda: ndcg([32, 0], [1.0, 2.0], [2]),
            ValueError,
            "exceeds the largest supported label 31",
        ),
        (
            lambda: err([32, 0], [1.0, 2.0], [2]),
            ValueError,
            "exceeds the largest supported label 31",
        ),
        (
            lambda: err([4, 0], [1.0, 2.0], [2], max_label=3),
            ValueError,
            "exceeds the largest supported label 3",
        ),
        (
            lambda: ndcg([3, 0], [1.0, 2.0], [2], gain=[0, 1, 3]),
            ValueError,
            "gain array of length 3",
        ),
        (
            lambda: ndcg([np.nan, 0], [1.0, 2.0], [2], gain="linear"),
            ValueError,
            "labels must be finite",
        ),
        (lambda: ndcg([], [], []), ValueError, "empty input"),
        (lambda: precision_at_k([], [], [0]), ValueError, "empty input"),
        (
            lambda: ndcg([1, 0, 1], [1.0, 2.0], [3]),
            ValueError,
            "y_pred has 2 rows but the labels have 3",
        ),
        (
            lambda: ndcg([1, 0, 1], [1.0, 2.0, 3.0], [2]),
            ValueError,
            "group sizes sum to 2 but there are 3 rows",
        ),
        (
            lambda: ndcg([1, 0, 1], [1.0, 2.0, 3.0], [3, 0]),
            ValueError,
            "group sizes must be positive",
        ),
        (lambda: ndcg([1, 0], [1.0, 2.0], None), ValueError, "query groups are required"),
        (lambda: ndcg([[1, 0]], [1.0, 2.0], [2]), ValueError, "y_true must be one-dimensional"),
        (lambda: ndcg([1, 0], [[1.0, 2.0]], [2]), ValueError, "y_pred must be one-dimensional"),
        (lambda: ndcg([1, 0], [1.0, 2.0], [2], k=0), ValueError, "k must be a positive integer"),
        (lambda: ndcg([1, 0], [1.0, 2.0], [2], k=2.5), TypeError, "k must be a positive integer"),
        (lambda: ndcg([1, 0], [1.0, 2.0], [2], k=True), TypeError, "k must be a positive integer"),
        (lambda: ndcg([1, 0], [1.0, 2.0], [2], ties="random"), ValueError, "ties must be"),
        (lambda: ndcg([1, 0], [1.0, 2.0], [2], gain="log"), ValueError, "gain must be"),
        (lambda: ndcg([1, 0], [1.0, 2.0], [2], discount=-1.0), ValueError, "beta > 0"),
        (lambda: ndcg(*TWO_DOCS, no_relevant="skip"), ValueError, "no_relevant must be"),
        (lambda: ndcg(*TWO_DOCS, no_relevant=np.nan), ValueError, "no_relevant must be finite"),
        (lambda: mean_average_precision(*TWO_DOCS, denominator="k"), ValueError, "denominator"),
        (lambda: precision_at_k(*TWO_DOCS, divide_by="n"), ValueError, "divide_by must be"),
        (
            lambda: mrr(*TWO_DOCS, relevance_threshold=np.nan),
            ValueError,
            "relevance_threshold must be finite",
        ),
        (lambda: err(*TWO_DOCS, max_label=40), ValueError, r"max_label must be in 0 \.\. 31"),
        (lambda: ndcg(["a", "b"], [1.0, 2.0], [2]), TypeError, "y_true must be numeric"),
        (lambda: ndcg([1, 0], ["a", "b"], [2]), TypeError, "y_pred must be numeric"),
    ],
)
def test_bad_input_is_named(call, error, match):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(error, match=match):
            call()


# ---------------------------------------------------------------------------------------
# trec_eval conventions: equality with pytrec_eval on tie-free scores.


def test_matches_pytrec_eval_under_trec_conventions():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(5)
    group = rng.integers(1, 40, 60)
    n = int(group.sum())
    labels = rng.choice(4, size=n, p=[0.6, 0.2, 0.15, 0.05]).astype(np.float64)
    labels[: group[0]] = 0.0  # one query without relevant documents
    # A permutation of integers: tie-free and exact in float32, which pytrec_eval uses.
    scores = rng.permutation(n).astype(np.float64)
    offsets = np.concatenate(([0], np.cumsum(group)))
    qrel, run = {}, {}
    for q in range(group.size):
        docs = [f"d{i}" for i in range(offsets[q], offsets[q + 1])]
        qrel[f"q{q:03d}"] = dict(
            zip(docs, labels[offsets[q] : offsets[q + 1]].astype(int).tolist())
        )
        run[f"q{q:03d}"] = dict(zip(docs, scores[offsets[q] : offsets[q + 1]].tolist()))
    measures = {
        "ndcg",
        "ndcg_cut.5",
        "ndcg_cut.10",
        "map",
        "map_cut.5",
        "map_cut.10",
        "recip_rank",
        "P.5",
        "P.10",
    }
    result = pytrec_eval.RelevanceEvaluator(qrel, measures).evaluate(run)
    assert len(result) == group.size

    def trec(name):
        return np.array([result[f"q{q:03d}"][name] for q in range(group.size)])

    trec_conv = {"no_relevant": 0.0, "per_query": True}
    np.testing.assert_allclose(
        ndcg(labels, scores, group, gain="linear", **trec_conv), trec("ndcg"), atol=1e-12
    )
    for k in (5, 10):
        np.testing.assert_allclose(
            ndcg(labels, scores, group, k, gain="linear", **trec_conv),
            trec(f"ndcg_cut_{k}"),
            atol=1e-12,
        )
        np.testing.assert_allclose(
            mean_average_precision(labels, scores, group, k, denominator="R", **trec_conv),
            trec(f"map_cut_{k}"),
            atol=1e-12,
        )
        np.testing.assert_allclose(
            precision_at_k(labels, scores, group, k, **trec_conv), trec(f"P_{k}"), atol=1e-12
        )
    np.testing.assert_allclose(
        mean_average_precision(labels, scores, group, denominator="R", **trec_conv),
        trec("map"),
        atol=1e-12,
    )
    np.testing.assert_allclose(
        mrr(labels, scores, group, **trec_conv), trec("recip_rank"), atol=1e-12
    )
