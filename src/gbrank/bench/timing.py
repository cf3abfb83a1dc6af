"""Wrappers that time what an engine calls back: the objective and the validation metric."""

from __future__ import annotations

import time
from typing import Callable

__all__ = ["TimedMetric", "TimedObjective"]


class TimedObjective:
    """Calls a gbrank objective as ``f(preds, data)`` and adds up the seconds spent in it.

    ``statistics`` are those of the whole data set (:class:`gbrank.engines.Statistics`): a
    fold's training part is a part of it, as an ``lgb.cv`` fold is of its full set, so a
    statistic such as the label maximum is the data set's in every fold, as evaluation
    takes it.
    """

    def __init__(self, objective, statistics=None) -> None:
        self.objective = objective
        self.statistics = statistics
        self.seconds = 0.0
        self.calls = 0

    def __deepcopy__(self, memo):
        # lgb.train deep-copies its params: the copy must keep counting here
        return self

    def __call__(self, preds, data):
        from ..engines import gradients

        start = time.perf_counter()
        out = gradients(self.objective, preds, data, statistics=self.statistics)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return out


class TimedMetric:
    """The validation metric as LightGBM's ``feval`` and XGBoost's ``custom_metric``.

    Records one value per call (one call per iteration: only the validation set is
    evaluated) and the seconds spent, which the harness subtracts from the training time.
    """

    def __init__(self, name: str, metric: Callable) -> None:
        self.name = name
        self.metric = metric
        self.values: list[float] = []
        self.seconds = 0.0

    def __deepcopy__(self, memo):
        return self

    def _evaluate(self, preds, labels, group) -> float:
        start = time.perf_counter()
        value = float(self.metric(labels, preds, group))
        self.values.append(value)
        self.seconds += time.perf_counter() - start
        return value

    def lightgbm(self, preds, data):
        return self.name, self._evaluate(preds, data.get_label(), data.get_group()), True

    def xgboost(self, preds, dmat):
        from ..engines.xgboost import group_sizes

        group = group_sizes(dmat, purpose="to evaluate ranking metrics")
        return self.name, self._evaluate(preds, dmat.get_label(), group)
