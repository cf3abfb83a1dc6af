"""Ranking and calibration metrics, as functions and as LightGBM / XGBoost evaluation callbacks.

Every metric takes ``(y_true, y_pred, group, k=None, ...)`` with ``group`` the query group
sizes, and returns the mean over queries, or the per-query array with ``per_query=True``.
The conventions (gain, discount, order of tied scores, value of a query without relevant
documents, MAP's denominator) are keyword arguments whose defaults match LightGBM. The calibration
metrics (:mod:`gbrank.metrics.calibration`) read ``sigmoid(score)`` as a probability and
average over rows; lower is better.
"""

from .._lazy import lazy_exports as _lazy_exports

_EXPORTS = {
    "CalibrationBins": "gbrank.metrics.calibration:CalibrationBins",
    "EngineMetrics": "gbrank.metrics.engine:EngineMetrics",
    "calibration_bins": "gbrank.metrics.calibration:calibration_bins",
    "err": "gbrank.metrics.err:err",
    "expected_calibration_error": "gbrank.metrics.calibration:expected_calibration_error",
    "lgbm_ranker_metric": "gbrank.metrics.engine:lgbm_ranker_metric",
    "lightgbm_feval": "gbrank.metrics.engine:lightgbm_feval",
    "log_loss": "gbrank.metrics.calibration:log_loss",
    "make_metrics": "gbrank.metrics.engine:make_metrics",
    "mean_average_precision": "gbrank.metrics.average_precision:mean_average_precision",
    "mean_reciprocal_rank": "gbrank.metrics.reciprocal_rank:mean_reciprocal_rank",
    "mrr": "gbrank.metrics.reciprocal_rank:mrr",
    "ndcg": "gbrank.metrics.ndcg:ndcg",
    "pareto_front": "gbrank.metrics.multi_label:pareto_front",
    "pareto_plot": "gbrank.metrics.multi_label:pareto_plot",
    "per_label_ndcg": "gbrank.metrics.multi_label:per_label_ndcg",
    "precision_at_k": "gbrank.metrics.precision:precision_at_k",
    "reliability_diagram": "gbrank.metrics.calibration:reliability_diagram",
    "xgboost_metric": "gbrank.metrics.engine:xgboost_metric",
}

__getattr__, __dir__ = _lazy_exports(__name__, lambda: _EXPORTS)
__all__ = sorted(_EXPORTS)
