"""The data layout of :mod:`gbrank.dask`: every query whole in one partition, partitions
spread over the workers, and the checks that it is so."""

from __future__ import annotations

from typing import Sequence

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
from distributed import futures_of, wait

from ..groups import qid_to_sizes

__all__ = ["check_partitions", "from_arrays", "partition_queries", "place_partitions", "query_sizes"]

_POSITION = "__gbrank_position"
_PART = "__gbrank_part"
_INDEX = "__gbrank_index"


def require_frame(df, qid_col: str):
    if not isinstance(df, dd.DataFrame):
        raise TypeError(f"expected a dask DataFrame, got {type(df).__name__} (see gbrank.dask.from_arrays)")
    if qid_col not in df.columns:
        raise ValueError(f"the DataFrame has no query-id column {qid_col!r}; columns: {list(df.columns)}")
    kind = df[qid_col].dtype.kind
    if kind not in "iu":
        raise TypeError(f"query ids in {qid_col!r} must be integers, got dtype {df[qid_col].dtype}")


def require_numeric(df, features: Sequence[str]) -> None:
    """Refuse feature columns that are not numbers: neither engine's Dask interface trains
    pandas categoricals or strings here."""
    other = [str(c) for c in features if not pd.api.types.is_numeric_dtype(df[c].dtype)
             and not pd.api.types.is_bool_dtype(df[c].dtype)]
    if other:
        raise TypeError(
            f"gbrank.dask takes numeric features; {other} hold {df[other[0]].dtype} values: give their "
            f"codes (df[{other[0]!r}].cat.codes for a categorical), or train on one machine with "
            "gbrank.Ranker, which takes pandas categoricals"
        )


def from_arrays(X, y, qid, *, feature_names: Sequence[str] | None = None, label_col: str = "label", qid_col: str = "qid"):
    """One Dask DataFrame from a Dask feature array, labels and query ids.

    Parameters
    ----------
    X : dask.array.Array of shape (n_rows, n_features)
        Features; one partition per chunk of rows.
    y, qid : array-like of shape (n_rows,)
        Labels and integer query ids (Dask or NumPy arrays); rechunked to ``X``'s rows.
    feature_names : sequence of str, optional
        Column names of the features; default ``f0, f1, ...``.
    label_col, qid_col : str
        Names of the label and query-id columns.

    Returns
    -------
    dask.dataframe.DataFrame
        Feature columns, then ``label_col`` and ``qid_col``; the index holds row numbers.
    """
    X = da.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be two-dimensional, got shape {X.shape}")
    X = X.rechunk({1: -1})
    names = [f"f{i}" for i in range(X.shape[1])] if feature_names is None else list(feature_names)
    if len(names) != X.shape[1]:
        raise ValueError(f"{len(names)} feature names for {X.shape[1]} features")
    if label_col in names or qid_col in names:
        raise ValueError(f"feature names must not include {label_col!r} or {qid_col!r}")
    columns = {}
    for name, values in ((label_col, y), (qid_col, qid)):
        values = da.asarray(values)
        if values.shape != (X.shape[0],):
            raise ValueError(f"{name} has shape {values.shape} but X has {X.shape[0]} rows")
        columns[name] = values.rechunk((X.chunks[0],))
    if columns[qid_col].dtype.kind not in "iu":
        raise TypeError(f"query ids must be integers, got dtype {columns[qid_col].dtype}")
    starts = np.concatenate(([0], np.cumsum(X.chunks[0])[:-1]))
    meta = pd.DataFrame({name: pd.Series(dtype=X.dtype) for name in names})
    meta = meta.assign(**{name: pd.Series(dtype=values.dtype) for name, values in columns.items()})
    blocks = zip(X.to_delayed().ravel(), columns[label_col].to_delayed(), columns[qid_col].to_delayed(), starts)
    frames = [dask.delayed(_block_frame)(xb, yb, qb, int(start), names, label_col, qid_col) for xb, yb, qb, start in blocks]
    return dd.from_delayed(frames, meta=meta, verify_meta=False)


def _block_frame(X, y, qid, start, names, label_col, qid_col) -> pd.DataFrame:
    frame = pd.DataFrame(X, columns=names, index=pd.RangeIndex(start, start + X.shape[0]))
    frame[label_col] = y
    frame[qid_col] = qid
    return frame


def _query_parts(sizes: np.ndarray, n_parts: int) -> np.ndarray:
    """Partition of each query (queries in id order): contiguous runs balanced by rows.

    A query goes to the share of rows its middle row falls in, so every partition differs
    from ``n_rows / n_parts`` by at most the largest query. Empty partitions are dropped.
    """
    middle = np.cumsum(sizes) - sizes / 2.0
    parts = np.minimum((middle * n_parts / sizes.sum()).astype(np.int64), n_parts - 1)
    return np.unique(parts, return_inverse=True)[1].reshape(-1)


def partition_queries(df, qid_col: str = "qid", npartitions: int | None = None):
    """Repartition so that every query sits whole in one partition, balanced by rows.

    Parameters
    ----------
    df : dask.dataframe.DataFrame
        Rows of documents with an integer query-id column; the rows of a query may be
        spread over any partitions in any order.
    qid_col : str, default="qid"
        Name of the query-id column.
    npartitions : int, optional
        Number of partitions wanted, default ``df.npartitions``; at most the number of
        queries. Use a multiple of the number of workers.

    Returns
    -------
    dask.dataframe.DataFrame
        The same rows and columns (and index values). Partition ``i`` holds a contiguous range
        of query ids, ranges ascending; within a partition rows are sorted by query id, the
        rows of a query in input order. Partition sizes differ from the mean by at most the
        largest query. Divisions are unknown (the original index is kept).

    Notes
    -----
    One pass computes the rows per query and per partition (small results), then a Dask
    shuffle moves every row to its partition: one all-to-all exchange of the data.
    """
    require_frame(df, qid_col)
    wanted = df.npartitions if npartitions is None else int(npartitions)
    if wanted < 1:
        raise ValueError(f"npartitions must be at least 1, got {npartitions!r}")
    # The counts may come from other partitions than the rows below (Dask fuses the reads of
    # files when one column is projected): they are summed over the whole frame, and the
    # rows are tagged without reference to them.
    per_part = dask.compute(*[dask.delayed(_count_queries)(p) for p in df[qid_col].to_delayed()])
    counts = pd.concat(per_part).groupby(level=0).sum().sort_index()
    if counts.empty:
        raise ValueError("the DataFrame has no rows")
    qids = counts.index.to_numpy()
    parts = _query_parts(counts.to_numpy(dtype=np.int64), min(wanted, qids.size))
    n_parts = int(parts.max()) + 1

    meta = df._meta.assign(**{_INDEX: df._meta.index, _POSITION: np.int64(0), _PART: np.int64(0)})
    # One task holds the lookup tables (one entry per query) instead of a copy in every task.
    tables = dask.delayed((qids, parts), pure=True, traverse=False)
    tagged = df.map_partitions(_tag_rows, qid_col=qid_col, tables=tables, meta=meta, partition_info=True)
    moved = tagged.set_index(_PART, divisions=tuple(range(n_parts)) + (n_parts,))
    return moved.map_partitions(_order_rows, qid_col=qid_col, meta=df._meta).clear_divisions()


def _count_queries(qid: pd.Series) -> pd.Series:
    return qid.value_counts(sort=False)


def _tag_rows(part: pd.DataFrame, qid_col, tables, partition_info=None):
    """The rows with their new partition and their input position: the partition number in
    the high bits, the row within the partition in the low ones, so that the position
    orders the rows as the input does whatever partitions Dask reads them in."""
    qids, parts = tables
    number = partition_info["number"] if partition_info else 0
    where = np.searchsorted(qids, part[qid_col].to_numpy())
    return part.assign(
        **{
            _INDEX: part.index,
            _POSITION: (np.int64(number) << np.int64(32)) + np.arange(len(part), dtype=np.int64),
            _PART: parts[where],
        }
    )


def _order_rows(part: pd.DataFrame, qid_col):
    order = np.lexsort((part[_POSITION].to_numpy(), part[qid_col].to_numpy()))
    out = part.iloc[order].set_index(_INDEX)
    out.index.name = None
    return out.drop(columns=[_POSITION])


def place_partitions(client, df, workers: Sequence[str] | None = None):
    """Persist the partitions spread over the workers, balanced by rows.

    Dask's scheduler may keep several partitions on one worker and none on another; both
    engines then train on fewer machines. This groups the partitions, largest first into the
    group with the fewest rows so far (a group per worker), gives each group to the worker
    that already holds most of its rows once computed, and holds every partition there.

    Parameters
    ----------
    client : distributed.Client
        The cluster.
    df : dask.dataframe.DataFrame
        Partitions to place (whole queries each, e.g. from :func:`partition_queries`).
    workers : sequence of str, optional
        Worker addresses; default every worker of the cluster.

    Returns
    -------
    dask.dataframe.DataFrame
        The same partitions, in the same order, computed and held on their workers: the
        collection is built directly over one future per partition, each held by the worker
        it was assigned to (``client.who_has`` of the collection names it).

    Raises
    ------
    RuntimeError
        If the scheduler leaves a partition elsewhere than on its worker.
    """
    if not isinstance(df, dd.DataFrame):
        raise TypeError(f"expected a dask DataFrame, got {type(df).__name__}")
    # Client.nthreads asks the scheduler, or raises; scheduler_info falls back, when its fetch
    # fails (as under load), to a cached identity without the workers, and seemed to have none
    workers = sorted(client.nthreads()) if workers is None else list(workers)
    if not workers:
        raise ValueError("no workers to place the partitions on")
    parts = df.to_delayed()
    rows = partition_rows(df)
    load = dict.fromkeys(workers, 0)
    owner = [None] * len(parts)
    for i in sorted(range(len(parts)), key=lambda i: -rows[i]):
        target = min(workers, key=lambda w: load[w])
        owner[i] = target
        load[target] += rows[i]
    # The restriction is a first wish only: a task fused with a shuffle's output runs on the
    # worker the shuffle gives that output to, whatever the restriction says.
    futures = [client.compute(p, workers=[w], allow_other_workers=False) for p, w in zip(parts, owner)]
    wait(futures)
    futures = _move(client, futures, _relabel(owner, rows, client.who_has(futures), futures, workers))
    # The futures themselves are the partitions, with no task wrapping them that could run
    # elsewhere: the engines find a partition's worker with ``client.who_has``.
    # Dask may read the frame in fewer partitions than it announces (fused file reads).
    divisions = df.divisions if len(df.divisions) == len(futures) + 1 else (None,) * (len(futures) + 1)
    return dd.from_graph(
        {f.key: f for f in futures},
        df._meta,
        divisions,
        [f.key for f in futures],
        "placed",
    )


def _relabel(owner, rows, held, futures, workers):
    """The same groups of partitions, each given to the worker that already holds most of its
    rows, so that as few rows as possible move (the loads of the workers are unchanged)."""
    overlap = {(w, h): 0 for w in dict.fromkeys(owner) for h in workers}
    for w, n, f in zip(owner, rows, futures):
        for h in held[f.key]:
            if (w, h) in overlap:
                overlap[w, h] += int(n)
    name = {}
    for w, h in sorted(overlap, key=lambda pair: -overlap[pair]):
        if w not in name and h not in name.values():
            name[w] = h
    return [name[w] for w in owner]


def _move(client, futures, owner):
    """The futures held on their owners: one copied by a task pinned to its owner if not."""
    held = client.who_has(futures)
    moved = [
        f if set(held[f.key]) == {w}
        else client.submit(_same, f, workers=[w], allow_other_workers=False, pure=False)
        for f, w in zip(futures, owner)
    ]
    wait(moved)
    held = client.who_has(moved)
    for i, (f, w) in enumerate(zip(moved, owner)):
        if set(held[f.key]) != {w}:
            raise RuntimeError(f"partition {i} is held by {sorted(held[f.key])}, not by its worker {w}")
    return moved


def _same(part):
    return part


def stable_partitions(df):
    """``df`` with partitions that every selection of its columns keeps.

    Dask reads fewer, larger partitions when only some columns of a file-backed frame are
    read (fused reads of parquet and CSV files), so ``df[["qid"]]`` and ``df[features]``
    may cut the rows differently, and partitions taken from one need not match the other.
    A frame whose partitions are already computed (persisted, or from
    :func:`place_partitions`) is returned as it is; any other is wrapped in a map over its
    whole partitions, which Dask reads one way for every selection of columns.
    """
    if futures_of(df):
        return df
    return df.map_partitions(_same, meta=df._meta)


def partition_rows(frame) -> np.ndarray:
    """Number of rows of every partition of a Dask DataFrame or Series."""
    return np.array(dask.compute(*[dask.delayed(len)(p) for p in frame.to_delayed()]), dtype=np.int64)

def query_sizes(df, qid_col: str = "qid"):
    """Group sizes of every partition, as a Dask Series with one chunk per partition.

    This is LightGBM's ``group`` for ``DaskLGBMRanker.fit``, whose chunks are zipped with the
    data partitions. Raises (when computed) if a query's rows are not contiguous within a
    partition.
    """
    require_frame(df, qid_col)
    return df[qid_col].map_partitions(
        lambda s: pd.Series(qid_to_sizes(s.to_numpy()), dtype=np.int64), meta=(qid_col, np.int64)
    )


def check_partitions(df, qid_col: str = "qid", *, ascending: bool = False) -> pd.DataFrame:
    """Check that every query sits whole, and contiguous, in one partition.

    The partitions are those of the whole frame, which the
    engines train on: a frame read from files is read whole, since Dask may read its
    query-id column alone in fewer partitions.

    Parameters
    ----------
    df : dask.dataframe.DataFrame
    qid_col : str, default="qid"
    ascending : bool, default=False
        Also check that the query ids ascend within every partition and from one partition
        to the next, as :func:`partition_queries` leaves them. XGBoost needs it: it joins a
        worker's partitions in partition order and re-sorts rows whose query ids do not
        ascend, with an unstable sort that loses the order of the rows within a query.

    Returns
    -------
    pandas.DataFrame
        One row per partition: ``rows`` and ``queries``.

    Raises
    ------
    ValueError
        Naming a query whose rows lie in two partitions, or are not contiguous in one, or
        (``ascending``) the first query ids out of order.
    """
    require_frame(df, qid_col)
    qid = stable_partitions(df)[qid_col]
    per_part = dask.compute(*[dask.delayed(_part_queries)(p) for p in qid.to_delayed()])
    ids = np.concatenate([part_ids for _, part_ids in per_part])
    owner = np.repeat(np.arange(len(per_part)), [part_ids.size for _, part_ids in per_part])
    order = np.argsort(ids, kind="stable")
    repeated = np.flatnonzero(ids[order][1:] == ids[order][:-1])
    if repeated.size:
        first, second = order[repeated[0]], order[repeated[0] + 1]
        raise ValueError(
            f"query {ids[first]} has rows in partitions {owner[first]} and {owner[second]}: "
            "repartition with gbrank.dask.partition_queries first"
        )
    if ascending and ids.size > 1:
        # the queries in partition order, as XGBoost joins them
        down = np.flatnonzero(ids[1:] < ids[:-1])
        if down.size:
            i = int(down[0])
            raise ValueError(
                f"query {ids[i + 1]} (partition {owner[i + 1]}) comes after query {ids[i]} (partition "
                f"{owner[i]}): XGBoost re-sorts rows whose query ids do not ascend, with an unstable sort "
                "that loses the display order of the rows within a query; repartition with "
                "gbrank.dask.partition_queries, which sorts them"
            )
    return pd.DataFrame(
        {"rows": [rows for rows, _ in per_part], "queries": [part_ids.size for _, part_ids in per_part]}
    )


def _part_queries(qid: pd.Series):
    values = qid.to_numpy()
    sizes = qid_to_sizes(values)
    # an empty partition (e.g. after a filter) holds no query
    starts = (np.cumsum(sizes) - sizes).astype(np.int64)
    return values.size, values[starts]
