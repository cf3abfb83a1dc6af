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

One module per concern, every public name exported here: ``layout`` (partitioning and
placement), ``metrics`` (exact distributed metrics), ``training`` (both engines, through
:mod:`gbrank.engines`), ``multi_label`` (several label columns for :func:`gbrank.multi_label`,
``label_col=[...]``) and ``prediction``.

Data layout: one Dask DataFrame with feature columns, a label column and an integer query-id
column (``label_col``, ``qid_col``). :func:`from_arrays` builds one from Dask arrays.
"""

from __future__ import annotations

try:
    import dask  # noqa: F401
    import distributed  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("gbrank.dask needs Dask and distributed: pip install 'gbrank[dask]'") from exc

from .layout import check_partitions, from_arrays, partition_queries, place_partitions, query_sizes
from .metrics import DistributedMetrics, distributed_metrics, evaluate
from .prediction import predict
from .training import train_lightgbm, train_xgboost

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
