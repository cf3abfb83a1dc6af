"""LightGBM: reading a ``Dataset`` for an objective, refusing what LightGBM would get wrong
with a custom objective, building datasets and training under gbrank's early-stopping rule.

LightGBM 4.7 facts this module relies on (read in its source):

* ``lgb.train`` and ``lgb.cv`` copy the training parameters into ``train_set.params``, so
  the objective sees them at every call.
* ``bagging_by_query`` draws its bag only inside ``GBDT::Boosting``, which runs for
  built-in objectives; with gradients from Python the bag is never drawn and the trees
  are grown on rows that were never sampled. Refused.
* ``lgb.cv`` keeps queries whole only for objectives it knows by name; with a callable it
  splits rows, and each fold's ``Dataset.subset`` turns the pieces of a query into smaller
  queries present in both the training and the held-out part. The subset carries
  ``used_indices`` and ``reference``, from which a cut query is found and refused.
* Row bagging and GOSS sample rows after the gradients are computed on every row, so they
  work with any objective; dart drops trees when the training scores are read for the
  custom objective (``DART::GetTrainingScore``), so the gradients see the dropped model.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..groups import sizes_to_offsets, sizes_to_qid
from . import positions as _positions
from ._common import BestRound, Fields, is_builtin, watched
from .statistics import Statistics

__all__ = [
    "EarlyStopping",
    "best_iteration",
    "check",
    "check_params",
    "dataset",
    "predict",
    "read",
    "train",
]

_BAGGING_BY_QUERY = (
    "bagging_by_query=True has no effect with a custom objective in LightGBM 4.7 (it draws "
    "the bag only for its built-in objectives) and the trees are grown on rows never "
    "sampled: use row bagging (bagging_by_query=False with bagging_fraction and "
    "bagging_freq), which gbrank supports because it computes every gradient on whole queries"
)


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "+", "yes")
    return bool(value)


def check_params(params: dict | None, objective: Any = None) -> None:
    """Refuse LightGBM parameters that a custom objective cannot honour.

    Called by gbrank's front-ends before training, and by every objective call on the
    ``Dataset``'s parameters (which ``lgb.train`` fills), so ``lgb.train``, ``lgb.cv``
    and ``LGBMRanker`` users get the same error.
    """
    if not params or (objective is not None and isinstance(objective, str)):
        return
    if _truthy(params.get("bagging_by_query", False)):
        raise ValueError(_BAGGING_BY_QUERY)


def check_whole_queries(data, *, what: str = "a ranking loss", why: str = "for a callable objective") -> None:
    """Refuse an ``lgb.cv`` fold (a subset of a Dataset) that cuts a query: ``what`` needs
    whole queries, and lgb.cv splits rows ``why``."""
    used = getattr(data, "used_indices", None)
    reference = getattr(data, "reference", None)
    if used is None or reference is None:
        return
    full = reference.get_group()
    if full is None:
        return
    full = np.asarray(full, dtype=np.int64)
    query = sizes_to_qid(full)[np.asarray(used, dtype=np.int64)]
    kept = np.bincount(query, minlength=full.size)
    cut = np.flatnonzero((kept > 0) & (kept < full))
    if cut.size:
        q = int(cut[0])
        raise ValueError(
            f"this Dataset is a subset that keeps {int(kept[q])} of the {int(full[q])} rows of "
            f"query {q} ({cut.size} queries are cut): {what} needs whole queries. "
            f"lgb.cv splits rows {why}; pass "
            "folds=gbrank.engines.query_folds(train_set, nfold=...) or an "
            "sklearn.model_selection.GroupKFold split by query"
        )


def check(data) -> None:
    """Refuse a training ``Dataset`` whose parameters or rows a ranking objective cannot take."""
    check_params(getattr(data, "params", None))
    check_whole_queries(data)


# LightGBM's names of num_threads: the main name, then its aliases
_THREADS = "num_threads"
_THREAD_ALIASES = ("num_thread", "nthread", "nthreads", "n_jobs")


def training_threads(params: dict | None) -> int | None:
    """How many threads LightGBM trains with under ``params`` (a Dataset's ``params``, which
    ``lgb.train`` and ``lgb.cv`` fill): ``num_threads`` resolved from its aliases as
    LightGBM resolves them (``Config::KeyAliasTransform``: the main name wins, else the
    shortest alias, then the first in alphabetical order); None for LightGBM's default
    (OpenMP's), which a value of 0 or less also asks for."""
    params = params or {}
    if params.get(_THREADS) is not None:
        value = params[_THREADS]
    else:
        given = sorted((name for name in _THREAD_ALIASES if params.get(name) is not None), key=lambda n: (len(n), n))
        if not given:
            return None
        value = params[given[0]]
    threads = int(value)
    return threads if threads > 0 else None


def _statistics(data) -> Statistics | None:
    """Statistics of the full set of an ``lgb.cv`` fold (a subset), None for a whole set."""
    reference = getattr(data, "reference", None)
    if reference is None or getattr(data, "used_indices", None) is None or reference.get_label() is None:
        return None
    given = _positions.given(reference)
    return Statistics(
        label_max=float(np.max(reference.get_label(), initial=0)),
        n_positions=None if given is None else max(int(given.max(initial=1)), 1),
    )


def read(data, *, position: bool = False) -> Fields:
    """The fields of a ``lightgbm.Dataset`` that an objective reads, after :func:`check`;
    the positions as the user gave them with ``position`` (:mod:`gbrank.engines.positions`).

    LightGBM stores an infinite label as 1e38 (and NaN as 0) when it constructs a Dataset;
    a label of that size is refused here as the infinite label it stands for (a NaN cannot
    be told from a 0 afterwards: ``gbrank.engines.lightgbm.dataset`` and ``gbrank.Ranker``
    check the labels as given, before LightGBM rewrites them)."""
    check(data)
    group = data.get_group()
    labels = data.get_label()
    if group is None:
        raise ValueError(
            "query groups are required: pass group sizes to the LightGBM Dataset (group=[n1, n2, ...], "
            "sizes of consecutive queries) or call set_group() before training"
        )
    _check_stand_in(labels)
    weights = data.get_weight()
    sizes = np.asarray(group, dtype=np.int64)
    given = _positions.of_lightgbm(data, sizes_to_offsets(sizes)) if position else None
    return Fields(
        labels=labels,
        sizes=sizes,
        weights=None if weights is None else np.asarray(weights, dtype=np.float64),
        init_score=data.get_init_score(),
        position=given,
        statistics=_statistics(data),
    )


# LightGBM's stand-in for an infinite label (Common::AvoidInf on float), as the float32 it stores
_INF_STAND_IN = float(np.float32(1e38))


def _check_stand_in(labels) -> None:
    if labels is None or not len(labels):
        return
    values = np.asarray(labels)
    if values.max() >= _INF_STAND_IN or values.min() <= -_INF_STAND_IN:
        row = int(np.flatnonzero(np.abs(values) >= _INF_STAND_IN)[0])
        raise ValueError(
            f"the LightGBM Dataset's label {row} is {float(values[row]):g}, LightGBM's stand-in for an "
            "infinite label (it stores NaN as 0): labels must be finite; fix the labels before building "
            "the Dataset"
        )


def dataset(
    X,
    y,
    sizes,
    *,
    weight=None,
    position=None,
    init_score=None,
    params: dict | None = None,
    reference=None,
    free_raw_data: bool = True,
    categorical_feature="auto",
):
    """A constructed ``lightgbm.Dataset`` with query groups (and optional fields).

    Its labels are checked as given (finite), before LightGBM rewrites a NaN as 0; its
    ``position`` values are kept for the objectives that read them
    (:func:`gbrank.engines.positions.of_lightgbm`), since LightGBM keeps only ids of them;
    ``categorical_feature`` as ``lightgbm.Dataset`` takes it.
    """
    import lightgbm as lgb

    labels = np.asarray(y)
    if labels.dtype.kind == "O":
        labels = labels.astype(np.float64)  # a None (pandas' NA) as NaN, refused below
    if labels.dtype.kind in "fc" and not np.isfinite(labels).all():
        row = int(np.flatnonzero(~np.isfinite(labels))[0])
        raise ValueError(f"label {row} is {float(labels[row])!r}: labels must be finite (LightGBM would store it as "
                         f"{'0' if np.isnan(labels[row]) else '1e38'})")
    data = lgb.Dataset(
        X,
        y,
        group=sizes,
        weight=weight,
        position=position,
        init_score=init_score,
        params=dict(params or {}),
        reference=reference,
        free_raw_data=free_raw_data,
        categorical_feature=categorical_feature,
    )
    data.construct()
    if position is not None:
        _positions.keep(data, position, ids=data.get_position())
    return data


class EarlyStopping:
    """LightGBM callback for gbrank's early-stopping rule (:func:`gbrank.engines.watched`).

    LightGBM's own callback watches every eval set; this one watches one metric on one eval
    set, as :class:`gbrank.engines.xgboost` does in XGBoost, in the direction the metric
    reports to LightGBM (higher is better but for the calibration metrics).
    """

    def __init__(self, rounds: int, data_name: str, metric_name: str):
        # Instance attributes: lgb.train runs callbacks without an "order" in their
        # __dict__ before record_evaluation.
        self.order = 30
        self.before_iteration = False
        self.data_name = data_name
        self.metric_name = metric_name
        self._best = BestRound(rounds)
        self._best_results: list = []
        self._best_iteration = -1

    def __call__(self, env) -> None:
        from lightgbm.callback import EarlyStopException

        found = [r for r in env.evaluation_result_list if r[0] == self.data_name and r[1] == self.metric_name]
        if not found:
            raise ValueError(
                f"early stopping watches {self.metric_name!r} on {self.data_name!r}, which "
                f"this run does not report; it reports {[(r[0], r[1]) for r in env.evaluation_result_list]}"
            )
        # every metric states its direction to LightGBM (a feval's third value)
        _, _, score, higher_is_better = found[0][:4]
        if self._best.round == 0:
            self._best = BestRound(self._best.rounds, higher_is_better=bool(higher_is_better))
        stop = self._best.update(score)
        if self._best.best_round == self._best.round:
            # env.iteration counts the trees of an init_model too
            self._best_iteration = env.iteration
            self._best_results = list(env.evaluation_result_list)
        if stop or env.iteration == env.end_iteration - 1:
            raise EarlyStopException(self._best_iteration, self._best_results)


class Report:
    """LightGBM callback: one eval set's metric after each iteration, to ``report(iteration, value)``
    (iterations from 1), for tuners that prune unpromising runs."""

    def __init__(self, report: Callable[[int, float], None], data_name: str, metric_name: str) -> None:
        # instance attributes: lgb.train reads them from the callback's __dict__; before
        # gbrank's early stopping (30), so the stopping iteration is reported too
        self.order = 25
        self.before_iteration = False
        self.report = report
        self.data_name = data_name
        self.metric_name = metric_name

    def __call__(self, env) -> None:
        for data, name, value, _ in env.evaluation_result_list:
            if data == self.data_name and name == self.metric_name:
                self.report(env.iteration + 1, value)


def best_iteration(booster) -> int:
    """Rounds to predict with: the best round (1-based) under early stopping, else all."""
    best = int(booster.best_iteration)
    return best if best > 0 else int(booster.current_iteration())


def predict(booster, X, rounds: int | None = None) -> np.ndarray:
    """Raw scores (float64) of the rows of ``X`` from the first ``rounds`` rounds; by default
    LightGBM's choice (the best iteration if the booster has one, else all)."""
    return np.asarray(booster.predict(X, num_iteration=rounds, raw_score=True), dtype=np.float64)

def train(
    params: dict,
    dtrain,
    objective: Callable | str,
    *,
    num_boost_round: int,
    valid: Sequence = (),
    valid_names: Sequence[str] = (),
    feval: Callable | None = None,
    metric_names: Sequence[str] = (),
    early_stopping_rounds: int | None = None,
    evals_result: dict | None = None,
    verbose: bool | int = False,
    callbacks: Sequence = (),
):
    """``lightgbm.train`` with a gbrank or built-in objective, gbrank metrics only.

    Parameters
    ----------
    params : dict
        LightGBM parameters; ``objective`` and ``metric`` are set here.
    dtrain : lightgbm.Dataset
        The training set, with query groups (see :func:`dataset`).
    objective : gbrank objective, callable or str
        A custom objective, or one of LightGBM's ranking objectives by name.
    num_boost_round : int
    valid, valid_names : sequence
        Validation ``Dataset``s and their names (``valid_sets``, ``valid_names``).
    feval : callable, optional
        LightGBM's ``feval``, e.g. ``gbrank.metrics.make_metrics(...).lightgbm``.
    metric_names : sequence of str
        Names ``feval`` reports; early stopping watches the first on the last valid set.
    early_stopping_rounds : int, optional
        Stop after this many rounds without improvement (:class:`EarlyStopping`).
    evals_result : dict, optional
        Filled by ``lightgbm.record_evaluation``.
    verbose : bool or int
        Log the metrics every ``verbose`` rounds.
    callbacks : sequence
        More LightGBM callbacks, run after gbrank's.

    Returns
    -------
    booster, best : lightgbm.Booster, int
        The model and the number of rounds to predict with.
    """
    import lightgbm as lgb

    builtin = is_builtin(objective, "lightgbm")
    check_params(params, objective)
    if not builtin and not any(dtrain.feature_num_bin(i) > 0 for i in range(dtrain.num_feature())):
        # LightGBM aborts on a failed internal check when a custom objective meets a dataset
        # without a usable feature; say what happened instead.
        raise ValueError(
            f"LightGBM finds no feature it can split on in {dtrain.num_data()} rows (every "
            "feature is constant, or too few rows for min_data_in_leaf, default 20, and "
            "min_data_in_bin, default 3): pass more data or lower them, e.g. "
            "params={'min_data_in_leaf': 1}"
        )
    extra, callbacks = callbacks, []
    if valid and evals_result is not None:
        callbacks.append(lgb.record_evaluation(evals_result))
    if valid and verbose:
        callbacks.append(lgb.log_evaluation(period=int(verbose)))
    if early_stopping_rounds is not None:
        callbacks.append(EarlyStopping(early_stopping_rounds, *watched(list(valid_names), list(metric_names))))
    callbacks += list(extra)
    booster = lgb.train(
        {**params, "objective": objective, "metric": "None"},
        dtrain,
        num_boost_round=num_boost_round,
        valid_sets=list(valid) or None,
        valid_names=list(valid_names) or None,
        feval=feval,
        callbacks=callbacks,
    )
    return booster, best_iteration(booster)
