"""Training one method on one fold, with the same tree parameters in both engines.

Timing. ``train_seconds`` is the wall time of the engine's training call minus the time
spent evaluating the validation metric (which the harness adds; the engines' own metrics
are off). It includes the objective, the tree growth and, for the native NDCG_Boost, the
presorting of the features and the estimator's own per-iteration NDCG. Building the engine's
dataset (binning) is done before and not counted; neither is compiling the gbrank kernels,
which happens once per process in a warm-up call on a tiny dataset.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..datasets import RankingData
from ..engines.statistics import Statistics
from ..gains import resolve_gain
from .checks import LABEL_TABLE_MAX, Refusal
from .data import Fold
from .methods import Method
from .timing import TimedMetric, TimedObjective

__all__ = ["FitResult", "FoldCache", "LabelGain", "TreeParams", "fit_method"]


@dataclass(frozen=True)
class TreeParams:
    """Tree parameters shared by every method, mapped to each engine's names.

    XGBoost grows leaf-wise (``grow_policy="lossguide"``) with ``max_leaves`` like LightGBM;
    it has no minimum number of rows per leaf, only the minimum hessian sum
    (``min_child_weight``, LightGBM's ``min_sum_hessian_in_leaf``). The native NDCG_Boost
    boosts decision stumps by definition and takes none of these.

    ``linear_tree`` (LightGBM only) fits a linear model of the features in each leaf, as
    LightGBM's ``linear_tree``; XGBoost methods refuse it.

    ``l2`` (LightGBM's ``lambda_l2``, XGBoost's ``lambda``) and ``feature_fraction``
    (``colsample_bytree``) are left to each engine's default when None, as without tuning.
    """

    learning_rate: float = 0.1
    num_leaves: int = 31
    min_data_in_leaf: int = 20
    min_child_weight: float = 1e-3
    max_bin: int = 255
    linear_tree: bool = False
    l2: float | None = None
    feature_fraction: float | None = None

    def lightgbm(self, threads: int, seed: int) -> dict:
        return {
            **_given({"lambda_l2": self.l2, "feature_fraction": self.feature_fraction}),
            "learning_rate": self.learning_rate,
            "num_leaves": self.num_leaves,
            "min_data_in_leaf": self.min_data_in_leaf,
            "min_sum_hessian_in_leaf": self.min_child_weight,
            "max_bin": self.max_bin,
            "linear_tree": self.linear_tree,
            "num_threads": threads,
            "seed": seed,
            "deterministic": True,
            "force_row_wise": True,
            "metric": "None",
            "verbose": -1,
        }

    def lightgbm_dataset(self) -> dict:
        # min_data_in_leaf and linear_tree shape the binned Dataset: they must match training
        return {"max_bin": self.max_bin, "min_data_in_leaf": self.min_data_in_leaf,
                "linear_tree": self.linear_tree, "verbose": -1}

    def xgboost(self, threads: int, seed: int) -> dict:
        if self.linear_tree:
            raise ValueError("linear_tree is a LightGBM option; XGBoost has no linear leaves")
        return {
            **_given({"lambda": self.l2, "colsample_bytree": self.feature_fraction}),
            "tree_method": "hist",
            "grow_policy": "lossguide",
            "max_depth": 0,
            "max_leaves": self.num_leaves,
            "eta": self.learning_rate,
            "min_child_weight": self.min_child_weight,
            "max_bin": self.max_bin,
            "nthread": threads,
            "seed": seed,
            "disable_default_eval_metric": 1,
        }


def _given(params: dict) -> dict:
    return {k: v for k, v in params.items() if v is not None}


@dataclass(frozen=True)
class LabelGain:
    """The NDCG gain of a data set's runs, chosen once from all its labels.

    Evaluation uses it, and so does every method that has a gain, unless its name sets one:
    LightGBM's built-ins (``label_gain``), XGBoost's ``rank:ndcg`` (``ndcg_exp_gain``), a
    gbrank objective's ``gain`` or ``target`` and the native NDCG_Boost's ``gain``.

    Attributes
    ----------
    gain : {"exp2", "linear"}
    max_label : float
        The largest label of the data set (LightGBM's ``label_gain`` covers 0 .. it).
    integer : bool
        Whether every label is an integer (LightGBM's built-ins need integer labels).
    """

    gain: str = "exp2"
    max_label: float = 0.0
    integer: bool = True

    @classmethod
    def of(cls, gain: str, labels: np.ndarray) -> "LabelGain":
        """``gain`` ("auto", "exp2" or "linear") resolved on ``labels`` by the label policy
        of :class:`gbrank.Ranker`."""
        labels = np.asarray(labels, dtype=np.float64)
        return cls(
            gain=resolve_gain(gain, labels),
            max_label=float(labels.max()) if labels.size else 0.0,
            integer=bool(np.all(labels == np.floor(labels))),
        )

    def lightgbm(self, objective: str) -> dict:
        """LightGBM parameters for its built-in ``objective`` with this gain."""
        if self.gain == "exp2":
            return {}
        if not self.integer:
            raise Refusal(
                f"LightGBM's built-in {objective} needs integer labels (its label_gain is indexed by "
                "the label) and these labels are fractional: run a gbrank objective or xgb:rank:ndcg, "
                "or round the labels"
            )
        if self.max_label > LABEL_TABLE_MAX:
            raise Refusal(
                f"LightGBM's built-in {objective} indexes its label_gain by the label, and the labels go up "
                f"to {self.max_label:.6g}, above {LABEL_TABLE_MAX}: rescale the labels, or run a gbrank "
                "objective or xgb:rank:ndcg"
            )
        return {"label_gain": [float(label) for label in range(int(self.max_label) + 1)]}

    def xgboost(self, objective: str) -> dict:
        """XGBoost parameters for its built-in ``objective`` with this gain."""
        return {"ndcg_exp_gain": False} if self.gain == "linear" and objective == "rank:ndcg" else {}


@dataclass
class FitResult:
    """What one training run produced."""

    test_scores: np.ndarray
    valid_curve: list[float]
    n_iterations: int
    best_iteration: int
    train_seconds: float
    objective_seconds: float | None = None
    objective_calls: int = 0

    @property
    def objective_ms_per_iteration(self) -> float | None:
        if self.objective_seconds is None or self.objective_calls == 0:
            return None
        return 1000.0 * self.objective_seconds / self.objective_calls


@dataclass
class FoldCache:
    """Each engine's datasets for one fold, built once and shared by the methods."""

    fold: Fold
    params: TreeParams
    threads: int
    _lgb: tuple | None = field(default=None, init=False, repr=False)
    _xgb: tuple | None = field(default=None, init=False, repr=False)

    def lightgbm(self):
        if self._lgb is None:
            from ..engines import lightgbm as engine

            fold, params = self.fold, self.params.lightgbm_dataset()
            dtrain = engine.dataset(fold.train.X, fold.train.y, fold.train.group, params=params, free_raw_data=False)
            dvalid = None
            if fold.valid is not None:
                dvalid = engine.dataset(
                    fold.valid.X, fold.valid.y, fold.valid.group, reference=dtrain, params=params, free_raw_data=False
                )
            self._lgb = (dtrain, dvalid)
        return self._lgb

    def xgboost(self):
        if self._xgb is None:
            from ..engines import xgboost as engine

            fold = self.fold
            dtrain = engine.dmatrix(fold.train.X, fold.train.y, fold.train.group, nthread=self.threads)
            dvalid = None
            if fold.valid is not None:
                dvalid = engine.dmatrix(fold.valid.X, fold.valid.y, fold.valid.group, nthread=self.threads)
            dtest = engine.dmatrix(fold.test.X, fold.test.y, fold.test.group, nthread=self.threads)
            self._xgb = (dtrain, dvalid, dtest)
        return self._xgb

    def with_params(self, params: TreeParams) -> "FoldCache":
        """The same fold and engine datasets, trained with other tree parameters (those that
        shape LightGBM's binned dataset, ``max_bin`` and ``linear_tree``, must not change)."""
        if (params.max_bin, params.linear_tree) != (self.params.max_bin, self.params.linear_tree):
            raise ValueError("max_bin and linear_tree shape the engines' datasets: build a new FoldCache to change them")
        other = FoldCache(self.fold, params, self.threads)
        other._lgb, other._xgb = self._lgb, self._xgb
        return other


_WARM: set[str] = set()


def _tiny_data() -> RankingData:
    rng = np.random.default_rng(0)
    sizes = np.array([12, 7, 3])
    X = rng.random((sizes.sum(), 3))
    y = np.array([2, 1, 0, 0, 1, 2, 0, 0, 1, 0, 0, 0, 1, 0, 2, 0, 0, 1, 0, 1, 0, 0], dtype=np.float64)
    return RankingData(X, y, group=sizes)


def warm_up(method: Method, metric, n_labels: int | None = None) -> None:
    """Compile the numba kernels a method and the metric use, outside any timed region (a
    multi-label method's on ``n_labels`` label columns; its objective's alone without)."""
    tiny = _tiny_data()
    if "metric" not in _WARM:
        metric(tiny.y, np.zeros(len(tiny)), tiny.group)
        _WARM.add("metric")
    if method.name in _WARM or method.builtin:
        return
    if method.engine == "native":
        method.factory()(n_estimators=2).fit(tiny.X, tiny.y, group=tiny.group, eval_set=[tuple(tiny)], eval_at=(10,))
    else:
        if method.multi_label and not n_labels:
            warm_up(method.inner(), metric)
            return
        labels = np.column_stack([tiny.y] * n_labels) if method.multi_label else None
        objective = method.build(0, labels=labels)
        y = (tiny.y > 0).astype(np.float64) if method.binary_labels else tiny.y
        # LightGBM passes float64 scores, XGBoost float32 with float32 labels
        objective.grad_hess(y, np.zeros(len(tiny)), tiny.group)
        objective.grad_hess(y.astype(np.float32), np.linspace(-1, 1, len(tiny)).astype(np.float32), tiny.group)
    _WARM.add(method.name)


def fit_method(
    method: Method,
    cache: FoldCache,
    *,
    rounds: int,
    early_stopping: int,
    seed: int,
    metric,
    metric_name: str,
    callbacks: tuple = (),
    gain: LabelGain | None = None,
) -> FitResult:
    """Train ``method`` on ``cache.fold`` and score its test part.

    ``metric(y, scores, group) -> float`` is evaluated on the validation part after every
    iteration (the curve) and drives early stopping after ``early_stopping`` iterations
    without improvement (0: never stop early; no validation part: never evaluated).
    ``callbacks`` go to the engine's training call (LightGBM or XGBoost callbacks). A
    built-in's ``method.kwargs`` are engine parameters.
    ``gain`` (default: ``2**l - 1``) goes to the methods that have a gain (:class:`LabelGain`).
    """
    gain = gain or LabelGain()
    warm_up(method, metric, len(cache.fold.label_names))
    if method.engine == "lightgbm":
        return _fit_lightgbm(method, cache, rounds, early_stopping, seed, metric, metric_name, callbacks, gain)
    if method.engine == "xgboost":
        return _fit_xgboost(method, cache, rounds, early_stopping, seed, metric, metric_name, callbacks, gain)
    if callbacks:
        raise ValueError("the native NDCG_Boost takes no engine callbacks")
    return _fit_native(method, cache, rounds, early_stopping, seed, gain)


def _objective(method: Method, seed: int, gain: LabelGain, fold: Fold):
    """A built-in objective's name, or the gbrank objective wrapped to time its calls, with
    the statistics of the whole data set (a multi-label one on the label columns of the
    fold's training rows, with each column's statistics of every row)."""
    if method.builtin:
        return method.objective
    statistics = Statistics(label_max=gain.max_label)
    if not method.multi_label:
        return TimedObjective(method.build(seed, gain=gain.gain), statistics)
    if not fold.labels:
        raise Refusal(f"{method.name} trains on several label columns, and this data set has one: give a table "
                      "with further label columns such as label_click beside label")
    table, offsets = fold.all_labels
    return TimedObjective(method.build(seed, gain=gain.gain, labels=table).part(fold.train_queries, offsets),
                          statistics)


def _engine_result(scores, evaluator: TimedMetric, objective, *, n_iterations: int, best: int, seconds: float) -> FitResult:
    timed = objective if isinstance(objective, TimedObjective) else None
    return FitResult(
        test_scores=scores,
        valid_curve=list(evaluator.values),
        n_iterations=n_iterations,
        best_iteration=best,
        train_seconds=seconds,
        objective_seconds=None if timed is None else timed.seconds,
        objective_calls=0 if timed is None else timed.calls,
    )


def _train(engine, params, dtrain, objective, evaluator: TimedMetric, rounds, early_stopping, callbacks,
           **validation):
    """``engine.train`` (an adapter of :mod:`gbrank.engines`) with the settings both engines
    share, and its time less the metric's (see the module notes): ``(booster, best, seconds)``.

    ``validation`` holds the engine's own arguments for the validation set and the metric.
    ``early_stopping`` is a number of rounds, or None or 0 for none (the callers pass None
    without a validation set).
    """
    start = time.perf_counter()
    booster, best = engine.train(
        params,
        dtrain,
        objective,
        num_boost_round=rounds,
        metric_names=[evaluator.name],
        early_stopping_rounds=early_stopping or None,
        callbacks=callbacks,
        **validation,
    )
    return booster, best, time.perf_counter() - start - evaluator.seconds


def _fit_lightgbm(method, cache, rounds, early_stopping, seed, metric, metric_name, callbacks, gain) -> FitResult:
    from ..engines import lightgbm as engine

    dtrain, dvalid = cache.lightgbm()
    params = cache.params.lightgbm(cache.threads, seed)
    if method.builtin:
        params.update(gain.lightgbm(method.objective))
        params.update(method.kwargs, objective_seed=seed)
    objective = _objective(method, seed, gain, cache.fold)
    evaluator = TimedMetric(metric_name, metric)
    valid = [] if dvalid is None else [dvalid]
    booster, best, seconds = _train(
        engine, params, dtrain, objective, evaluator, rounds, early_stopping if valid else None, callbacks,
        valid=valid, valid_names=["valid"][: len(valid)], feval=evaluator.lightgbm if valid else None,
    )
    # lgb.train keeps only the trees up to the best iteration, so count the evaluations
    n_iterations = len(evaluator.values) if valid else booster.current_iteration()
    scores = engine.predict(booster, cache.fold.test.X, best)
    return _engine_result(scores, evaluator, objective, n_iterations=n_iterations, best=best, seconds=seconds)


def _fit_xgboost(method, cache, rounds, early_stopping, seed, metric, metric_name, callbacks, gain) -> FitResult:
    from ..engines import xgboost as engine

    dtrain, dvalid, dtest = cache.xgboost()
    # the engine layer starts a custom objective from 0, as LightGBM does
    objective = _objective(method, seed, gain, cache.fold)
    params = cache.params.xgboost(cache.threads, seed)
    if method.builtin:
        params.update(gain.xgboost(method.objective))
        params.update(method.kwargs)
    evaluator = TimedMetric(metric_name, metric)
    evals = [] if dvalid is None else [(dvalid, "valid")]
    booster, best, seconds = _train(
        engine, params, dtrain, objective, evaluator, rounds, early_stopping if evals else None, callbacks,
        evals=evals, custom_metric=evaluator.xgboost if evals else None,
    )
    n_iterations = booster.num_boosted_rounds()
    scores = engine.predict(booster, dtest, best)
    return _engine_result(scores, evaluator, objective, n_iterations=n_iterations, best=best, seconds=seconds)


def _fit_native(method, cache, rounds, early_stopping, seed, gain) -> FitResult:
    fold = cache.fold
    model = method.build(seed, gain=gain.gain)
    model.set_params(n_estimators=rounds)
    kwargs = {}
    if fold.valid is not None:
        kwargs = {"eval_set": [tuple(fold.valid)], "eval_at": (10,)}
        if early_stopping:
            kwargs["early_stopping_rounds"] = early_stopping
    start = time.perf_counter()
    model.fit(fold.train.X, fold.train.y, group=fold.train.group, **kwargs)
    seconds = time.perf_counter() - start
    n_iterations = len(model.history_["M"])
    best = model.best_iteration_ or model.n_estimators_
    return FitResult(
        test_scores=np.asarray(model.predict(fold.test.X), dtype=np.float64),
        valid_curve=list(model.history_.get("valid_0_ndcg@10", [])),
        n_iterations=n_iterations,
        best_iteration=best,
        train_seconds=seconds,
    )
