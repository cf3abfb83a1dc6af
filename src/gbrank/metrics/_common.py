"""Argument checks and the reduction over queries shared by every metric."""

from __future__ import annotations

import numbers
import warnings
from typing import NamedTuple

import numpy as np

from .._docstrings import fill_doc, metric_example
from .._frame import query_order
from .._threading import configure_threading
from .._validation import check_labels, check_scores
from ..groups import check_group
from ._ranking import TIES, TIES_AVERAGE, TIES_PESSIMISTIC, kernel_options, low_keys_first

# every metric module imports this one before its kernels can compile, and numba fixes its
# threading layer at the first parallel compile
configure_threading()

NoRelevant = float | str


# Parameter descriptions every metric shares, written once (see gbrank._docstrings).
_SCORES_GROUP_K = """
        y_pred : array-like of shape (n_rows,)
            Scores, finite; float32 is accepted.
        group : array-like of shape (n_queries,), optional
            Group sizes: query ``q`` owns the next ``group[q]`` rows. Give ``group`` or ``qid``.
        k : int or None, default=None
            Cut-off; ``None`` evaluates the whole list.
        qid : array-like of shape (n_rows,), optional
            Query id of each row instead of ``group``; the rows of a query need not be
            contiguous (within a query they keep their input order), and queries come in
            ascending id (the order of ``per_query`` values)."""
_SHARED_DOC = dict(
    scores_group_k=_SCORES_GROUP_K,
    # MAP, MRR and precision: labels through a threshold, and the same tie policies
    binary_inputs="""
        y_true : array-like of shape (n_rows,)
            Labels, finite and non-negative; a document is relevant when its label exceeds
            ``relevance_threshold`` (graded labels are fine: only the threshold matters).""" + _SCORES_GROUP_K + """
        ties : {"input", "pessimistic", "average"}, default="input"
            ``"input"``: stable, input row order (LightGBM, XGBoost). ``"pessimistic"``: lower
            labels first within a tied block, so relevant documents go last. ``"average"``: the
            exact expectation over all orders of every tied block (McSherry and Najork, 2008).
    """,
    per_query_returns="""
        per_query : bool, default=False
            Return the per-query values instead of their mean.

        Returns
        -------
        float or ndarray of shape (n_queries,)
    """,
)

def shared_doc(name: str, *, mean: float, per_query: list[float]):
    """Fill a metric's docstring: the shared sections and its example, which prints ``mean``
    and ``per_query`` (see :func:`gbrank._docstrings.metric_example`)."""
    return fill_doc(**_SHARED_DOC, example=metric_example(name, mean=mean, per_query=per_query))


def by_query(y_true, y_pred, group, qid):
    """Labels, scores and group sizes from ``group`` or from ``qid`` (one id per row, the
    rows of a query anywhere): with ids, the rows are gathered by ascending query id, in
    input order within a query, as ``gbrank.Ranker`` gathers them."""
    if qid is None:
        # without either, check_group says that query groups are required
        return y_true, y_pred, group
    if group is not None:
        raise ValueError("pass the queries once: group= (sizes) or qid= (one id per row), not both")
    labels, scores = np.asarray(y_true), np.asarray(y_pred)
    if labels.ndim != 1 or scores.ndim != 1 or labels.shape != scores.shape:
        raise ValueError(f"y_true and y_pred must be one-dimensional and of one length, got shapes "
                         f"{labels.shape} and {scores.shape}")
    rows = query_order(qid, labels.shape[0])
    return rows.group(labels), rows.group(scores), rows.sizes


def check_inputs(y_true, y_pred, group) -> tuple[np.ndarray, np.ndarray, int]:
    """Validated float64 scores, int64 offsets and the row count.

    Labels are left to the metric, which knows whether it needs gains or a threshold.
    """
    labels = np.asarray(y_true)
    if labels.ndim != 1:
        raise ValueError(f"y_true must be one-dimensional, got shape {labels.shape}")
    n_rows = labels.shape[0]
    if n_rows == 0:
        raise ValueError("empty input: y_true has no rows")
    offsets = check_group(group, n_rows)
    scores = check_scores(y_pred, n_rows=n_rows, offsets=offsets)
    return scores, offsets, n_rows


def check_binary_inputs(y_true, y_pred, group) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated float64 labels and scores and int64 offsets of a binary measure (its labels
    need only be finite and non-negative)."""
    scores, offsets, _ = check_inputs(y_true, y_pred, group)
    return check_labels(y_true, offsets=offsets), scores, offsets


def _finite(value, name: str, alternative: str = "") -> float:
    """``value`` as a finite float; ``alternative`` names what else the setting accepts."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number{alternative}, got {value!r}")
    number = float(value)
    if not np.isfinite(number):
        raise ValueError(f"{name} must be finite{alternative}, got {value!r}")
    return number


def check_binary(k, ties: str, no_relevant: NoRelevant, relevance_threshold) -> tuple:
    """The settings every binary measure takes: ``(k, tie code, fill, threshold)``."""
    return (
        check_k(k),
        check_ties(ties),
        check_no_relevant(no_relevant),
        _finite(relevance_threshold, "relevance_threshold"),
    )


def check_choice(value, choices: dict, name: str):
    """``choices[value]``, or a ValueError naming the valid settings."""
    if value not in choices:
        valid = " or ".join(repr(choice) for choice in choices)
        raise ValueError(f"{name} must be {valid}, got {value!r}")
    return choices[value]


def check_k(k) -> int:
    """Cut-off as an int; 0 stands for "the whole list" (``k=None``)."""
    if k is None:
        return 0
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"k must be a positive integer or None, got {k!r}")
    if k < 1:
        raise ValueError(f"k must be a positive integer or None, got {k!r}")
    return int(k)


def check_ties(ties: str, *, average: bool = True, metric: str = "") -> int:
    if ties not in TIES:
        raise ValueError(f"ties must be 'input', 'pessimistic' or 'average', got {ties!r}")
    code = TIES[ties]
    if code == TIES_AVERAGE and not average:
        raise NotImplementedError(
            f"ties='average' is not implemented for {metric}: its terms multiply along the "
            "ranking, so the expectation over the orders of a tied block is not a per-rank "
            "average; use ties='input' or ties='pessimistic'"
        )
    return code


def check_no_relevant(no_relevant: NoRelevant) -> float:
    """The value given to a query without relevant documents; NaN marks 'exclude'."""
    if isinstance(no_relevant, str):
        if no_relevant == "exclude":
            return np.nan
        raise ValueError(f"no_relevant must be a number or 'exclude', got {no_relevant!r}")
    return _finite(no_relevant, "no_relevant", " or 'exclude'")


def longest_group(offsets: np.ndarray) -> int:
    """Size of the largest group: the kernels' scratch length (computed here rather than in
    a kernel, which would compile one more function)."""
    return int(np.diff(offsets).max())


def cutoff_length(offsets: np.ndarray, k: int) -> int:
    """Longest prefix any query is evaluated on: ``min(k, largest group)``."""
    longest = longest_group(offsets)
    return longest if k == 0 else min(k, longest)


def reduce_queries(values: np.ndarray, fill: float, per_query: bool):
    """Per-query array, or its mean; excluded queries (NaN) are left out of the mean."""
    if per_query:
        return values
    if not np.isnan(fill):
        return float(values.mean())
    kept = values[~np.isnan(values)]
    if kept.size == 0:
        warnings.warn(
            "no query has a relevant document and no_relevant='exclude': the mean over no "
            "queries is undefined, returning NaN",
            RuntimeWarning,
            stacklevel=3,
        )
        return float("nan")
    return float(kept.mean())


def binary_metric(kernel, y_true, y_pred, group, options: tuple, per_query: bool):
    """A binary measure (MAP, MRR, precision): ``options`` as its ``_check_options`` returns
    them, ``(k, tie code, fill, threshold, *more)``; the inputs checked and ranked under the
    tie policy, ``kernel(*ranked, offsets, k, threshold, *more, fill)`` per query, then the
    mean or the per-query values."""
    k, tie_code, fill, *settings = options
    labels, scores, offsets = check_binary_inputs(y_true, y_pred, group)
    values = kernel(*ranked(labels, scores, offsets, k, tie_code), offsets, k, *settings, fill)
    return reduce_queries(values, fill, per_query)


class Ranked(NamedTuple):
    """What a metric kernel ranks: per-row values and scores (rows reordered for pessimistic
    ties), the longest prefix evaluated, the longest group, and the kernel options."""

    values: np.ndarray
    scores: np.ndarray
    kmax: int
    longest: int
    by_sort: bool | None
    average: bool | None


def ranked(values: np.ndarray, scores: np.ndarray, offsets: np.ndarray, k: int, tie_code: int):
    """The kernel inputs for per-row ``values`` ranked by ``scores`` under a tie policy; the
    pessimistic order puts lower values first within a tied block."""
    if tie_code == TIES_PESSIMISTIC:
        values, scores = low_keys_first(values, offsets, values, scores)
    kmax = cutoff_length(offsets, k)
    return Ranked(values, scores, kmax, longest_group(offsets), *kernel_options(tie_code, kmax))
