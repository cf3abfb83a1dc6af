"""`RankingData`: a feature matrix, labels and query groups that travel together."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..groups import check_group, qid_to_sizes, row_in_query, sizes_to_offsets, sizes_to_qid

__all__ = ["RankingData"]


@dataclass(frozen=True, eq=False)
class RankingData:
    """Rows of documents grouped into queries.

    The rows of one query are contiguous; query ``q`` owns rows
    ``offsets[q]:offsets[q + 1]``. Pass ``group`` (sizes), ``qid`` (one id per row) or both
    (they must agree); the missing one is derived. Unpacking gives ``X, y, group``::

        data = make_ranking(n_queries=100)
        X, y, group = data
        lgb.Dataset(data.X, data.y, group=data.group)      # LightGBM
        xgb.DMatrix(data.X, data.y, qid=data.qid)           # XGBoost

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features)
        Dense features, float32 or float64.
    y : ndarray of shape (n_rows,)
        Relevance labels (float64).
    group : ndarray of shape (n_queries,), optional
        Query sizes (int64), LightGBM's ``group``.
    qid : ndarray of shape (n_rows,), optional
        Query id of each row (int64): the ids read from a file, otherwise
        ``0 .. n_queries - 1``.
    """

    X: np.ndarray
    y: np.ndarray
    group: np.ndarray | None = None
    qid: np.ndarray | None = None

    def __post_init__(self):
        X = np.asarray(self.X)
        if X.ndim != 2:
            raise ValueError(f"X must be two-dimensional, got shape {X.shape}")
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        y = np.asarray(self.y, dtype=np.float64)
        if y.shape != (X.shape[0],):
            raise ValueError(f"y has shape {y.shape} but X has {X.shape[0]} rows")
        if self.group is None and self.qid is None:
            raise ValueError("pass group= (query sizes) or qid= (one query id per row)")
        qid = None
        if self.qid is not None:
            qid = np.asarray(self.qid)
            if qid.shape != (X.shape[0],):
                raise ValueError(f"qid has shape {qid.shape} but X has {X.shape[0]} rows")
            if qid.dtype.kind not in "iu":
                raise TypeError(f"qid must hold integers, got dtype {qid.dtype}")
            qid = qid.astype(np.int64, copy=False)
        if self.group is None:
            group = qid_to_sizes(qid)
        else:
            group = np.diff(check_group(self.group, X.shape[0]))
            if qid is not None and not np.array_equal(group, qid_to_sizes(qid)):
                raise ValueError("group sizes do not match the query blocks of qid")
        if qid is None:
            qid = sizes_to_qid(group)
        bad = ~np.isfinite(y)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            query = int(np.searchsorted(np.cumsum(group), row, side="right"))
            raise ValueError(f"y contains {y[row]} at row {row} (query {query}); labels must be finite")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "group", group)
        object.__setattr__(self, "qid", qid)

    def __iter__(self):
        return iter((self.X, self.y, self.group))

    def __len__(self) -> int:
        return self.X.shape[0]

    def __repr__(self) -> str:
        return (
            f"RankingData(n_rows={len(self)}, n_features={self.n_features}, "
            f"n_queries={self.n_queries}, dtype={self.X.dtype})"
        )

    @property
    def n_queries(self) -> int:
        """Number of queries."""
        return int(self.group.size)

    @property
    def n_features(self) -> int:
        """Number of feature columns."""
        return int(self.X.shape[1])

    @property
    def offsets(self) -> np.ndarray:
        """Query offsets ``[0, n1, n1 + n2, ..., n_rows]`` (int64), XGBoost's ``group_ptr``."""
        return sizes_to_offsets(self.group)

    def subset(self, queries) -> RankingData:
        """The given queries, in the given order, as a new `RankingData`.

        Parameters
        ----------
        queries : array-like of int or bool
            Query positions ``0 .. n_queries - 1`` (not qid values), or a boolean mask over
            the queries. A query may appear once.
        """
        queries = np.asarray(queries)
        if queries.dtype == bool:
            if queries.shape != (self.n_queries,):
                raise ValueError(
                    f"boolean query mask has shape {queries.shape}, expected ({self.n_queries},)"
                )
            queries = np.flatnonzero(queries)
        if queries.ndim != 1 or (queries.size and queries.dtype.kind not in "iu"):
            raise ValueError("queries must be a 1-d array of query positions or a boolean mask")
        queries = queries.astype(np.int64)
        if queries.size and (queries.min() < 0 or queries.max() >= self.n_queries):
            raise IndexError(f"query positions must lie in [0, {self.n_queries})")
        if np.unique(queries).size != queries.size:
            raise ValueError("each query may appear only once in a subset")
        offsets = self.offsets
        sizes = self.group[queries]
        rows = np.repeat(offsets[queries], sizes) + row_in_query(sizes)
        return RankingData(self.X[rows], self.y[rows], group=sizes, qid=self.qid[rows])
