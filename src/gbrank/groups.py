"""Query groups: sizes, offsets and qid arrays, and their validation.

gbrank speaks three dialects of the same thing:

* **sizes** ``[n1, n2, ...]``: LightGBM's ``group`` (``Dataset.get_group()``) and the
  ``group`` argument of every gbrank function;
* **offsets** ``[0, n1, n1+n2, ..., n]``: XGBoost's ``group_ptr`` and what the numba kernels
  iterate over (query ``q`` owns rows ``offsets[q]:offsets[q+1]``);
* **qid** ``[q0, q0, ..., q1, ...]``: one query id per row, as in LETOR files.

Rows of a query must be contiguous; every conversion checks it and says where it fails.
"""

from __future__ import annotations

import numpy as np

from ._validation import check_present

__all__ = [
    "check_group",
    "group_offsets",
    "varies_per_query",
    "offsets_to_sizes",
    "qid_to_sizes",
    "row_in_query",
    "scattered_query",
    "sizes_to_offsets",
    "sizes_to_qid",
]


def _as_1d_int(values, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinite values")
        if not np.all(arr == np.round(arr)):
            bad = int(np.flatnonzero(arr != np.round(arr))[0])
            raise ValueError(f"{name} must hold integers; {name}[{bad}] = {arr[bad]:g}")
    elif arr.dtype.kind not in "iub":
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def sizes_to_offsets(sizes) -> np.ndarray:
    """Group sizes ``[n1, n2, ...]`` to offsets ``[0, n1, n1+n2, ...]`` (int64).

    Sizes must be positive integers.
    """
    sizes = _as_1d_int(sizes, "group")
    if sizes.size and sizes.min() <= 0:
        bad = int(np.flatnonzero(sizes <= 0)[0])
        raise ValueError(
            f"group sizes must be positive; group[{bad}] = {int(sizes[bad])} "
            f"(query {bad} has no documents)"
        )
    offsets = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return offsets


def offsets_to_sizes(offsets) -> np.ndarray:
    """Offsets ``[0, n1, n1+n2, ...]`` to group sizes (int64)."""
    offsets = _as_1d_int(offsets, "offsets")
    if offsets.size == 0 or offsets[0] != 0:
        raise ValueError("offsets must start with 0")
    sizes = np.diff(offsets)
    if sizes.size and sizes.min() <= 0:
        bad = int(np.flatnonzero(sizes <= 0)[0])
        raise ValueError(
            f"offsets must be strictly increasing; offsets[{bad}] = {int(offsets[bad])} "
            f"and offsets[{bad + 1}] = {int(offsets[bad + 1])}"
        )
    return sizes


def qid_to_sizes(qid, *, require_sorted: bool = False) -> np.ndarray:
    """Group sizes from one query id per row.

    Parameters
    ----------
    qid : array-like of shape (n_rows,)
        Query id of each row. The rows of one query must be contiguous.
    require_sorted : bool, default=False
        Also require ascending query ids, as XGBoost does.

    Raises
    ------
    ValueError
        If a query's rows are not contiguous or, with ``require_sorted``, the ids decrease;
        the message names the rows.
    """
    qid = np.asarray(qid)
    if qid.ndim != 1:
        raise ValueError(f"qid must be one-dimensional, got shape {qid.shape}")
    if qid.size == 0:
        return np.zeros(0, dtype=np.int64)
    # each row with a missing id would be a query of its own
    check_present("qid", qid, "give every row a query id")
    change = np.flatnonzero(qid[1:] != qid[:-1]) + 1
    starts = np.concatenate(([0], change))
    block_ids = qid[starts]
    if require_sorted and block_ids.size > 1:
        decreasing = np.flatnonzero(block_ids[1:] < block_ids[:-1])
        if decreasing.size:
            row = int(starts[decreasing[0] + 1])
            raise ValueError(
                f"qid must be sorted: qid {block_ids[decreasing[0]]} at row {row - 1} "
                f"is followed by qid {qid[row]} at row {row}"
            )
    scattered = _scattered(block_ids, starts)
    if scattered is not None:
        q, first, second = scattered
        raise ValueError(
            f"the rows of each query must be contiguous: qid {q} starts blocks at rows "
            f"{first} and {second} (sort or group the rows by qid first)"
        )
    ends = np.concatenate((starts[1:], [qid.size]))
    return (ends - starts).astype(np.int64)


def scattered_query(qid) -> tuple | None:
    """``(qid, row, row)``: the lowest query id whose rows are not contiguous and the rows
    where its first two blocks start; None when every query's rows are together."""
    qid = np.asarray(qid)
    if qid.size == 0:
        return None
    starts = np.concatenate(([0], np.flatnonzero(qid[1:] != qid[:-1]) + 1))
    return _scattered(qid[starts], starts)


def _scattered(block_ids: np.ndarray, starts: np.ndarray) -> tuple | None:
    uniq, counts = np.unique(block_ids, return_counts=True)
    if uniq.size == block_ids.size:
        return None
    q = uniq[np.flatnonzero(counts > 1)[0]]
    rows = starts[np.flatnonzero(block_ids == q)]
    return q, int(rows[0]), int(rows[1])


def sizes_to_qid(sizes) -> np.ndarray:
    """One query id per row, ``0 .. n_queries - 1``, from group sizes."""
    offsets = sizes_to_offsets(sizes)
    return np.repeat(np.arange(offsets.size - 1, dtype=np.int64), np.diff(offsets))


def row_in_query(sizes) -> np.ndarray:
    """Each row's index within its query (0 for a query's first row), from group sizes."""
    offsets = sizes_to_offsets(sizes)
    return np.arange(offsets[-1], dtype=np.int64) - np.repeat(offsets[:-1], np.diff(offsets))


def check_group(group, n_rows: int) -> np.ndarray:
    """Validate group sizes against the number of rows and return offsets (int64).

    Parameters
    ----------
    group : array-like of shape (n_queries,)
        Group sizes, positive integers summing to ``n_rows``.
    n_rows : int
        Number of rows the groups must cover.
    """
    if group is None:
        raise ValueError(
            "query groups are required: pass group sizes (group=[n1, n2, ...]) or qid, "
            "or set them on the Dataset/DMatrix"
        )
    sizes = _as_1d_int(group, "group")
    if sizes.size and sizes.max() > n_rows:
        # checked before the sums, which would wrap around int64 and pass
        q = int(np.argmax(sizes))
        raise ValueError(f"group size {int(sizes[q])} of query {q} is more than the {n_rows} rows")
    offsets = sizes_to_offsets(sizes)
    if offsets[-1] != n_rows:
        raise ValueError(
            f"group sizes sum to {int(offsets[-1])} but there are {n_rows} rows"
        )
    return offsets


def group_offsets(n_rows: int, *, group=None, qid=None) -> np.ndarray:
    """Offsets from exactly one of ``group`` (sizes) or ``qid``, checked against ``n_rows``."""
    if (group is None) == (qid is None):
        raise ValueError("pass exactly one of group= (sizes) or qid=")
    if qid is not None:
        qid = np.asarray(qid)
        if qid.shape != (n_rows,):
            raise ValueError(f"qid has {qid.size} entries but there are {n_rows} rows")
        group = qid_to_sizes(qid)
    return check_group(group, n_rows)


def varies_per_query(values, offsets) -> np.ndarray:
    """Per query, whether ``values`` take more than one value in it (False for one row).

    ``offsets`` are those of :func:`check_group`: every query has at least one row.
    """
    starts = np.asarray(offsets)[:-1]
    if starts.size == 0:
        return np.zeros(0, dtype=bool)
    return np.maximum.reduceat(values, starts) > np.minimum.reduceat(values, starts)
