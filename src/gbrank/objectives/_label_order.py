"""Each query's documents sorted by label, and the blocks of equal labels.

The listwise and pairwise losses all start from the same per-dataset work: a stable sort of
every query by label (descending) and, for each sorted position, the tied block it belongs
to. Computed once per dataset and cached by the objective.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..gains import Discount, Gain, discount_values, gain_values
from ..groups import sizes_to_qid


@dataclass(frozen=True)
class LabelOrder:
    """Label-sorted positions of every query (queries keep their place in the rows).

    Attributes
    ----------
    qid : int64 (n_rows,)
        Query index of each row, equally of each sorted position.
    order : int64 (n_rows,)
        Row at each sorted position: by query, then label descending, ties in input order.
    sorted_labels : float64 (n_rows,)
        ``labels[order]``.
    position : int64 (n_rows,)
        1-based position within its query.
    block_start, block_end : int64 (n_rows,)
        Sorted positions ``block_start[j]:block_end[j]`` hold the labels equal to position
        ``j``'s within its query.
    """

    qid: np.ndarray
    order: np.ndarray
    sorted_labels: np.ndarray
    position: np.ndarray
    block_start: np.ndarray
    block_end: np.ndarray

    @property
    def best_rank(self) -> np.ndarray:
        """``1 + number of the query's documents with a higher label``, per sorted position."""
        return self.position - (np.arange(self.position.size) - self.block_start)


def label_order(labels: np.ndarray, offsets: np.ndarray) -> LabelOrder:
    """Sort every query by label, descending and stable, and find its tied blocks."""
    n = labels.shape[0]
    qid = sizes_to_qid(np.diff(offsets))
    order = np.lexsort((-labels, qid)).astype(np.int64)
    sorted_labels = labels[order]
    position = np.arange(n, dtype=np.int64) - offsets[qid] + 1
    new_block = np.ones(n, dtype=bool)
    new_block[1:] = (position[1:] == 1) | (sorted_labels[1:] != sorted_labels[:-1])
    starts = np.flatnonzero(new_block)
    block_id = np.cumsum(new_block) - 1
    block_start = starts[block_id].astype(np.int64)
    block_end = np.append(starts[1:], n)[block_id].astype(np.int64)
    return LabelOrder(qid, order, sorted_labels, position, block_start, block_end)


def ideal_dcg(blocks: LabelOrder, table: np.ndarray, n_queries: int, k: int | None = None) -> np.ndarray:
    """Per query, the DCG of its ideal ranking, :math:`Z = \\sum_{r \\le k} G_{(r)} D(r)`.

    ``blocks`` is the :func:`label_order` of the gains themselves (so that it sorts them
    decreasingly whatever the gain function), ``table`` the discount of positions
    ``1 .. longest query``; ``k=None`` sums every position.
    """
    terms = blocks.sorted_labels * table[blocks.position - 1]
    if k is not None:
        terms = np.where(blocks.position <= k, terms, 0.0)
    return np.bincount(blocks.qid, weights=terms, minlength=n_queries)


def ndcg_weights(sorted_labels: np.ndarray, rank: np.ndarray, gain: Gain, discount: Discount, cutoff: int | None) -> np.ndarray:
    """``G(l) * D(rank)``, with ``D(r) = 0`` past ``cutoff``: the weights of W-ListMLE and W-RankNet."""
    table = discount_values(int(rank.max(initial=1)), discount)
    if cutoff is not None:
        table[cutoff:] = 0.0
    return gain_values(sorted_labels, gain) * table[rank - 1]
