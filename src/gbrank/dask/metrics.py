"""Ranking metrics reduced exactly over a Dask cluster: per-query values on every partition
or worker, averaged over all queries."""

from __future__ import annotations

from dataclasses import replace

import dask.dataframe as dd
import numpy as np
import pandas as pd

from ..engines import xgboost as xgboost_engine
from ..groups import qid_to_sizes
from ..metrics import make_metrics
from ..metrics.engine import EngineMetrics
from ..metrics.err import err
from .layout import require_frame

__all__ = ["DistributedMetrics", "distributed_metrics", "evaluate"]


class DistributedMetrics:
    """gbrank metrics reduced exactly over workers: XGBoost's ``custom_metric`` on Dask.

    Each worker computes the per-query values of its own queries; an allreduce sums the
    values and the number of queries of every metric, and every worker returns the global
    mean over queries, the value one machine would compute on all the data. (XGBoost then
    averages the workers' results, which are equal.) Queries excluded by
    ``no_relevant="exclude"`` count in neither sum. Outside a distributed run it is the
    plain metric. ERR without ``max_label`` takes the largest label of every worker's rows
    (an allreduce), as one machine takes the largest of all. Build it with
    :func:`distributed_metrics`.

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
        _refuse_per_row(metrics)
        self.metrics = metrics
        self.names = metrics.names

    def __repr__(self) -> str:
        return f"DistributedMetrics({list(self.names)!r})"

    def partial(self, y_true, y_pred, group, *, label_max: float | None = None) -> np.ndarray:
        """``[[sum of per-query values], [number of queries]]`` per metric, on local data;
        ``label_max``: the largest label of all the data, for ERR without ``max_label``
        (default: of the local data)."""
        out = np.zeros((2, len(self.metrics.metrics)), dtype=np.float64)
        if len(y_true) == 0:
            return out
        metrics = self.metrics if label_max is None else _with_label_max(self.metrics, label_max)
        for j, spec in enumerate(metrics.metrics):
            values = spec.func(y_true, y_pred, group, spec.k, **spec.options, per_query=True)
            kept = values[~np.isnan(values)]
            out[0, j] = kept.sum()
            out[1, j] = kept.size
        return out

    def __call__(self, preds, dmat) -> list[tuple[str, float]]:
        """``custom_metric`` for ``xgboost.train`` and ``xgboost.dask.train``."""
        from xgboost import collective

        labels = dmat.get_label()
        label_max = None
        if _needs_label_max(self.metrics):
            label_max = np.array([labels.max(initial=0.0)], dtype=np.float64)
            if collective.get_world_size() > 1:
                # every worker joins, also one without rows of this eval set
                label_max = collective.allreduce(label_max, collective.Op.MAX)
            label_max = float(label_max[0])
        if labels.size:
            sizes = xgboost_engine.group_sizes(dmat, purpose="to evaluate ranking metrics")
            partial = self.partial(labels, preds, sizes, label_max=label_max)
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


def _refuse_per_row(metrics: EngineMetrics) -> None:
    per_row = [m.name for m in metrics.metrics if not m.per_query]
    if per_row:
        raise ValueError(
            f"{per_row[0]} is a mean over rows, and gbrank.dask reduces means over queries: compute it with "
            "gbrank.metrics.log_loss or expected_calibration_error on the gathered labels and scores"
        )


def _needs_label_max(metrics: EngineMetrics) -> bool:
    """Whether a metric reads the largest label of the data (ERR without ``max_label``)."""
    return any(m.func is err and m.options.get("max_label") is None for m in metrics.metrics)


def _with_label_max(metrics: EngineMetrics, label_max: float) -> EngineMetrics:
    """The metrics with ERR's ``max_label`` set to the largest label of all the data."""
    if label_max <= 0:
        return metrics  # every label 0: ERR is the same whatever the maximum
    return EngineMetrics([replace(m, options={**m.options, "max_label": int(label_max)})
                          if m.func is err and m.options.get("max_label") is None else m for m in metrics.metrics])


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
    number per query and metric) and averaged over all queries. ERR without ``max_label``
    takes the largest label of the whole frame. The calibration metrics, means over rows,
    are refused.

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
    _refuse_per_row(engine_metrics)
    if _needs_label_max(engine_metrics):
        # one machine's ERR scales every query by the largest label of all of them
        engine_metrics = _with_label_max(engine_metrics, float(df[label_col].max().compute()))
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
