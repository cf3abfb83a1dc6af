"""Expected reciprocal rank, ERR@k (Chapelle et al., 2009)."""

from __future__ import annotations

import numbers

import numpy as np
from numba import njit

from .._parallel import MIN_ROWS_PER_THREAD_LIGHT, over_queries
from .._validation import check_labels
from ..gains import EXP2_MAX_LABEL
from ._common import by_query, NoRelevant, check_inputs, check_k, check_no_relevant
from ._common import check_ties, ranked, reduce_queries, shared_doc
from ._ranking import count_above, cutoff, rank_top, scratch

__all__ = ["err"]


@njit(cache=True)
def _err_query(stop, scores, lo, hi, k, fill, buffers, by_sort):
    kk = cutoff(k, lo, hi)
    if count_above(stop, lo, hi, 0.0) == 0:
        return fill
    order = rank_top(scores, lo, hi, kk, buffers, by_sort)
    value = 0.0
    not_stopped = 1.0
    for r in range(kk):
        p = stop[lo + order[r]]
        value += not_stopped * p / (r + 1)
        not_stopped *= 1.0 - p
    return value


@njit(cache=True, nogil=True)
def _err_block(q0, q1, stop, scores, kmax, longest, by_sort, offsets, k, fill, out):
    buffers = scratch(kmax, longest)
    for q in range(q0, q1):
        out[q] = _err_query(stop, scores, offsets[q], offsets[q + 1], k, fill, buffers, by_sort)


def _err_kernel(stop, scores, kmax, longest, by_sort, offsets, k, fill):
    out = np.empty(offsets.size - 1)
    over_queries(_err_block, offsets, stop, scores, kmax, longest, by_sort, offsets, k, fill, out,
                 min_rows=MIN_ROWS_PER_THREAD_LIGHT)
    return out


def _check_options(k, *, max_label=None, ties="input", no_relevant=1.0):
    """Fail on a bad setting before any data is read."""
    if max_label is not None:
        if isinstance(max_label, bool) or not isinstance(max_label, numbers.Integral):
            raise TypeError(f"max_label must be an integer or None, got {max_label!r}")
        if not 0 <= max_label <= EXP2_MAX_LABEL:
            raise ValueError(f"max_label must be in 0 .. {EXP2_MAX_LABEL}, got {max_label}")
        max_label = int(max_label)
    return (
        check_k(k),
        check_ties(ties, average=False, metric="ERR"),
        check_no_relevant(no_relevant),
        max_label,
    )


@shared_doc("err", mean=0.3125, per_query=[0.375, 0.25])
def err(y_true, y_pred, group=None, k: int | None = None, *, qid=None, max_label: int | None = None, ties: str = "input",
        no_relevant: NoRelevant = 1.0, per_query: bool = False):
    r"""Expected reciprocal rank at ``k`` (Chapelle, Metzler, Zhang and Grinspan, 2009).

    The user scans the ranking top-down and stops at rank :math:`r` with probability
    :math:`R_r = (2^{l_{(r)}} - 1) / 2^{l_{\max}}`; ERR is the expected reciprocal rank of the
    stop:

    .. math::

        \mathrm{ERR@k} = \sum_{r=1}^{\min(k, n)} \frac{1}{r}\, R_r \prod_{i=1}^{r-1} (1 - R_i).

    Parameters
    ----------
    y_true : array-like of shape (n_rows,)
        Integer labels in ``0 .. max_label``.
    %(scores_group_k)s
    max_label : int or None, default=None
        :math:`l_{\max}`, the grade of a perfect document (4 on MSLR and Yahoo!). ``None`` takes
        the largest label in ``y_true``, which makes values from data sets with different
        largest labels incomparable: pass it explicitly when that matters (for example in an
        engine metric, which is called on each data set separately). At most 31.
    ties : {"input", "pessimistic"}, default="input"
        ``"input"``: stable, input row order. ``"pessimistic"``: lower labels first within a
        tied block, which is the worst order (swapping neighbours a, b changes ERR by
        :math:`(1/r - 1/(r+1)) (R_a - R_b)` times the probability of reaching them).
        ``"average"`` raises ``NotImplementedError``: the stop probabilities multiply along
        the ranking, so the expectation over the orders of a tied block is not a per-rank
        average as it is for DCG, precision and AP.
    no_relevant : float or "exclude", default=1.0
        Value of a query whose labels are all 0 (where the formula gives 0): ``1.0``
        (LightGBM's convention for its ranking metrics), ``0.0``, or ``"exclude"`` (left out
        of the mean; NaN with ``per_query=True``; a mean over no query is NaN with a
        ``RuntimeWarning``).
    %(per_query_returns)s

    %(example)s
    """
    y_true, y_pred, group = by_query(y_true, y_pred, group, qid)
    k, tie_code, fill, max_label = _check_options(
        k, max_label=max_label, ties=ties, no_relevant=no_relevant
    )
    scores, offsets, _ = check_inputs(y_true, y_pred, group)
    labels = check_labels(
        y_true,
        offsets=offsets,
        integer=True,
        max_label=EXP2_MAX_LABEL if max_label is None else max_label,
        why=" for ERR, whose stop probability is (2**l - 1) / 2**max_label",
    )
    if max_label is None:
        max_label = int(labels.max())
    stop = (np.exp2(labels) - 1.0) / 2.0**max_label
    stop, scores, kmax, longest, by_sort, _ = ranked(stop, scores, offsets, k, tie_code)
    values = _err_kernel(stop, scores, kmax, longest, by_sort, offsets, k, fill)
    return reduce_queries(values, fill, per_query)
