"""Distributed training on Dask with whole queries, and exact distributed ranking metrics.

Both engines train data-parallel: every worker computes the gradients of its own rows and
the workers merge histograms. A listwise or pairwise loss couples the documents of a query,
so a query split between two partitions (or workers) becomes two smaller queries and the
gradients are wrong without any error. The rule here is therefore **every query sits whole in
one partition**, and partitions stay whole on a worker:

1. :func:`partition_queries` shuffles a Dask DataFrame so that each partition holds whole
   queries, partitions balanced by rows, rows of a partition ordered by query id (then by
   input position); :func:`place_partitions` pins the partitions to the workers, balanced
   by rows;
2. :func:`train_lightgbm` (``lightgbm.dask.DaskLGBMRanker``) and :func:`train_xgboost`
   (``xgboost.dask.train``) check that and train a gbrank objective. The objective reads
   labels and groups from the data each worker is handed (XGBoost re-sorts a worker's rows
   by query id), never from arrays captured on the client;
3. :func:`evaluate` computes a metric exactly: per-query values on every partition, reduced
   over all queries. :class:`DistributedMetrics` does the same inside XGBoost training with an
   allreduce of per-query sums and counts; XGBoost's own reduction of a custom metric is the
   unweighted mean of the workers' means, which is wrong whenever workers hold different
   numbers of queries.

Data layout: one Dask DataFrame with feature columns, a label column and an integer query-id
column (``label_col``, ``qid_col``). :func:`from_arrays` builds one from Dask arrays.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from .groups import qid_to_sizes
from .metrics import make_metrics

try:
    import dask
    import dask.array as da
    import dask.dataframe as dd
    from distributed import wait
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("gbrank.dask needs Dask and distributed: pip install 'gbrank[dask]'") from exc

__all__ = [
    "DistributedMetrics",
    "check_partitions",
    "distributed_metrics",
    "evaluate",
    "from_arrays",
    "partition_queries",
    "place_partitions",
    "predict",
    "query_sizes",
    "train_lightgbm",
    "train_xgboost",
]

_POSITION = "__gbrank_position"
_PART = "__gbrank_part"
_INDEX = "__gbrank_index"


def _require_frame(df, qid_col: str):
    if not isinstance(df, dd.DataFrame):
        raise TypeError(f"expected a dask DataFrame, got {type(df).__name__} (see gbrank.dask.from_arrays)")
    if qid_col not in df.columns:
        raise ValueError(f"the DataFrame has no query-id column {qid_col!r}; columns: {list(df.columns)}")
    kind = df[qid_col].dtype.kind
    if kind not in "iu":
        raise TypeError(f"query ids in {qid_col!r} must be integers, got dtype {df[qid_col].dtype}")


# ---------------------------------------------------------------------------- layout
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
    _require_frame(df, qid_col)
    wanted = df.npartitions if npartitions is None else int(npartitions)
    if wanted < 1:
        raise ValueError(f"npartitions must be at least 1, got {npartitions!r}")
    per_part = dask.compute(*[dask.delayed(_count_queries)(p) for p in df[qid_col].to_delayed()])
    counts = pd.concat(per_part).groupby(level=0).sum().sort_index()
    if counts.empty:
        raise ValueError("the DataFrame has no rows")
    qids = counts.index.to_numpy()
    parts = _query_parts(counts.to_numpy(dtype=np.int64), min(wanted, qids.size))
    n_parts = int(parts.max()) + 1
    lengths = np.array([int(c.sum()) for c in per_part], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))

    meta = df._meta.assign(**{_INDEX: df._meta.index, _POSITION: np.int64(0), _PART: np.int64(0)})
    # One task holds the lookup tables (one entry per query) instead of a copy in every task.
    tables = dask.delayed((qids, parts, starts), pure=True, traverse=False)
    tagged = df.map_partitions(_tag_rows, qid_col=qid_col, tables=tables, meta=meta, partition_info=True)
    moved = tagged.set_index(_PART, divisions=tuple(range(n_parts)) + (n_parts,))
    return moved.map_partitions(_order_rows, qid_col=qid_col, meta=df._meta).clear_divisions()


def _count_queries(qid: pd.Series) -> pd.Series:
    return qid.value_counts(sort=False)


def _tag_rows(part: pd.DataFrame, qid_col, tables, partition_info=None):
    qids, parts, starts = tables
    number = partition_info["number"] if partition_info else 0
    where = np.searchsorted(qids, part[qid_col].to_numpy())
    return part.assign(
        **{
            _INDEX: part.index,
            _POSITION: starts[number] + np.arange(len(part), dtype=np.int64),
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
    engines then train on fewer machines. This pins every partition to a worker, largest
    first onto the worker with the fewest rows so far.

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
        The same partitions, in the same order, computed and held on their workers.
    """
    if not isinstance(df, dd.DataFrame):
        raise TypeError(f"expected a dask DataFrame, got {type(df).__name__}")
    workers = sorted(client.scheduler_info()["workers"]) if workers is None else list(workers)
    if not workers:
        raise ValueError("no workers to place the partitions on")
    parts = df.to_delayed()
    rows = dask.compute(*[dask.delayed(len)(p) for p in parts])
    load = dict.fromkeys(workers, 0)
    owner = [None] * len(parts)
    for i in sorted(range(len(parts)), key=lambda i: -rows[i]):
        target = min(workers, key=lambda w: load[w])
        owner[i] = target
        load[target] += rows[i]
    futures = [client.compute(p, workers=[w], allow_other_workers=False) for p, w in zip(parts, owner)]
    placed = dd.from_delayed(futures, meta=df._meta, verify_meta=False).persist()
    wait(placed)
    return placed


def query_sizes(df, qid_col: str = "qid"):
    """Group sizes of every partition, as a Dask Series with one chunk per partition.

    This is LightGBM's ``group`` for ``DaskLGBMRanker.fit``, whose chunks are zipped with the
    data partitions. Raises (when computed) if a query's rows are not contiguous within a
    partition.
    """
    _require_frame(df, qid_col)
    return df[qid_col].map_partitions(
        lambda s: pd.Series(qid_to_sizes(s.to_numpy()), dtype=np.int64), meta=(qid_col, np.int64)
    )


def check_partitions(df, qid_col: str = "qid") -> pd.DataFrame:
    """Check that every query sits whole, and contiguous, in one partition.

    Returns
    -------
    pandas.DataFrame
        One row per partition: ``rows`` and ``queries``.

    Raises
    ------
    ValueError
        Naming a query whose rows lie in two partitions, or are not contiguous in one.
    """
    _require_frame(df, qid_col)
    per_part = dask.compute(*[dask.delayed(_part_queries)(p) for p in df[qid_col].to_delayed()])
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
    return pd.DataFrame(
        {"rows": [rows for rows, _ in per_part], "queries": [part_ids.size for _, part_ids in per_part]}
    )


def _part_queries(qid: pd.Series):
    values = qid.to_numpy()
    sizes = qid_to_sizes(values)
    # an empty partition (e.g. after a filter) holds no query
    starts = (np.cumsum(sizes) - sizes).astype(np.int64)
    return values.size, values[starts]


# ---------------------------------------------------------------------------- metrics
class DistributedMetrics:
    """gbrank metrics reduced exactly over workers: XGBoost's ``custom_metric`` on Dask.

    Each worker computes the per-query values of its own queries; an allreduce sums the
    values and the number of queries of every metric, and every worker returns the global
    mean over queries, the value one machine would compute on all the data. (XGBoost then
    averages the workers' results, which are equal.) Queries excluded by
    ``no_relevant="exclude"`` count in neither sum. Outside a distributed run it is the
    plain metric. Build it with :func:`distributed_metrics`.

    Parameters
    ----------
    metrics : gbrank.metrics.EngineMetrics
        The metrics, from ``gbrank.metrics.make_metrics``.

    Attributes
    ----------
    names : tuple of str
        Metric names, as XGBoost reports them.
    """

    def __init__(self, metrics):
        self.metrics = metrics
        self.names = metrics.names

    def __repr__(self) -> str:
        return f"DistributedMetrics({list(self.names)!r})"

    def partial(self, y_true, y_pred, group) -> np.ndarray:
        """``[[sum of per-query values], [number of queries]]`` per metric, on local data."""
        out = np.zeros((2, len(self.metrics.metrics)), dtype=np.float64)
        if len(y_true) == 0:
            return out
        for j, spec in enumerate(self.metrics.metrics):
            values = spec.func(y_true, y_pred, group, spec.k, **spec.options, per_query=True)
            kept = values[~np.isnan(values)]
            out[0, j] = kept.sum()
            out[1, j] = kept.size
        return out

    def __call__(self, preds, dmat) -> list[tuple[str, float]]:
        """``custom_metric`` for ``xgboost.train`` and ``xgboost.dask.train``."""
        from xgboost import collective

        labels = dmat.get_label()
        if labels.size:
            group_ptr = np.asarray(dmat.get_uint_info("group_ptr"), dtype=np.int64)
            if group_ptr.size < 2:
                raise ValueError("the DMatrix has no query groups: build it with qid= to evaluate ranking metrics")
            partial = self.partial(labels, preds, np.diff(group_ptr))
        else:
            # A worker without rows of this eval set still joins the allreduce.
            partial = self.partial(labels, preds, None)
        if collective.get_world_size() > 1:
            partial = collective.allreduce(partial.ravel(), collective.Op.SUM).reshape(partial.shape)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = partial[0] / partial[1]
        return [(name, float(value)) for name, value in zip(self.names, means)]

    def early_stopping(self, rounds: int, *, data_name: str | None = None, metric_name: str | None = None):
        """An ``xgboost.callback.EarlyStopping`` that maximises ``metric_name`` (default: the first)."""
        from xgboost.callback import EarlyStopping

        return EarlyStopping(
            rounds=rounds, metric_name=metric_name or self.names[0], data_name=data_name, maximize=True
        )


def distributed_metrics(metrics="ndcg@10", **conventions) -> DistributedMetrics:
    """Exact distributed metrics for XGBoost; specs and conventions as :func:`gbrank.metrics.make_metrics`."""
    return DistributedMetrics(make_metrics(metrics, **conventions))


def evaluate(
    df,
    scores,
    metrics="ndcg@10",
    *,
    label_col: str = "label",
    qid_col: str = "qid",
    per_query: bool = False,
    **conventions,
):
    """Ranking metrics of distributed scores, exactly as on one machine.

    Every partition computes the per-query values of its queries; they are gathered (one
    number per query and metric) and averaged over all queries.

    Parameters
    ----------
    df : dask.dataframe.DataFrame
        Labels and query ids; every query whole and contiguous in one partition.
    scores : str or dask.dataframe.Series
        A column of ``df``, or a Series partitioned like ``df`` (e.g. from :func:`predict`).
    metrics : str or sequence
        Metric specs, e.g. ``["ndcg@10", "map@5"]``; see :func:`gbrank.metrics.make_metrics`.
    label_col, qid_col : str
        Names of the label and query-id columns.
    per_query : bool, default=False
        Return the per-query values (a DataFrame indexed by query id, sorted) instead of the
        means.
    **conventions
        Metric conventions (``gain``, ``no_relevant``, ...), as in ``make_metrics``.

    Returns
    -------
    dict or pandas.DataFrame
        ``{name: mean over queries}`` (queries with NaN, from ``no_relevant="exclude"``, left
        out), or the per-query values. Names are the metric specs (``"ndcg@10"``).

    Raises
    ------
    ValueError
        If a query's rows lie in more than one partition.
    """
    _require_frame(df, qid_col)
    engine_metrics = make_metrics(metrics, prefix="", **conventions)
    if isinstance(scores, str):
        scores = df[scores]
    if not isinstance(scores, dd.Series) or scores.npartitions != df.npartitions:
        raise ValueError("scores must be a column name or a dask Series partitioned like df")
    parts = zip(df[[label_col, qid_col]].to_delayed(), scores.to_delayed())
    tables = dask.compute(
        *[dask.delayed(_per_query)(p, s, label_col, qid_col, engine_metrics) for p, s in parts]
    )
    table = pd.concat(tables)
    duplicated = table.index.duplicated()
    if duplicated.any():
        raise ValueError(
            f"query {table.index[duplicated][0]} has rows in more than one partition: "
            "repartition with gbrank.dask.partition_queries first"
        )
    table = table.sort_index()
    if per_query:
        return table
    return {name: float(table[name].mean()) for name in engine_metrics.names}


def _per_query(part: pd.DataFrame, scores: pd.Series, label_col, qid_col, engine_metrics) -> pd.DataFrame:
    if len(part) != len(scores):
        raise ValueError(f"a partition has {len(part)} rows but {len(scores)} scores")
    qid = part[qid_col].to_numpy()
    if qid.size == 0:
        empty = {spec.name: np.zeros(0) for spec in engine_metrics.metrics}
        return pd.DataFrame(empty, index=pd.Index(qid, name=qid_col))
    sizes = qid_to_sizes(qid)
    first = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    labels, values = part[label_col].to_numpy(), scores.to_numpy()
    columns = {
        spec.name: spec.func(labels, values, sizes, spec.k, **spec.options, per_query=True)
        for spec in engine_metrics.metrics
    }
    return pd.DataFrame(columns, index=pd.Index(qid[first], name=qid_col))


# ---------------------------------------------------------------------------- training
def _columns(df, label_col, qid_col, weight_col, features):
    for name in (label_col,) + ((weight_col,) if weight_col else ()):
        if name not in df.columns:
            raise ValueError(f"the DataFrame has no column {name!r}; columns: {list(df.columns)}")
    if features is None:
        features = [c for c in df.columns if c not in (label_col, qid_col, weight_col)]
    features = list(features)
    if not features:
        raise ValueError("no feature columns")
    return features


def train_lightgbm(
    client,
    df,
    objective: Callable | str,
    *,
    label_col: str = "label",
    qid_col: str = "qid",
    weight_col: str | None = None,
    features: Sequence[str] | None = None,
    num_boost_round: int = 100,
    params: dict[str, Any] | None = None,
    check: bool = True,
):
    """Train LightGBM on a Dask cluster with a gbrank objective (``DaskLGBMRanker``).

    Parameters
    ----------
    client : distributed.Client
        The cluster.
    df : dask.dataframe.DataFrame
        Features, labels and query ids, every query whole in one partition (see
        :func:`partition_queries`).
    objective : gbrank objective, callable or str
        A gbrank objective, which each worker calls on its own rows with its own group sizes
        (LightGBM's four-argument form); or ``"lambdarank"`` / ``"rank_xendcg"``.
    label_col, qid_col : str
        Names of the label and query-id columns.
    weight_col : str, optional
        Column of per-row sample weights.
    features : sequence of str, optional
        Feature columns; default every other column.
    num_boost_round : int, default=100
        Boosting rounds.
    params : dict, optional
        LightGBM parameters (``num_leaves``, ``learning_rate``, ...); each worker uses its
        Dask threads. ``verbosity`` defaults to -1.
    check : bool, default=True
        First verify with :func:`check_partitions` that no query crosses a partition (one
        pass over the query ids). Empty partitions (e.g. after a filter) are dropped either
        way: LightGBM cannot build a Dataset from one.

    Returns
    -------
    lightgbm.Booster
        The trained model (identical on every worker).

    Notes
    -----
    Custom metrics are not reduced across machines by LightGBM, so no eval sets are taken
    here: score the model with :func:`predict` and :func:`evaluate`, which are exact.
    """
    from lightgbm.dask import DaskLGBMRanker

    from .engines import lightgbm as engine

    engine.check_params(params, objective)
    _require_frame(df, qid_col)
    features = _columns(df, label_col, qid_col, weight_col, features)
    if check:
        rows = check_partitions(df, qid_col)["rows"].to_numpy()
    else:
        rows = np.array(dask.compute(*[dask.delayed(len)(p) for p in df[qid_col].to_delayed()]))
    if not rows.any():
        raise ValueError("the DataFrame has no rows")
    if not rows.all():
        # LightGBM cannot build a Dataset from an empty partition (e.g. after a filter), and a
        # worker left without rows would fail; drop them, the others stay where they are.
        df = df.partitions[[int(i) for i in np.flatnonzero(rows)]]
    model = DaskLGBMRanker(
        client=client,
        objective=objective if isinstance(objective, str) else _LightGBMWorkerObjective(objective),
        n_estimators=int(num_boost_round),
        **{"verbosity": -1, **(params or {})},
    )
    with warnings.catch_warnings():
        # LGBMRanker always carries n_jobs; the Dask wrapper replaces it by the worker's threads.
        warnings.filterwarnings("ignore", message="Parameter n_jobs will be ignored")
        model.fit(
            df[features],
            df[label_col],
            group=query_sizes(df, qid_col),
            sample_weight=None if weight_col is None else df[weight_col],
        )
    return model.booster_


def _worker_threads(objective):
    """Run the objective's kernels on the worker's thread budget.

    numba sizes its thread pool by the machine's cores, while a Dask worker is given
    ``nthreads`` (the engines train with that many): without this, every worker's kernels
    would use every core, competing with the other workers' trees and kernels.
    """
    try:
        import numba
        from distributed import get_worker

        threads = min(get_worker().state.nthreads, numba.config.NUMBA_NUM_THREADS)
    except (ImportError, ValueError, AttributeError):
        return objective()
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        return objective()
    finally:
        numba.set_num_threads(previous)


class _WorkerObjective:
    """A gbrank objective on one XGBoost worker: reads its own DMatrix on the worker's
    threads; empty workers return nothing."""

    def __init__(self, objective):
        self.objective = objective

    def __call__(self, preds, dtrain):
        if dtrain.num_row() == 0:
            return np.zeros(0), np.zeros(0)
        return _worker_threads(lambda: self.objective(preds, dtrain))


class _LightGBMWorkerObjective:
    """A gbrank objective on one LightGBM worker (the four-argument form), on the worker's threads."""

    def __init__(self, objective):
        self.objective = objective

    def __call__(self, y_true, y_pred, weight, group):
        return _worker_threads(lambda: self.objective(y_true, y_pred, weight, group))


def train_xgboost(
    client,
    df,
    objective: Callable | str,
    *,
    label_col: str = "label",
    qid_col: str = "qid",
    features: Sequence[str] | None = None,
    num_boost_round: int = 100,
    params: dict[str, Any] | None = None,
    evals: Sequence[tuple[Any, str]] | None = None,
    metrics="ndcg@10",
    early_stopping_rounds: int | None = None,
    evals_result: dict | None = None,
    check: bool = True,
    **conventions,
):
    """Train XGBoost on a Dask cluster with a gbrank objective (``xgboost.dask.train``).

    Parameters
    ----------
    client : distributed.Client
        The cluster.
    df : dask.dataframe.DataFrame
        Features, labels and integer query ids, every query whole in one partition.
    objective : gbrank objective, callable or str
        A gbrank objective, called by each worker as ``f(preds, dtrain)`` on its own
        DMatrix (whose rows XGBoost may have re-sorted by query id); or ``"rank:ndcg"``,
        ``"rank:pairwise"``, ``"rank:map"``.
    label_col, qid_col : str
        Names of the label and query-id columns.
    features : sequence of str, optional
        Feature columns; default every column but the label and the query id.
    num_boost_round : int, default=100
        Boosting rounds.
    params : dict, optional
        XGBoost parameters; each worker uses its Dask threads.
    evals : list of (dask DataFrame, str), optional
        Eval sets (same columns, queries whole) evaluated every round with
        :class:`DistributedMetrics` (exact over workers).
    metrics : str or sequence, default="ndcg@10"
        Metric specs for ``evals``; early stopping watches the first on the last eval set.
    early_stopping_rounds : int, optional
        Stop after this many rounds without improvement; the booster's ``best_iteration``
        (0-based) marks the best round.
    evals_result : dict, optional
        Filled with ``{eval_name: {metric_name: [values]}}``.
    check : bool, default=True
        First verify with :func:`check_partitions` that no query crosses a partition.
    **conventions
        Metric conventions (``gain``, ``no_relevant``, ...).

    Returns
    -------
    xgboost.Booster

    Notes
    -----
    Sample weights are not taken: ``xgboost.dask`` does not implement per-query weights.
    """
    import xgboost as xgb
    from xgboost import dask as dxgb

    frames = [df] + [frame for frame, _ in evals or []]
    for frame in frames:
        _require_frame(frame, qid_col)
        if check:
            check_partitions(frame, qid_col)
    features = _columns(df, label_col, qid_col, None, features)

    def matrix(frame):
        # Unnamed arrays: a worker that holds no rows of an eval set gets an empty DMatrix
        # without feature names, which XGBoost refuses against a model that has them.
        def column(data):
            return data.to_dask_array(lengths=True)

        return dxgb.DaskDMatrix(client, column(frame[features]), column(frame[label_col]), qid=column(frame[qid_col]))

    from .engines import watched
    from .engines import xgboost as engine

    dtrain = matrix(df)
    watch = [(matrix(frame), name) for frame, name in evals or []]
    # the built-in objective by name, or base_score from the start score of a custom one
    params = engine.params(objective, params)
    obj = None if isinstance(objective, str) else _WorkerObjective(objective)
    metric = distributed_metrics(metrics, **conventions) if watch else None
    callbacks = []
    if early_stopping_rounds is not None:
        if not watch:
            raise ValueError("early_stopping_rounds needs evals to watch")
        data_name, metric_name = watched([name for _, name in watch], metric.names)
        callbacks.append(metric.early_stopping(int(early_stopping_rounds), data_name=data_name, metric_name=metric_name))
    out = dxgb.train(
        client,
        params,
        dtrain,
        num_boost_round=int(num_boost_round),
        evals=watch or None,
        obj=obj,
        custom_metric=metric,
        callbacks=callbacks or None,
        verbose_eval=False,
    )
    if evals_result is not None:
        evals_result.update(out["history"])
    booster: xgb.Booster = out["booster"]
    booster.feature_names = list(features)
    return booster


def predict(booster, df, features: Sequence[str] | None = None):
    """Raw scores of every row, as a Dask Series partitioned like ``df`` (same index).

    Parameters
    ----------
    booster : lightgbm.Booster or xgboost.Booster
        A model, e.g. from :func:`train_lightgbm` or :func:`train_xgboost`.
    df : dask.dataframe.DataFrame
        Rows to score.
    features : sequence of str, optional
        Feature columns, default the booster's feature names.
    """
    if features is None:
        features = booster.feature_name() if hasattr(booster, "feature_name") else booster.feature_names
        if features is None:
            raise ValueError("the booster has no feature names: pass features=")
    features = list(features)
    missing = [c for c in features if c not in df.columns]
    if missing:
        raise ValueError(f"the DataFrame lacks the model's features {missing[:5]}")
    return df[features].map_partitions(_predict_part, booster, meta=("score", np.float64))


def _predict_part(part: pd.DataFrame, booster) -> pd.Series:
    X = part.to_numpy(dtype=np.float64)
    if type(booster).__module__.startswith("lightgbm"):
        values = booster.predict(X, raw_score=True)
    else:
        values = booster.inplace_predict(X, predict_type="margin")
    return pd.Series(np.asarray(values, dtype=np.float64), index=part.index, name="score")
