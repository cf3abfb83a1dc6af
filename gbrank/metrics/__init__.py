"""Ranking metrics, as functions and as LightGBM / XGBoost evaluation callbacks.

Every metric takes ``(y_true, y_pred, group, k=None, ...)`` with ``group`` the query group
sizes, and returns the mean over queries, or the per-query array with ``per_query=True``.
The conventions (gain, discount, order of tied scores, value of a query without relevant
documents, MAP's denominator) are keyword arguments whose defaults match LightGBM.
"""

from .average_precision import mean_average_precision
from .engine import (
    EngineMetrics,
    lgbm_ranker_metric,
    lightgbm_feval,
    make_metrics,
    xgboost_metric,
)
from .err import err
from .ndcg import ndcg
from .precision import precision_at_k
from .reciprocal_rank import mean_reciprocal_rank, mrr

__all__ = [
    "EngineMetrics",
    "err",
    "lgbm_ranker_metric",
    "lightgbm_feval",
    "make_metrics",
    "mean_average_precision",
    "mean_reciprocal_rank",
    "mrr",
    "ndcg",
    "precision_at_k",
    "xgboost_metric",
]
