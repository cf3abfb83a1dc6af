"""Splitting `RankingData` by whole queries: hold-out splits and k folds."""

from __future__ import annotations

import operator
from collections.abc import Iterator

import numpy as np

from ._container import RankingData

__all__ = ["kfold_queries", "split_queries"]


def _query_order(n_queries: int, shuffle: bool, seed) -> np.ndarray:
    order = np.arange(n_queries, dtype=np.int64)
    if shuffle:
        np.random.default_rng(seed).shuffle(order)
    return order


def split_queries(
    data: RankingData,
    fractions=(0.6, 0.2, 0.2),
    *,
    shuffle: bool = True,
    seed: int | None = 0,
) -> tuple[RankingData, ...]:
    """Split into parts of whole queries, e.g. train/validation/test.

    Parameters
    ----------
    data : RankingData
        The data to split.
    fractions : sequence of float, default=(0.6, 0.2, 0.2)
        Share of the queries in each part (normalised to sum to 1). Part sizes are rounded
        so that they add up to ``data.n_queries``; every part needs at least one query.
    shuffle : bool, default=True
        Assign queries to parts at random; otherwise consecutive runs of queries.
    seed : int or None, default=0
        Seed of the shuffle.

    Returns
    -------
    tuple of RankingData
        One per fraction. Within a part, queries keep their original order.
    """
    fractions = np.asarray(fractions, dtype=np.float64)
    if fractions.ndim != 1 or fractions.size < 1:
        raise ValueError("fractions must be a non-empty sequence of numbers")
    if not np.isfinite(fractions).all() or (fractions <= 0).any():
        raise ValueError(f"fractions must be positive and finite, got {fractions.tolist()}")
    bounds = np.rint(np.cumsum(fractions) / fractions.sum() * data.n_queries).astype(np.int64)
    counts = np.diff(bounds, prepend=0)
    if (counts < 1).any():
        raise ValueError(
            f"{data.n_queries} queries cannot be split into parts of {fractions.tolist()}: "
            f"part {int(np.flatnonzero(counts < 1)[0])} would be empty"
        )
    order = _query_order(data.n_queries, shuffle, seed)
    return tuple(data.subset(np.sort(part)) for part in np.split(order, bounds[:-1]))


def kfold_queries(
    data: RankingData,
    n_splits: int = 5,
    *,
    shuffle: bool = True,
    seed: int | None = 0,
) -> Iterator[tuple[RankingData, RankingData]]:
    """K-fold cross-validation over queries: yield ``(train, test)`` ``n_splits`` times.

    Every query is in exactly one test part; fold sizes differ by at most one query.

    Parameters
    ----------
    data : RankingData
        The data to split.
    n_splits : int, default=5
        Number of folds, at least 2 and at most ``data.n_queries``.
    shuffle : bool, default=True
        Assign queries to folds at random; otherwise consecutive runs of queries.
    seed : int or None, default=0
        Seed of the shuffle.
    """
    n_splits = operator.index(n_splits)
    if not 2 <= n_splits <= data.n_queries:
        raise ValueError(
            f"n_splits must lie in [2, n_queries={data.n_queries}], got {n_splits}"
        )
    order = _query_order(data.n_queries, shuffle, seed)
    return (_train_test(data, test) for test in np.array_split(order, n_splits))


def _train_test(data: RankingData, test: np.ndarray) -> tuple[RankingData, RankingData]:
    in_test = np.zeros(data.n_queries, dtype=bool)
    in_test[test] = True
    return data.subset(~in_test), data.subset(in_test)
