"""Ranking metrics reduced exactly over a Dask cluster: per-query values on every partition
or worker, averaged over all queries."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd

from ..engines import xgboost as xgboost_engine
from ..groups import qid_to_sizes
from ..metrics import make_metrics
from .layout import require_frame

__all__ = ["DistributedMetrics", "distributed_metrics", "evaluate"]


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
            sizes = xgboost_engine.group_sizes(dmat, purpose="to evaluate ranking metrics")
            partial = self.partial(labels, preds, sizes)
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
        return xgboost_engine.early_stopping(rounds, data_name=data_name, metric_name=metric_name or self.names[0])


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
    require_frame(df, qid_col)
    engine_metrics = make_metrics(metrics, prefix="", **conventions)
    meta = pd.DataFrame(
        {name: pd.Series(dtype=np.float64) for name in engine_metrics.names},
        index=pd.Index(df._meta[qid_col].to_numpy(), name=qid_col),
    )
    # Labels, ids and scores are read together, one task per partition: partitions taken from
    # two collections apart need not match (Dask fuses the file reads of a few columns).
    if isinstance(scores, str):
        if scores not in df.columns:
            raise ValueError(f"the DataFrame has no score column {scores!r}; columns: {list(df.columns)}")
        tables = df.map_partitions(_column_per_query, scores, label_col, qid_col, engine_metrics, meta=meta)
    elif isinstance(scores, dd.Series) and scores.npartitions == df.npartitions:
        tables = dd.map_partitions(_per_query, df, scores, label_col, qid_col, engine_metrics, meta=meta,
                                   align_dataframes=False)
    else:
        raise ValueError("scores must be a column name or a dask Series partitioned like df")
    table = tables.compute()
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


def _column_per_query(part: pd.DataFrame, score_col, label_col, qid_col, engine_metrics) -> pd.DataFrame:
    return _per_query(part, part[score_col], label_col, qid_col, engine_metrics)


def _per_query(part: pd.DataFrame, scores: pd.Series, label_col, qid_col, engine_metrics) -> pd.DataFrame:
    if len(part) != len(scores):
        raise ValueError(
            f"a partition has {len(part)} rows but {len(scores)} scores: compute the scores from this "
            "frame (gbrank.dask.predict(booster, df)) or pass the name of a score column of df"
        )
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
