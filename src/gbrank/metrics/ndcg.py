"""Normalized discounted cumulative gain, NDCG@k."""

from __future__ import annotations

import numpy as np
from numba import njit

from .._parallel import MIN_ROWS_PER_THREAD_LIGHT, over_queries
from ..gains import Discount, Gain, discount_values, gain_values
from ._common import by_query, NoRelevant, check_inputs, check_k
from ._common import check_no_relevant, check_ties, ranked, reduce_queries, shared_doc
from ._ranking import cutoff, rank_top, scratch, tie_block, top_values

__all__ = ["ndcg"]


@njit(cache=True)
def _ndcg_query(gains, scores, lo, hi, k, disc, fill, buffers, by_sort, average):
    kk = cutoff(k, lo, hi)
    best = top_values(gains, lo, hi, kk, buffers, by_sort)
    ideal = 0.0
    for r in range(kk):
        ideal += best[r] * disc[r]
    if ideal <= 0.0:
        return fill
    order = rank_top(scores, lo, hi, kk, buffers, by_sort)
    dcg = 0.0
    if average is None:
        for r in range(kk):
            dcg += gains[lo + order[r]] * disc[r]
        return dcg / ideal
    # E[gain at rank r] is the mean gain of r's tied block (every order equally likely).
    start = 0
    while start < kk:
        end, m, block_gain, _ = tie_block(scores, gains, lo, hi, order, start, kk, 0.0)
        block_disc = 0.0
        for r in range(start, end):
            block_disc += disc[r]
        dcg += block_gain / m * block_disc
        start = end
    return dcg / ideal


@njit(cache=True, nogil=True)
def _ndcg_block(q0, q1, gains, scores, longest, by_sort, average, offsets, k, disc, fill, out):
    buffers = scratch(disc.size, longest)
    for q in range(q0, q1):
        out[q] = _ndcg_query(gains, scores, offsets[q], offsets[q + 1], k, disc, fill, buffers, by_sort, average)


def _ndcg_kernel(gains, scores, longest, by_sort, average, offsets, k, disc, fill):
    out = np.empty(offsets.size - 1)
    over_queries(_ndcg_block, offsets, gains, scores, longest, by_sort, average, offsets, k, disc, fill, out,
                 min_rows=MIN_ROWS_PER_THREAD_LIGHT)
    return out


def _check_options(k, *, gain="exp2", discount="log2", ties="input", no_relevant=1.0):
    """Fail on a bad setting before any data is read; returns (k, tie code, fill)."""
    gain_values(np.zeros(1), gain)
    discount_values(1, discount)
    return check_k(k), check_ties(ties), check_no_relevant(no_relevant)


@shared_doc("ndcg", mean=0.7606, per_query=[0.5213, 1.0])
def ndcg(y_true, y_pred, group=None, k: int | None = None, *, qid=None, gain: Gain = "exp2", discount: Discount = "log2",
         ties: str = "input", no_relevant: NoRelevant = 1.0, per_query: bool = False):
    r"""Normalized discounted cumulative gain at ``k``, averaged over queries.

    For one query ranked by descending score, with ranks :math:`r = 1, 2, \dots`,

    .. math::

        \mathrm{DCG@k} = \sum_{r=1}^{\min(k, n)} G(l_{(r)})\, D(r), \qquad
        \mathrm{NDCG@k} = \frac{\mathrm{DCG@k}}{\mathrm{IDCG@k}},

    where :math:`l_{(r)}` is the label of the document at rank :math:`r`, :math:`G` the gain,
    :math:`D` the discount, and IDCG@k the DCG@k of the labels sorted in decreasing order of
    gain (the best possible ranking).

    Parameters
    ----------
    y_true : array-like of shape (n_rows,)
        Relevance labels, non-negative. Integers with ``gain="exp2"`` (at most 31) or a gain
        array.
    y_pred : array-like of shape (n_rows,)
        Scores, finite; float32 is accepted. Higher means ranked earlier.
    group : array-like of shape (n_queries,), optional
        Group sizes: query ``q`` owns the next ``group[q]`` rows. Give ``group`` or ``qid``.
    k : int or None, default=None
        Cut-off. ``None`` evaluates the whole list. Lists shorter than ``k`` are evaluated on
        all their documents (the ideal DCG uses the same cut-off).
    qid : array-like of shape (n_rows,), optional
        Query id of each row instead of ``group``; the rows of a query need not be
        contiguous (within a query they keep their input order), and queries come in
        ascending id (the order of ``per_query`` values).
    gain : {"exp2", "linear"} or array, default="exp2"
        :math:`G(l) = 2^l - 1` (LightGBM's default ``label_gain``, XGBoost's
        ``ndcg_exp_gain``), :math:`G(l) = l` (trec_eval, scikit-learn), or ``gain[l]``.
        See :mod:`gbrank.gains`.
    discount : {"log2", "zipf"}, float, array or callable, default="log2"
        :math:`D(r) = 1/\log_2(1 + r)` (every engine), :math:`1/r` (Zipfian),
        :math:`r^{-\beta}` for a float :math:`\beta` (the polynomial family of Wang et al.,
        2013), ``discount[r - 1]``, or ``discount(r)``. See :mod:`gbrank.gains`.
    ties : {"input", "pessimistic", "average"}, default="input"
        Order of documents with equal scores. ``"input"``: stable, input row order, as
        LightGBM and XGBoost. ``"pessimistic"``: lower gain first within a tied block (then
        input order), the worst order for a decreasing discount. ``"average"``: the expected
        NDCG over all orders of every tied block, as scikit-learn's ``ndcg_score``; exactly,
        each rank of a tied block gets the block's mean gain.
    no_relevant : float or "exclude", default=1.0
        Value of a query whose IDCG@k is 0 (no document with a positive gain). ``1.0``
        follows LightGBM and XGBoost, ``0.0`` trec_eval and scikit-learn. ``"exclude"``
        leaves such queries out of the mean; with ``per_query=True`` they hold NaN. If every
        query is excluded the mean is NaN and a ``RuntimeWarning`` says so.
    per_query : bool, default=False
        Return the float64 array of per-query values instead of their mean.

    Returns
    -------
    float or ndarray of shape (n_queries,)
        The mean over queries (unweighted), or the per-query values.

    Raises
    ------
    ValueError
        For empty input, lengths or group sizes that do not match, NaN or infinite scores,
        and labels the gain cannot take (negative, non-integer or above 31 with ``"exp2"``,
        past the end of a gain array); the message names the row and query.

    %(example)s
    """
    y_true, y_pred, group = by_query(y_true, y_pred, group, qid)
    k, tie_code, fill = _check_options(
        k, gain=gain, discount=discount, ties=ties, no_relevant=no_relevant
    )
    scores, offsets, _ = check_inputs(y_true, y_pred, group)
    gains = gain_values(y_true, gain, offsets=offsets)
    gains, scores, kmax, longest, by_sort, average = ranked(gains, scores, offsets, k, tie_code)
    disc = discount_values(kmax, discount)
    values = _ndcg_kernel(gains, scores, longest, by_sort, average, offsets, k, disc, fill)
    return reduce_queries(values, fill, per_query)
