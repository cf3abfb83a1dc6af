"""Rows in the caller's order, queries in the engines' order.

The engines want the rows of a query contiguous. Callers hand over a pandas DataFrame with a
query-id column, or a ``qid`` array, in whatever order their rows come. This module pulls the
query ids out of a frame and finds the stable permutation that makes every query contiguous
(queries by ascending id, rows of a query in input order), so that training sees grouped rows
and results can be put back in the caller's order. Interleaving the queries differently
leaves the grouped data unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .groups import sizes_to_offsets

__all__ = ["QueryOrder", "query_order", "split_qid"]


def split_qid(X, qid=None, qid_col: str | None = "qid"):
    """Features and query ids from ``X`` and an optional ``qid`` array.

    Parameters
    ----------
    X : array-like or pandas.DataFrame
        Features. A DataFrame holding a column named ``qid_col`` gives the query ids; that
        column is removed from the features.
    qid : array-like of shape (n_rows,), optional
        Query ids passed on their own.
    qid_col : str or None, default="qid"
        Name of the query-id column; ``None`` never reads one.

    Returns
    -------
    X : array-like or pandas.DataFrame
        The features, without the query-id column.
    qid : ndarray or None
        The query ids, from the column or from ``qid``.

    Raises
    ------
    ValueError
        If ``X`` has the query-id column and ``qid`` is also given.
    """
    columns = getattr(X, "columns", None)
    if qid_col is None or columns is None or qid_col not in columns:
        return X, (None if qid is None else np.asarray(qid))
    if qid is not None:
        raise ValueError(
            f"query ids were given twice: X has a {qid_col!r} column and qid= was passed; "
            f"drop one (or set qid_col=None to treat {qid_col!r} as a feature)"
        )
    return X.drop(columns=qid_col), X[qid_col].to_numpy()


@dataclass(frozen=True)
class QueryOrder:
    """A stable grouping of rows by query.

    Attributes
    ----------
    order : ndarray of int64 or None
        Row ``i`` of the grouped data is row ``order[i]`` of the input; ``None`` when the input
        is already grouped (the identity).
    sizes : ndarray of int64
        Query sizes in the grouped data, queries by ascending id.
    """

    order: np.ndarray | None
    sizes: np.ndarray

    @property
    def offsets(self) -> np.ndarray:
        """Query offsets ``[0, n1, n1 + n2, ...]`` of the grouped rows."""
        return sizes_to_offsets(self.sizes)

    def group(self, values):
        """Rows of ``values`` (array or DataFrame; ``None`` passes) in grouped order."""
        if values is None or self.order is None:
            return values
        if hasattr(values, "iloc"):
            return values.iloc[self.order]
        return np.asarray(values)[self.order]


def query_order(qid, n_rows: int | None = None) -> QueryOrder:
    """The stable permutation that makes the rows of every query contiguous.

    Parameters
    ----------
    qid : array-like of shape (n_rows,)
        One query id per row, any sortable dtype (integers, strings); the rows of a query
        may be scattered.
    n_rows : int, optional
        Expected number of rows.

    Returns
    -------
    QueryOrder
        Queries by ascending id, rows of a query in input order. When the rows are already
        in that order, ``order`` is None and nothing needs copying.

    Raises
    ------
    ValueError
        For a length that does not match ``n_rows``, an empty or multi-dimensional ``qid``,
        and missing ids (NaN, None).
    """
    qid = np.asarray(qid)
    if qid.ndim != 1:
        raise ValueError(f"qid must be one-dimensional, got shape {qid.shape}")
    if n_rows is not None and qid.shape[0] != n_rows:
        raise ValueError(f"qid has {qid.shape[0]} entries but there are {n_rows} rows")
    if qid.size == 0:
        raise ValueError("qid is empty: there are no rows to group")
    if qid.dtype.kind == "f" and not np.isfinite(qid).all():
        row = int(np.flatnonzero(~np.isfinite(qid))[0])
        raise ValueError(f"qid contains {qid[row]} at row {row}; query ids must be finite")
    if qid.dtype.kind == "O":
        missing = np.fromiter((v is None or v != v for v in qid), dtype=bool, count=qid.size)
        if missing.any():
            row = int(np.flatnonzero(missing)[0])
            raise ValueError(f"qid is missing at row {row} ({qid[row]!r}); every row needs a query id")
    try:
        uniq, key = np.unique(qid, return_inverse=True)
    except TypeError as exc:
        raise TypeError(f"query ids must be sortable values of one kind: {exc}") from exc
    key = key.reshape(-1)
    order = np.argsort(key, kind="stable")
    sizes = np.bincount(key, minlength=uniq.size).astype(np.int64)
    if np.array_equal(order, np.arange(qid.size)):
        order = None
    return QueryOrder(order, sizes)
