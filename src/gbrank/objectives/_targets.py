r"""Target score vectors :math:`\psi` for the losses that compare scores with a target vector.

ListNet (:mod:`.listnet`) and RankCosine (:mod:`.cosine`) do not use the labels directly:
they map each query's labels to a vector of target scores :math:`\psi` (the papers'
"mapping function" :math:`\psi_y`, the score vector of the ground-truth permutation
:math:`y`) and compare the model's scores with it.

What :math:`\psi` means
-----------------------
* RankCosine compares directions: :math:`\psi` and :math:`c\,\psi` (:math:`c > 0`) are the
  same target.
* ListNet turns :math:`\psi` into the target Plackett–Luce distribution
  :math:`P(\pi \mid \psi) = \prod_i e^{\psi_{\pi(i)}} / \sum_{t \ge i} e^{\psi_{\pi(t)}}`,
  so :math:`\psi` is a vector of *logits*: :math:`\psi` and :math:`\psi + c` are the same
  target, and the scale sets how sharp it is. With ``"exp2"`` on labels 0..4 the logits are
  0, 1, 3, 7, 15: the top-1 target puts :math:`e^8 \approx 3000` times more mass on a
  label-4 document than on a label-3 one; with ``"linear"`` the ratio is :math:`e`.

Targets
-------
From labels :math:`l`:

``"exp2"``
    :math:`\psi = 2^l - 1` (labels must be integers no larger than 31, as in the engines).
``"linear"``
    :math:`\psi = l` (Cao et al.'s ListNet).
callable
    ``f(labels) -> psi`` called once per query with that query's labels (float64, in row
    order); it must return one finite value per document.

From positions, as in the synthetic experiment of Xia et al. (2008, section 6.1): with
:math:`r = 1..n` the position of a document in the label-sorted list (labels descending)
and :math:`m = n + 1 - r` (so :math:`m = n` at the top and :math:`m = 1` at the bottom),

``"rank_log"`` :math:`\log m`, ``"rank_sqrt"`` :math:`\sqrt m`, ``"rank_linear"`` :math:`m`,
``"rank_quadratic"`` :math:`m^2`, ``"rank_exp"`` :math:`e^m`.

The paper writes :math:`\log(15 - r)` etc. for lists of 15 objects; with positions counted
from 1 that would send the last object to :math:`\log 0`, so positions are read as counted
from 0, i.e. :math:`m = n + 1 - r`. ``"rank_exp"`` is evaluated as :math:`e^{m - c}` with
:math:`c = \max(0, n - 700)`, which keeps it finite for lists of any length: for RankCosine
this is exactly the paper's mapping (a positive factor); for ListNet it changes only logits
whose gaps already exceed :math:`e^{690}`, where every Plackett–Luce probability of the
first several hundred positions is 0 or 1 in float64.

Ties
    Documents with equal labels have no order between them. For the position mappings (and
    with ``target_k``), tied documents share the mean of the values of the positions they occupy:
    the expectation of :math:`\psi_y` over the label-consistent permutations :math:`y`,
    chosen uniformly. The result is a function of the labels alone, so permuting the rows
    of a query permutes :math:`\psi`.

The top-k mapping of Xia et al. (2009, section 4.3.2)
    With ``target_k``, the order is kept in the top ``target_k`` positions only:
    :math:`\psi_{y(1)} \ge \dots \ge \psi_{y(k)} \ge \psi_{y(k+1)} = \dots = \psi_{y(n)} = \varepsilon`,
    where the common small value :math:`\varepsilon` is the query's smallest value of the
    mapping (the value of the last position for the position mappings, of the lowest label
    for the label targets). Ties straddling position ``target_k`` are averaged as above.

Queries without a preferred order
    When all of a query's target values are equal (all labels equal, a single document,
    or a constant callable) the query carries no ranking information; the objectives give
    it zero loss and zero gradient by default (``ignore_all_equal``).
"""

from __future__ import annotations

from typing import Callable, Union

import numpy as np

from .._validation import InvalidParameterError, check_int, check_labels
from ..gains import EXP2_MAX_LABEL
from ..groups import varies_per_query
from ._label_order import label_order

__all__ = ["LABEL_TARGETS", "RANK_TARGETS", "Target", "check_target", "check_target_labels", "target_scores"]

Target = Union[str, Callable[[np.ndarray], np.ndarray]]

LABEL_TARGETS = ("exp2", "linear")
RANK_TARGETS = ("rank_log", "rank_sqrt", "rank_linear", "rank_quadratic", "rank_exp")
# e**700 is finite in float64 (the largest finite is about e**709.78)
_EXP_MAX = 700.0


def check_target(target: Target, target_k: int | None) -> int | None:
    """Validate a target setting when an objective is built; return ``target_k`` as an int or None."""
    if not callable(target) and not (isinstance(target, str) and target in LABEL_TARGETS + RANK_TARGETS):
        raise InvalidParameterError(
            f"target must be one of {', '.join(map(repr, LABEL_TARGETS + RANK_TARGETS))} "
            f"or a callable on one query's labels, got {target!r}"
        )
    return check_int("target_k", target_k, min=1, optional=True)


def check_target_labels(y_true, offsets: np.ndarray, target: Target) -> np.ndarray:
    """Validate labels for ``target``: integers up to 31 for ``"exp2"``, else finite and >= 0."""
    if isinstance(target, str) and target == "exp2":
        return check_labels(
            y_true,
            offsets=offsets,
            integer=True,
            max_label=EXP2_MAX_LABEL,
            why=" with target='exp2' (use target='linear' or another target for other labels)",
        )
    return check_labels(y_true, offsets=offsets)


def _callable_scores(func, labels: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    psi = np.empty(labels.shape[0])
    for q, (start, end) in enumerate(zip(offsets[:-1], offsets[1:])):
        values = np.asarray(func(labels[start:end].copy()), dtype=np.float64)
        if values.shape != (end - start,):
            raise ValueError(
                f"the target callable returned shape {values.shape} for query {q} "
                f"of {end - start} documents; it must return one value per document"
            )
        if not np.isfinite(values).all():
            raise ValueError(f"the target callable returned a non-finite value for query {q}")
        psi[start:end] = values
    return psi


def _rank_values(target: str, m: np.ndarray, n: np.ndarray) -> np.ndarray:
    if target == "rank_log":
        return np.log(m)
    if target == "rank_sqrt":
        return np.sqrt(m)
    if target == "rank_linear":
        return m
    if target == "rank_quadratic":
        return m * m
    return np.exp(m - np.maximum(0.0, n - _EXP_MAX))


def target_scores(
    labels: np.ndarray, offsets: np.ndarray, target: Target, k: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Target scores of every row and a per-query flag: 1 if its targets are not all equal.

    Parameters
    ----------
    labels : ndarray of float64, shape (n_rows,)
        Validated labels (see :func:`check_target_labels`).
    offsets : ndarray of int64, shape (n_queries + 1,)
        Query boundaries.
    target : str or callable
        See the module docstring.
    k : int, optional
        Keep the target order in the top ``k`` label-sorted positions only (Xia et al. 2009).

    Returns
    -------
    psi : ndarray of float64, shape (n_rows,)
    informative : ndarray of uint8, shape (n_queries,)
    """
    n = labels.shape[0]
    sizes = np.diff(offsets)
    if n == 0:
        return np.zeros(0), np.zeros(sizes.size, dtype=np.uint8)
    blocks = label_order(labels, offsets)
    qid, order, sorted_labels, position = blocks.qid, blocks.order, blocks.sorted_labels, blocks.position
    starts = offsets[:-1]

    if callable(target):
        values = _callable_scores(target, labels, offsets)[order]
    elif target == "exp2":
        values = np.exp2(sorted_labels) - 1.0
    elif target == "linear":
        values = sorted_labels.copy()
    else:
        n_docs = sizes[qid].astype(np.float64)
        values = _rank_values(target, n_docs + 1.0 - position, n_docs)

    if k is not None:
        floor = np.minimum.reduceat(values, starts)
        values = np.where(position > k, floor[qid], values)

    if k is not None or target in RANK_TARGETS:
        new_block = blocks.block_start == np.arange(n)
        block_starts = np.flatnonzero(new_block)
        block_id = np.cumsum(new_block) - 1
        counts = np.diff(np.append(block_starts, n))
        low = np.minimum.reduceat(values, block_starts)
        span = np.maximum.reduceat(values, block_starts) - low
        # Blocks of equal values keep them bit for bit; the others share their mean, taken
        # as low + span * mean((v - low) / span) so that a long block near e**700 cannot
        # overflow the sum.
        safe_span = np.where(span > 0, span, 1.0)
        frac = np.add.reduceat((values - low[block_id]) / safe_span[block_id], block_starts) / counts
        values = np.where(span > 0, low + span * frac, low)[block_id]

    psi = np.empty(n)
    psi[order] = values
    informative = varies_per_query(psi, offsets)
    return psi, informative.astype(np.uint8)
