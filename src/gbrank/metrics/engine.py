"""gbrank metrics as LightGBM and XGBoost evaluation callbacks.

One :func:`make_metrics` call turns a list of metric specs into an :class:`EngineMetrics`
whose attributes plug into each engine::

    m = make_metrics(["ndcg@10", "map@5", "mrr"])
    lgb.train(params | {"metric": "None"}, dtrain, valid_sets=[dvalid], feval=m.lightgbm)
    LGBMRanker(metric="None").fit(X, y, group=g, eval_set=[...], eval_group=[...],
                                  eval_metric=m.lgbm_ranker)
    xgb.train(params, dtrain, evals=[(dvalid, "valid")], custom_metric=m.xgboost,
              callbacks=[m.xgboost_early_stopping(20)])

Specs are ``"<metric>"`` or ``"<metric>@<k>"`` with metric ``ndcg``, ``map``, ``mrr``
(alias ``recip_rank``), ``precision`` (aliases ``p``, ``pre``) or ``err``, or one of the
calibration metrics ``logloss`` and ``ece`` (:mod:`gbrank.metrics.calibration`; no cut-off);
a spec may also be a pair ``(spec, options)`` whose options override the shared conventions
for that metric (and may set its ``name``).

Names are ``prefix + canonical spec``, ``"gbrank-ndcg@10"`` by default: the prefix keeps them
apart from the engines' built-in ``ndcg@10`` and ``map@5``, which a run usually reports too
(LightGBM adds its default metric unless ``metric="None"``) and which differ from gbrank's as
soon as a convention differs. Names must be unique. The ranking metrics are
higher-is-better, the calibration metrics (``logloss``, ``ece``) lower-is-better.

With the default conventions, ``ndcg@k`` and ``map@k`` equal LightGBM's built-in ones and
XGBoost's ``ndcg@k`` and ``map@k``; ``(("precision@k", {"divide_by": "min_kn",
"no_relevant": 0.0}))`` equals XGBoost's ``pre@k`` and ``no_relevant=0.0`` its ``@k-``
variants. XGBoost's ``ndcg``, ``map`` and ``pre`` without a cut-off stop at rank 32;
gbrank's take the whole list (use ``ndcg@32`` to match).

Early stopping. LightGBM reads ``is_higher_better`` from the returned tuples. XGBoost
guesses the direction from the metric name: it would *minimize* the ranking metrics' names
(right for the calibration metrics, ``logloss`` and ``ece``, which are lower-is-better). With a
ranking metric pass ``maximize=True`` with ``early_stopping_rounds=`` to ``xgb.train`` /
``xgb.cv``, or use :meth:`EngineMetrics.xgboost_early_stopping`, which takes the watched
metric's direction (gbrank reads nothing of the running training to set it). Which metric
stops training is the engine's choice in plain
``lgb.train`` / ``xgb.train`` (XGBoost: the last metric on the last eval set); gbrank's rule,
the first metric on the last eval set (:func:`gbrank.engines.watched`), is applied by
:meth:`EngineMetrics.xgboost_early_stopping`, ``gbrank.engines.lightgbm.EarlyStopping`` and
every gbrank front-end.

The values are unweighted means over queries (``logloss`` and ``ece``: over rows, and an
XGBoost DMatrix needs no query groups for them alone). Sample or query weights on the
evaluated Dataset/DMatrix are ignored (with a warning), whereas the engines' built-in metrics
weight them.
"""

from __future__ import annotations

import inspect
import re
import warnings
from dataclasses import dataclass, field
from typing import Callable, Sequence

from .._validation import check_float, check_int
from ..engines import lightgbm as lightgbm_engine
from ..engines import xgboost as xgboost_engine
from .average_precision import _check_options as _map_options
from .average_precision import mean_average_precision
from .calibration import _check_probability, expected_calibration_error, log_loss
from .err import _check_options as _err_options
from .err import err
from .ndcg import _check_options as _ndcg_options
from .ndcg import ndcg
from .precision import _check_options as _precision_options
from .precision import precision_at_k
from .reciprocal_rank import _check_options as _mrr_options
from .reciprocal_rank import mean_reciprocal_rank

__all__ = [
    "EngineMetrics",
    "MetricSpec",
    "lgbm_ranker_metric",
    "lightgbm_feval",
    "make_metrics",
    "xgboost_metric",
]

def _calibration_options(metric: str, k, max_label, n_bins: int = 10, probability: bool = False) -> None:
    """Fail on a bad setting of a calibration metric before any data is read."""
    if k is not None:
        raise ValueError(f"{metric} is a calibration metric over all rows and takes no cut-off; write {metric!r}")
    check_int("n_bins", n_bins, min=1)
    check_float("max_label", max_label, min=0.0, strict=True, optional=True)
    _check_probability(probability, f"{metric}'s probability")


# the calibration metrics in the ranking metrics' call shape (a cut-off they refuse)
def _log_loss_at(y_true, y_pred, group, k, *, max_label=None, probability=False):
    return log_loss(y_true, y_pred, group, max_label=max_label, probability=probability)


def _log_loss_options(k, *, max_label=None, probability=False):
    _calibration_options("logloss", k, max_label, probability=probability)


def _ece_at(y_true, y_pred, group, k, *, n_bins=10, max_label=None, probability=False):
    return expected_calibration_error(y_true, y_pred, group, n_bins=n_bins, max_label=max_label,
                                      probability=probability)


def _ece_options(k, *, n_bins=10, max_label=None, probability=False):
    _calibration_options("ece", k, max_label, n_bins, probability)


_REGISTRY: dict[str, tuple[Callable, Callable]] = {
    "ndcg": (ndcg, _ndcg_options),
    "map": (mean_average_precision, _map_options),
    "mrr": (mean_reciprocal_rank, _mrr_options),
    "precision": (precision_at_k, _precision_options),
    "err": (err, _err_options),
    "logloss": (_log_loss_at, _log_loss_options),
    "ece": (_ece_at, _ece_options),
}
_ALIASES = {"recip_rank": "mrr", "p": "precision", "pre": "precision"}
# lower-is-better: the calibration metrics
_LOWER = {"logloss", "ece"}
_SPEC = re.compile(r"^([a-z_]+)(?:@([0-9]+))?$")


def _conventions(func: Callable) -> set[str]:
    params = inspect.signature(func).parameters.values()
    return {p.name for p in params if p.kind is p.KEYWORD_ONLY and p.name not in ("per_query", "qid")}


@dataclass(frozen=True)
class MetricSpec:
    """One parsed metric: its display name, function, cut-off, conventions and direction."""

    name: str
    func: Callable
    k: int | None
    options: dict = field(default_factory=dict)
    higher_is_better: bool = True
    #: whether it is a mean over queries (the calibration metrics are means over rows)
    per_query: bool = True

    def __call__(self, y_true, y_pred, group) -> float:
        return self.func(y_true, y_pred, group, self.k, **self.options)


def _parse(spec, conventions: dict, prefix: str) -> MetricSpec:
    options: dict = {}
    if isinstance(spec, tuple):
        if len(spec) != 2 or not isinstance(spec[1], dict):
            raise TypeError(f"a metric spec is a string or a pair (spec, options), got {spec!r}")
        spec, options = spec[0], dict(spec[1])
    if not isinstance(spec, str):
        raise TypeError(f"a metric spec must be a string such as 'ndcg@10', got {spec!r}")
    match = _SPEC.match(spec.strip().lower())
    metric = _ALIASES.get(match.group(1), match.group(1)) if match else None
    if metric not in _REGISTRY:
        raise ValueError(
            f"unknown metric spec {spec!r}: expected <metric> or <metric>@<k> with metric "
            f"one of {sorted(_REGISTRY)} (aliases {sorted(_ALIASES)})"
        )
    k = int(match.group(2)) if match.group(2) is not None else None
    func, check = _REGISTRY[metric]
    accepted = _conventions(func)
    name = options.pop("name", None)
    unknown = set(options) - accepted
    if unknown:
        raise TypeError(f"{spec!r} does not take {sorted(unknown)}; it takes {sorted(accepted)}")
    merged = {key: value for key, value in conventions.items() if key in accepted}
    merged.update(options)
    check(k, **merged)
    if name is None:
        name = prefix + metric + ("" if k is None else f"@{k}")
    return MetricSpec(name=name, func=func, k=k, options=merged, higher_is_better=metric not in _LOWER,
                      per_query=metric not in _LOWER)


def _warn_weights(engine: str) -> None:
    warnings.warn(
        f"the evaluated {engine} data has weights; gbrank metrics are unweighted means (over "
        "queries, or over rows for logloss and ece) and ignore them",
        UserWarning,
        stacklevel=3,
    )


class EngineMetrics:
    """A list of metrics, callable from LightGBM and XGBoost. Build it with :func:`make_metrics`.

    Attributes
    ----------
    metrics : tuple of MetricSpec
    names : tuple of str
        Unique metric names, in the order the engines report them.
    higher_is_better : bool
        Whether every metric is higher-is-better (False once a calibration metric is listed;
        each :class:`MetricSpec` says its own direction).
    """

    def __init__(self, metrics: Sequence[MetricSpec]):
        self.metrics = tuple(metrics)
        self.names = tuple(m.name for m in self.metrics)
        self.higher_is_better = all(m.higher_is_better for m in self.metrics)

    def __repr__(self) -> str:
        return f"EngineMetrics({list(self.names)!r})"

    def evaluate(self, y_true, y_pred, group) -> list[tuple[str, float]]:
        """``[(name, value), ...]`` on labels, scores and group sizes."""
        return [(m.name, m(y_true, y_pred, group)) for m in self.metrics]

    def lightgbm(self, preds, eval_data) -> list[tuple[str, float, bool]]:
        """``feval`` for ``lightgbm.train``: ``f(preds, eval_data)``.

        Groups come from ``eval_data.get_group()``.
        """
        if any(m.per_query for m in self.metrics):
            lightgbm_engine.check_whole_queries(
                eval_data, what="a ranking metric", why="for every objective but lambdarank and rank_xendcg")
        if eval_data.get_weight() is not None:
            _warn_weights("LightGBM")
        results = self.evaluate(eval_data.get_label(), preds, eval_data.get_group())
        return [(name, value, m.higher_is_better) for (name, value), m in zip(results, self.metrics)]

    def lgbm_ranker(self, y_true, y_pred, weight, group) -> list[tuple[str, float, bool]]:
        """``eval_metric`` for ``LGBMRanker.fit``, in LightGBM's four-argument form."""
        if weight is not None:
            _warn_weights("LightGBM")
        results = self.evaluate(y_true, y_pred, group)
        return [(name, value, m.higher_is_better) for (name, value), m in zip(results, self.metrics)]

    def xgboost(self, preds, dmat) -> list[tuple[str, float]]:
        """``custom_metric`` for ``xgboost.train``: ``f(preds, dmat)``.

        Groups come from the DMatrix's ``group_ptr`` (:func:`gbrank.engines.xgboost.group_sizes`),
        so they follow any re-ordering XGBoost applied to the rows. The calibration metrics
        alone need none (a ``binary:logistic`` model's DMatrix has no groups).
        """
        if not hasattr(dmat, "get_uint_info"):
            raise TypeError(
                f"{self!r}.xgboost is xgb.train's custom_metric(predt, dmatrix) and got {type(dmat).__name__}: "
                "XGBRanker calls eval_metric(y_true, y_pred) without the query groups ranking metrics need; "
                "train with xgb.train(custom_metric=...) or gbrank.Ranker(engine='xgboost') with eval_set"
            )
        optional = not any(m.per_query for m in self.metrics)
        sizes = xgboost_engine.group_sizes(dmat, purpose="to evaluate ranking metrics", optional=optional)
        if dmat.get_weight().size:
            _warn_weights("XGBoost")
        return self.evaluate(dmat.get_label(), preds, sizes)

    def xgboost_early_stopping(
        self,
        rounds: int,
        *,
        data_name: str | None = None,
        save_best: bool = False,
        min_delta: float = 0.0,
    ):
        """An ``xgboost.callback.EarlyStopping`` under gbrank's rule: it maximizes the first
        metric of the list on the last eval set (:func:`gbrank.engines.watched`), or
        minimizes it for a calibration metric.

        Pass it in ``callbacks=`` of ``xgb.train`` together with ``custom_metric=self.xgboost``
        (and no ``early_stopping_rounds``). ``data_name`` defaults to the last eval set.
        """
        return xgboost_engine.early_stopping(
            rounds, data_name=data_name, metric_name=self.names[0], save_best=save_best, min_delta=min_delta,
            maximize=self.metrics[0].higher_is_better,
        )


def make_metrics(
    metrics: str | Sequence, *, prefix: str = "gbrank-", **conventions
) -> EngineMetrics:
    """Build engine callbacks for a list of metric specs.

    Parameters
    ----------
    metrics : str or sequence
        Specs such as ``["ndcg@10", "map@5", "mrr", "precision@3", "err@10"]``; see the
        module docstring for the grammar and for ``(spec, options)`` pairs.
    prefix : str, default="gbrank-"
        Prepended to every generated name. Names must not contain ``":"``, on which XGBoost
        splits its log lines.
    **conventions
        Keyword arguments of the metric functions (``gain``, ``discount``, ``ties``,
        ``no_relevant``, ``denominator``, ``relevance_threshold``, ``divide_by``,
        ``max_label``, ``n_bins``). Each goes to every listed metric that takes it; one that no listed
        metric takes is an error. Settings are checked here, before training starts.

    Returns
    -------
    EngineMetrics
        With ``.lightgbm`` (``feval``), ``.lgbm_ranker`` (``eval_metric``), ``.xgboost``
        (``custom_metric``) and ``.xgboost_early_stopping(rounds)``.

    Raises
    ------
    ValueError
        For an unknown spec, a bad setting, or names that are not unique.
    TypeError
        For a convention that none of the listed metrics takes.

    Examples
    --------
    >>> from gbrank.metrics import make_metrics
    >>> metrics = make_metrics(["ndcg@3", "map@3"])
    >>> metrics.names
    ('gbrank-ndcg@3', 'gbrank-map@3')
    >>> [(name, round(value, 4)) for name, value in metrics.evaluate([2, 0, 1, 0], [0.5, 1.0, -0.5, 0.2], [4])]
    [('gbrank-ndcg@3', 0.5213), ('gbrank-map@3', 0.25)]
    """
    if isinstance(metrics, str):
        metrics = [metrics]
    metrics = list(metrics)
    if not metrics:
        raise ValueError("make_metrics needs at least one metric spec")
    taken = set().union(*(_conventions(func) for func, _ in _REGISTRY.values()))
    unknown = set(conventions) - taken
    if unknown:
        raise TypeError(f"unknown metric conventions {sorted(unknown)}; known: {sorted(taken)}")
    parsed = [_parse(spec, conventions, prefix) for spec in metrics]
    used = set().union(*(set(m.options) for m in parsed))
    unused = set(conventions) - used
    if unused:
        raise TypeError(
            f"conventions {sorted(unused)} are taken by none of {[m.name for m in parsed]}"
        )
    names = [m.name for m in parsed]
    bad = [name for name in names if not name or ":" in name]
    if bad:
        raise ValueError(
            f"metric names must be non-empty and free of ':' (XGBoost splits its logs on it): {bad}"
        )
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ValueError(f"metric names must be unique; repeated: {duplicated}")
    return EngineMetrics(parsed)


def lightgbm_feval(metrics, **conventions):
    """``make_metrics(metrics, **conventions).lightgbm``: a ``feval`` for ``lightgbm.train``.

    Examples
    --------
    >>> import lightgbm as lgb
    >>> import numpy as np
    >>> from gbrank.metrics import lightgbm_feval
    >>> data = lgb.Dataset(np.arange(4.0).reshape(-1, 1), label=[2, 0, 1, 0], group=[4],
    ...                    params={"verbose": -1}).construct()
    >>> [(name, round(value, 4), higher)
    ...  for name, value, higher in lightgbm_feval("ndcg@3")(np.array([0.5, 1.0, -0.5, 0.2]), data)]
    [('gbrank-ndcg@3', 0.5213, True)]
    """
    return make_metrics(metrics, **conventions).lightgbm


def lgbm_ranker_metric(metrics, **conventions):
    """``make_metrics(metrics, **conventions).lgbm_ranker``: ``eval_metric`` for ``LGBMRanker``.

    Examples
    --------
    >>> from gbrank.metrics import lgbm_ranker_metric
    >>> metric = lgbm_ranker_metric("map@3")
    >>> [(name, round(value, 4), higher)
    ...  for name, value, higher in metric([2, 0, 1, 0], [0.5, 1.0, -0.5, 0.2], None, [4])]
    [('gbrank-map@3', 0.25, True)]
    """
    return make_metrics(metrics, **conventions).lgbm_ranker


def xgboost_metric(metrics, **conventions):
    """``make_metrics(metrics, **conventions).xgboost``: ``custom_metric`` for ``xgboost.train``.

    With ``xgb.train(..., early_stopping_rounds=n)``, pass ``maximize=True``: XGBoost would
    minimise these names (see the module notes). ``make_metrics(...).xgboost_early_stopping(rounds)``
    maximises and also picks the metric by gbrank's rule.

    Examples
    --------
    >>> import numpy as np
    >>> import xgboost as xgb
    >>> from gbrank.metrics import xgboost_metric
    >>> dmat = xgb.DMatrix(np.arange(4.0).reshape(-1, 1), label=[2, 0, 1, 0], group=[4])
    >>> [(name, round(value, 4)) for name, value in xgboost_metric("ndcg@3")(np.array([0.5, 1.0, -0.5, 0.2]), dmat)]
    [('gbrank-ndcg@3', 0.5213)]
    """
    return make_metrics(metrics, **conventions).xgboost
