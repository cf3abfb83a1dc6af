"""Precision at k, averaged over queries."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._common import NoRelevant, check_binary, check_binary_inputs, check_choice
from ._common import ranked, reduce_queries, shared_doc
from ._ranking import chunk_bounds, chunk_count, count_above, cutoff, rank_top, scratch, tie_block

__all__ = ["precision_at_k"]

DIVIDE_BY = {"k": 0, "min_kn": 1}


@njit(cache=True)
def _precision_query(
    labels, scores, lo, hi, k, threshold, shrink, fill, buffers, by_sort, average
):
    kk = cutoff(k, lo, hi)
    if count_above(labels, lo, hi, threshold) == 0:
        return fill
    order = rank_top(scores, lo, hi, kk, buffers, by_sort)
    hits = 0.0
    if average is None:
        for r in range(kk):
            if labels[lo + order[r]] > threshold:
                hits += 1.0
    else:
        # Each rank of a tied block holds a relevant document with probability c / m.
        start = 0
        while start < kk:
            end, m, _, c = tie_block(scores, labels, lo, hi, order, start, kk, threshold)
            hits += c * (end - start) / m
            start = end
    if k == 0:
        return hits / (hi - lo)
    return hits / (kk if shrink else k)


@njit(parallel=True, cache=True)
def _precision_kernel(
    labels, scores, kmax, longest, by_sort, average, offsets, k, threshold, shrink, fill
):
    out = np.empty(offsets.size - 1)
    for chunk in prange(chunk_count(out.size)):
        buffers = scratch(kmax, longest)
        for q in range(*chunk_bounds(chunk, out.size)):
            lo, hi = offsets[q], offsets[q + 1]
            out[q] = _precision_query(
                labels, scores, lo, hi, k, threshold, shrink, fill, buffers, by_sort, average
            )
    return out


def _check_options(k, *, ties="input", no_relevant=1.0, relevance_threshold=0.0, divide_by="k"):
    """Fail on a bad setting before any data is read."""
    shrink = check_choice(divide_by, DIVIDE_BY, "divide_by") == 1
    return (*check_binary(k, ties, no_relevant, relevance_threshold), shrink)


@shared_doc
def precision_at_k(
    y_true,
    y_pred,
    group,
    k: int | None = None,
    *,
    ties: str = "input",
    no_relevant: NoRelevant = 1.0,
    relevance_threshold: float = 0.0,
    divide_by: str = "k",
    per_query: bool = False,
):
    r"""Precision at ``k``: the fraction of relevant documents among the top ``k``.

    .. math::

        \mathrm{P@k} = \frac{1}{K} \sum_{r=1}^{\min(k, n)} \mathrm{rel}_r,

    with :math:`\mathrm{rel}_r = 1` when the label at rank :math:`r` exceeds
    ``relevance_threshold``, and :math:`K = k` (``divide_by="k"``, trec_eval and ranx: a short
    list counts its missing ranks as non-relevant) or :math:`K = \min(k, n)`
    (``divide_by="min_kn"``, XGBoost's ``pre@k``). ``k=None`` gives :math:`K = n`.

    Parameters
    ----------
    y_true : array-like of shape (n_rows,)
        Labels, finite and non-negative.
    %(scores_group_k)s
    ties : {"input", "pessimistic", "average"}, default="input"
        ``"input"``: stable, input row order. ``"pessimistic"``: lower labels first within a
        tied block. ``"average"``: exact expectation over the orders of every tied block (a
        block cut by ``k`` contributes ``c / m`` per rank above the cut).
    no_relevant : float or "exclude", default=1.0
        Value of a query without relevant documents: ``1.0`` (LightGBM's convention for its
        ranking metrics), ``0.0`` (trec_eval, XGBoost), or ``"exclude"`` (left out of the
        mean; NaN with ``per_query=True``; a mean over no query is NaN with a
        ``RuntimeWarning``).
    relevance_threshold : float, default=0.0
        Relevant means ``label > relevance_threshold``.
    divide_by : {"k", "min_kn"}, default="k"
        See the formula.
    %(per_query_returns)s
    """
    k, tie_code, fill, threshold, shrink = _check_options(
        k,
        ties=ties,
        no_relevant=no_relevant,
        relevance_threshold=relevance_threshold,
        divide_by=divide_by,
    )
    labels, scores, offsets = check_binary_inputs(y_true, y_pred, group)
    rows = ranked(labels, scores, offsets, k, tie_code)
    values = _precision_kernel(*rows, offsets, k, threshold, shrink, fill)
    return reduce_queries(values, fill, per_query)
