"""`Ranker`: a scikit-learn estimator that trains any gbrank objective on LightGBM or XGBoost.

XGBoost's own ``XGBRanker`` refuses custom objectives and LightGBM's ``LGBMRanker`` speaks
only LightGBM; `Ranker` trains through gbrank's engine layer (:func:`gbrank.engines.lightgbm.train`
and :func:`gbrank.engines.xgboost.train`, which check the parameters and build the data), with
one set of parameters, gbrank's NDCG for evaluation and early stopping, and query ids that may
come in any row order (a ``qid`` array or a pandas column).
"""

from __future__ import annotations

import copy
import numbers
from typing import Any, Callable

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_consistent_length, check_is_fitted

from ._frame import QueryOrder, query_order, split_qid
from ._sklearn_compat import check_array, validate_data
from ._validation import check_labels, check_weights
from .engines import BUILTIN_OBJECTIVES, is_builtin, positions, uses_position, with_position
from .engines import predict as engine_predict
from .engines import xgboost as xgboost_engine
from .engines._common import FRONT_END_PARAMS, refuse_params
from .gains import resolve_gain
from .groups import check_group
from .metrics import make_metrics, ndcg
from .objectives import RankingObjective

__all__ = ["Ranker"]

# gbrank name -> (LightGBM name, XGBoost name); None leaves the engine's default.
_SHARED_PARAMS = {
    "learning_rate": ("learning_rate", "eta"),
    "max_depth": ("max_depth", "max_depth"),
    "num_leaves": ("num_leaves", "max_leaves"),
    "min_child_weight": ("min_sum_hessian_in_leaf", "min_child_weight"),
    "subsample": ("bagging_fraction", "subsample"),
    "colsample_bytree": ("feature_fraction", "colsample_bytree"),
    "reg_alpha": ("lambda_l1", "alpha"),
    "reg_lambda": ("lambda_l2", "lambda"),
    "n_jobs": ("num_threads", "nthread"),
}

_IMPORTANCE = {"gain": ("gain", "total_gain"), "split": ("split", "weight")}

# LightGBM's names of its categorical_feature parameter.
_CATEGORICAL_PARAMS = ("categorical_feature", "cat_feature", "categorical_column", "cat_column", "categorical_features")


def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


class Ranker(BaseEstimator):
    r"""Gradient-boosted ranker with any gbrank objective, on LightGBM or XGBoost.

    Parameters
    ----------
    objective : gbrank objective, callable, str or None, default=None
        The loss. A gbrank objective (``gbrank.listmle_topk(k=10)``, ``gbrank.ranknet()``,
        ...) or any callable that both engines may call as ``f(preds, data) -> (grad, hess)``;
        an engine's built-in ranking objective by name (``"lambdarank"``, ``"rank_xendcg"``
        for LightGBM; ``"rank:ndcg"``, ``"rank:pairwise"``, ``"rank:map"`` for XGBoost); or
        ``None`` for ``gbrank.listmle()`` (ListMLE, Xia et al. 2008). Training uses a deep
        copy, so the object passed is never modified.
    engine : {"lightgbm", "xgboost"}, default="lightgbm"
        Trains with ``lightgbm.train`` or ``xgboost.train``.
    n_estimators : int, default=100
        Boosting rounds.
    learning_rate : float, default=0.1
        Shrinkage of every tree (XGBoost's ``eta``).
    max_depth, num_leaves, min_child_weight, subsample, colsample_bytree, reg_alpha, reg_lambda : optional
        Tree parameters under one name for both engines; ``None`` keeps the engine's default.
        They map to LightGBM's ``max_depth``, ``num_leaves``, ``min_sum_hessian_in_leaf``,
        ``bagging_fraction`` (with ``bagging_freq=1``), ``feature_fraction``, ``lambda_l1``,
        ``lambda_l2`` and to XGBoost's ``max_depth``, ``max_leaves``, ``min_child_weight``,
        ``subsample``, ``colsample_bytree``, ``alpha``, ``lambda``.
    importance_type : {"gain", "split"}, default="gain"
        What ``feature_importances_`` counts: total gain of the splits on a feature, or their
        number.
    qid_col : str or None, default="qid"
        Name of the query-id column when ``X`` is a pandas DataFrame. The column is never a
        feature. ``None`` reads no column.
    score_at : int, default=10
        Cut-off ``k`` of the NDCG@k that :meth:`score` returns.
    gain : {"auto", "exp2", "linear"} or array, default="auto"
        Gain of the NDCG used for evaluation (:meth:`score`, ``eval_set``, early stopping),
        as in :func:`gbrank.metrics.ndcg`. ``"auto"`` takes ``"exp2"`` (``2**label - 1``,
        the engines' convention) when every training label is an integer from 0 to 31 and
        ``"linear"`` (the label itself) otherwise; the choice is ``gain_``. Whatever
        labels :meth:`fit` accepts, evaluation accepts with that gain.
    n_jobs : int, optional
        Threads (LightGBM ``num_threads``, XGBoost ``nthread``); ``None``: engine default.
    random_state : int, RandomState or None, default=None
        Seed of the engine (bagging, feature sampling). ``None`` keeps the engine's default
        seed. A gbrank objective with random tie-breaking has its own ``seed``.
    params : dict, optional
        Further engine parameters, passed as they are and applied last (they win over the
        arguments above). The objective, metric, number of rounds and early stopping cannot
        be set here, nor LightGBM's aliases of them (``num_trees``, ``loss``, ...).
        LightGBM's ``categorical_feature`` (indices, or ``"name:a,b"`` with a DataFrame's
        column names) goes to the training set, where LightGBM reads it.

    Attributes
    ----------
    booster_ : lightgbm.Booster or xgboost.Booster
        The trained model, holding the rounds :meth:`predict` uses and no more: under early
        stopping the rounds up to the best one. Saved (``save_model``) and loaded anywhere,
        it predicts what :meth:`predict` does. LightGBM's ``lgb.train`` keeps those rounds
        alone; XGBoost keeps every round trained, so ``booster_`` is then the slice
        ``booster[:best_iteration_]``, with XGBoost's ``best_iteration`` and
        ``best_score`` attributes kept (the rounds trained are in ``evals_result_``).
    objective_ : callable or str
        The objective trained: a copy of ``objective`` (which stays untouched), or
        ``gbrank.listmle()`` when it is None.
    best_iteration_ : int
        Number of boosting rounds :meth:`predict` uses: the best round (1-based) under early
        stopping, otherwise every round trained.
    propensity_ : ndarray
        The propensity estimate of this fit's training set, positions 1..K relative to the
        first position a row was shown at (position 1, unless the log starts lower): set only by a click objective with ``propensity="estimate"``. It is the
        estimate after the last round trained, which under early stopping can be past
        ``best_iteration_`` (:func:`gbrank.fit_clicks` keeps the chosen round's).
    left_out_ : ndarray of bool
        Set with ``propensity_``: of its positions, those whose rows took no part in
        training (never examined below a fold; saturated for :func:`gbrank.pbm_cloglog`)
        and those no training row was shown at, where ``propensity_`` is a value nothing
        read.
    gain_ : str or ndarray
        The gain evaluation uses (see ``gain``).
    evals_result_ : dict
        ``{eval_name: {metric_name: [value per round]}}`` for the eval sets given to
        :meth:`fit` (``"valid_0"``, ``"valid_1"``, ...; metrics ``"gbrank-ndcg@k"``).
    n_features_in_ : int
        Number of features seen in :meth:`fit` (without the query-id column).
    feature_names_in_ : ndarray of str
        Feature names, when ``X`` was a DataFrame with string column names; the booster's
        feature names too.
    categorical_features_ : list of str
        The DataFrame's columns of pandas ``category`` dtype, trained as categorical
        features (empty for other input).

    Notes
    -----
    **Query groups are required.** :meth:`fit` and :meth:`score` take ``group`` (sizes of
    consecutive queries), ``qid`` (one id per row) or a DataFrame with a ``qid_col`` column,
    and raise a ``ValueError`` without one: treating all rows as one query would train a
    different model without a word. With query ids, rows of a query need not be contiguous;
    they are grouped (queries by ascending id, the rows of a query in input order) before
    training and scoring, so any interleaving of the queries trains the same model. :meth:`predict` scores rows one by one and returns them in the caller's order.

    **Categorical features.** A DataFrame's columns of pandas ``category`` dtype train as
    categorical features in both engines, as ``LGBMRanker`` and XGBoost's
    ``enable_categorical=True`` take them; each engine keeps the categories it saw and maps
    those of the frames :meth:`predict` gets onto them by value. Columns of strings or
    objects are refused with the conversion that fixes them (``X[col].astype("category")``).

    **Sample weights** are per row. With XGBoost, which weights whole queries, the rows of a
    query must share one weight.

    **Cross-validation.** ``GroupKFold`` keeps queries whole. The fold's query ids reach
    :meth:`fit` and :meth:`score` either inside ``X`` (a DataFrame with the ``qid_col``
    column: ``cross_val_score(Ranker(), X_df, y, groups=X_df["qid"], cv=GroupKFold())``) or
    through metadata routing (``sklearn.set_config(enable_metadata_routing=True)``,
    ``Ranker().set_fit_request(qid=True).set_score_request(qid=True)`` and
    ``params={"qid": qid}``). ``group`` sizes cannot be split by row indices.

    **scikit-learn estimator checks.** The checks call ``fit(X, y)`` without groups; the
    test suite runs them with one query per block of rows supplied, and expects a few to
    fail for reasons that belong to ranking (see ``tests/test_ranker.py``): checks that
    duplicate or drop rows change the queries, and XGBoost's per-query weights.

    Examples
    --------
    >>> import gbrank
    >>> from gbrank.datasets import make_ranking
    >>> from gbrank.ranker import Ranker
    >>> data = make_ranking(n_queries=50, docs_per_query=20, n_features=10)
    >>> model = Ranker(gbrank.listmle_topk(k=10), engine="xgboost", n_estimators=20)
    >>> model.fit(data.X, data.y, qid=data.qid).score(data.X, data.y, qid=data.qid) > 0.5
    True
    """

    def __init__(
        self,
        objective: Callable | str | None = None,
        engine: str = "lightgbm",
        *,
        n_estimators: int = 100,
        learning_rate: float = 0.1,
        max_depth: int | None = None,
        num_leaves: int | None = None,
        min_child_weight: float | None = None,
        subsample: float | None = None,
        colsample_bytree: float | None = None,
        reg_alpha: float | None = None,
        reg_lambda: float | None = None,
        importance_type: str = "gain",
        qid_col: str | None = "qid",
        score_at: int = 10,
        gain="auto",
        n_jobs: int | None = None,
        random_state=None,
        params: dict | None = None,
    ):
        self.objective = objective
        self.engine = engine
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.num_leaves = num_leaves
        self.min_child_weight = min_child_weight
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.reg_alpha = reg_alpha
        self.reg_lambda = reg_lambda
        self.importance_type = importance_type
        self.qid_col = qid_col
        self.score_at = score_at
        self.gain = gain
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.params = params

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.target_tags.positive_only = True
        # Both engines route missing feature values down a learned default branch.
        tags.input_tags.allow_nan = True
        return tags

    def _more_tags(self) -> dict[str, bool]:
        # the tags above for scikit-learn < 1.6, which reads them here
        return {"requires_y": True, "requires_positive_y": True, "allow_nan": True}

    # ------------------------------------------------------------------ fit
    def fit(
        self,
        X,
        y,
        *,
        group=None,
        qid=None,
        sample_weight=None,
        position=None,
        eval_set=None,
        eval_group=None,
        eval_qid=None,
        eval_at=(10,),
        early_stopping_rounds: int | None = None,
        verbose: bool | int = False,
    ) -> Ranker:
        """Train on queries of documents.

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features) or pandas.DataFrame
            Features; a DataFrame may hold the query ids in its ``qid_col`` column.
        y : array-like of shape (n_rows,) or (n_rows, n_labels)
            Relevance labels, finite and non-negative (integers for objectives and gains
            that need them). Several label columns train one model on all of them, with an
            objective built by :func:`gbrank.multi_label` without ``labels`` (the columns
            are bound here); the first column is the one the eval sets, early stopping and
            :meth:`score` use (see :func:`gbrank.metrics.per_label_ndcg` for the others).
        group : array-like of shape (n_queries,), optional
            Sizes of consecutive queries.
        qid : array-like of shape (n_rows,), optional
            Query id of each row; rows of a query need not be contiguous.
        sample_weight : array-like of shape (n_rows,), optional
            Non-negative row weights (XGBoost: equal within a query).
        position : array-like of int, shape (n_rows,), optional
            Displayed rank of each row (1-based, any value) when the labels were collected,
            -1 for a row never shown, for unbiased learning to rank; a pandas Series is read
            by its values, in the rows' order. LightGBM's ``lambdarank`` receives it as
            ``Dataset(position=)`` (without -1: it has no rows never shown); a gbrank
            objective with ``uses_position = True`` receives it in either engine through
            :func:`gbrank.engines.with_position`. Any other objective refuses it.
        eval_set : list of (X, y), optional
            Data evaluated after every round with gbrank's NDCG@k for each ``k`` in
            ``eval_at``; results in ``evals_result_``.
        eval_group, eval_qid : list, optional
            Groups of each eval set, as ``group`` or ``qid``; an entry may be None when
            that eval set's ``X`` holds the ``qid_col`` column.
        eval_at : int or sequence of int, default=(10,)
            Cut-offs of the NDCG (with gain ``gain_``) reported on the eval sets.
        early_stopping_rounds : int, optional
            gbrank's rule (:func:`gbrank.engines.watched`): stop when NDCG@``eval_at[0]``
            on the last eval set has not improved for this many rounds; :meth:`predict`
            then uses the best round.
        verbose : bool or int, default=False
            Print the eval results every round (or every ``verbose`` rounds).

        Returns
        -------
        self : Ranker
        """
        engine = self._check_params()
        objective = self._resolve_objective(engine)
        y, columns = _label_columns(y, objective)
        X, y, rows = self._grouped(X, y, group, qid, reset=True, objective=None if columns is not None else objective)
        if columns is not None:
            objective = objective.with_labels(rows.group(columns))
        weight = rows.group(check_weights(sample_weight, y.shape[0], name="sample_weight"))
        if engine == "xgboost" and weight is not None and rows.order is not None:
            # refused in the caller's rows, before XGBoost's adapter names grouped ones
            xgboost_engine.query_weights(weight, rows.sizes, input_rows=rows.order)
        if weight is not None and not weight.sum() > 0:
            raise ValueError("sample_weight is zero for every row: there is nothing to fit")
        position = rows.group(_check_position(position, y.shape[0], engine, objective))
        gain = resolve_gain(self.gain, y)
        evals = self._eval_sets(eval_set, eval_group, eval_qid)
        names = [f"valid_{i}" for i in range(len(evals))]
        cutoffs = [eval_at] if isinstance(eval_at, numbers.Integral) else list(eval_at)
        metrics = make_metrics([f"ndcg@{_positive_int(k, 'eval_at')}" for k in cutoffs], gain=gain) if evals else None
        if metrics is not None:
            for i, (_, ye, ge) in enumerate(evals):
                _check_evaluable(ye, ge, gain, f"eval_set[{i}] labels")
        if early_stopping_rounds is not None:
            early_stopping_rounds = _positive_int(early_stopping_rounds, "early_stopping_rounds")
            if not evals:
                raise ValueError("early_stopping_rounds needs an eval_set to watch")
        train = _fit_lightgbm if engine == "lightgbm" else _fit_xgboost
        params = self._engine_params(engine)
        evals_result: dict = {}
        booster, best, dtrain = train(
            params=params,
            categorical=_categorical_param(params, engine),
            objective=objective,
            data=(X, y, rows.sizes, weight, position),
            evals=evals,
            names=names,
            metrics=metrics,
            # the engine adapters' own keywords, the same in both
            num_boost_round=_positive_int(self.n_estimators, "n_estimators"),
            metric_names=metrics.names if metrics else (),
            early_stopping_rounds=early_stopping_rounds,
            evals_result=evals_result,
            verbose=verbose,
        )
        self.objective_ = objective
        if getattr(objective, "mode", None) == "estimate":
            binding = objective.binding(dtrain)
            self.propensity_, self.left_out_ = binding.propensity_, binding.left_out_
        else:
            for name in ("propensity_", "left_out_"):
                if hasattr(self, name):
                    delattr(self, name)
        self.booster_ = _best_rounds_only(booster, best)
        self.best_iteration_ = best
        self.evals_result_ = evals_result
        self.gain_ = gain
        return self

    # ------------------------------------------------------------------ predict / score
    def predict(self, X) -> np.ndarray:
        """Scores (raw margins) of the rows of ``X``, in the order given; higher ranks first.

        A DataFrame may keep its ``qid_col`` column; it is ignored.
        """
        check_is_fitted(self, "booster_")
        X, _ = split_qid(X, None, self.qid_col)
        X, _ = self._features(X, None, reset=False, labels=False)
        return self._predict(X)

    def _trained_with(self) -> str:
        return type(self.booster_).__module__.split(".")[0]

    def _predict(self, X: np.ndarray) -> np.ndarray:
        return engine_predict(self.booster_, X, self.best_iteration_)

    def score(self, X, y, group=None, qid=None) -> float:
        """Mean NDCG@``score_at`` over the queries, with the gain ``gain_`` chosen in :meth:`fit`.

        Otherwise ``gbrank.metrics.ndcg``'s defaults: ties in input order, a query without
        relevant documents counts as 1 (as LightGBM and XGBoost). Groups are given as in
        :meth:`fit`.
        """
        check_is_fitted(self, "booster_")
        k = _positive_int(self.score_at, "score_at")
        X, y, rows = self._grouped(X, _first_column(y), group, qid, reset=False)
        _check_evaluable(y, rows.sizes, self.gain_, "y")
        return ndcg(y, self._predict(X), rows.sizes, k=k, gain=self.gain_)

    @property
    def feature_importances_(self) -> np.ndarray:
        """Importance of every feature, normalised to sum to 1 (zeros when no tree splits).

        ``importance_type="gain"``: total gain of the splits on the feature (LightGBM
        ``gain``, XGBoost ``total_gain``); ``"split"``: number of splits (XGBoost ``weight``).
        """
        check_is_fitted(self, "booster_")
        if self.importance_type not in _IMPORTANCE:
            raise ValueError(f"importance_type must be 'gain' or 'split', got {self.importance_type!r}")
        lgb_kind, xgb_kind = _IMPORTANCE[self.importance_type]
        if self._trained_with() == "lightgbm":
            values = self.booster_.feature_importance(importance_type=lgb_kind).astype(np.float64)
        else:
            found = self.booster_.get_score(importance_type=xgb_kind)
            names = self.booster_.feature_names or [f"f{i}" for i in range(self.n_features_in_)]
            values = np.array([found.get(name, 0.0) for name in names])
        total = values.sum()
        return values / total if total > 0 else values

    # ------------------------------------------------------------------ internals
    def _check_params(self) -> str:
        if self.engine not in BUILTIN_OBJECTIVES:
            raise ValueError(f"engine must be 'lightgbm' or 'xgboost', got {self.engine!r}")
        if self.importance_type not in _IMPORTANCE:
            raise ValueError(f"importance_type must be 'gain' or 'split', got {self.importance_type!r}")
        _positive_int(self.score_at, "score_at")
        lr = self.learning_rate
        if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not (np.isfinite(lr) and lr > 0):
            raise ValueError(f"learning_rate must be a finite number > 0, got {lr!r}")
        refuse_params(self.params, FRONT_END_PARAMS,
                      "use objective=, n_estimators=, eval_at= and early_stopping_rounds=")
        return self.engine

    def _resolve_objective(self, engine: str):
        objective = self.objective
        if objective is None:
            from .objectives import listmle

            return listmle()
        if is_builtin(objective, engine):
            return objective
        if callable(objective):
            # Train a copy: the objective is a constructor parameter and must stay as given
            # (XGBoost would otherwise fill its per-dataset cache).
            return copy.deepcopy(objective)
        raise TypeError(
            "objective must be a gbrank objective (e.g. gbrank.listmle()), a callable "
            f"f(preds, data) -> (grad, hess), an engine objective name or None; got {objective!r}"
        )

    def _engine_params(self, engine: str) -> dict[str, Any]:
        column = 0 if engine == "lightgbm" else 1
        params: dict[str, Any] = {"verbosity": -1} if engine == "lightgbm" else {}
        for name, names in _SHARED_PARAMS.items():
            value = getattr(self, name)
            if value is not None:
                params[names[column]] = value
        if engine == "lightgbm" and self.subsample is not None:
            params["bagging_freq"] = 1
        if self.random_state is not None:
            params["seed"] = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        params.update(self.params or {})
        return params

    def _grouped(self, X, y, group, qid, *, reset: bool, objective=None):
        """Validated features and labels with the rows of every query contiguous.

        Labels are checked in the caller's row order first (and against the objective's own
        rules), so that an error names the caller's row, not the row after grouping.
        """
        X, qid = split_qid(X, qid, self.qid_col)
        y_in = np.asarray(y)
        if y_in.ndim == 1 and y_in.dtype.kind in "fiub":
            where = None
            if group is not None and qid is None and np.ndim(group) == 1 and np.sum(group) == y_in.shape[0]:
                where = check_group(group, y_in.shape[0])
            check_labels(y_in, offsets=where, name="y")
            if isinstance(objective, RankingObjective):
                objective._label_check(y_in, where)
        X, y = self._features(X, y, reset=reset)
        n = X.shape[0]
        if group is not None and qid is not None:
            raise ValueError("pass query groups once: group= (sizes) or qid= / a qid column, not both")
        if group is not None:
            rows = QueryOrder(None, np.diff(check_group(group, n)))
        elif qid is not None:
            rows = query_order(qid, n)
        else:
            raise ValueError(
                "Ranker needs query groups: pass group=[n1, n2, ...] (sizes of consecutive "
                f"queries), qid= (one query id per row) or a DataFrame with a {self.qid_col!r} "
                "column"
            )
        y = check_labels(rows.group(y), offsets=rows.offsets, name="y")
        return rows.group(X), y, rows

    def _features(self, X, y, *, reset: bool, labels: bool = True):
        """Validated features (and labels, unless not ``labels``), as the engines take them: a
        DataFrame with the feature names when fitted on one (its categorical columns kept),
        else an array."""
        categorical = _categorical_columns(X)
        if reset:
            self.categorical_features_ = categorical
        elif categorical != getattr(self, "categorical_features_", []):
            raise ValueError(
                f"this Ranker was fitted with the categorical columns {getattr(self, 'categorical_features_', [])}, "
                f"but X has {categorical}: pass a DataFrame with the columns and dtypes of fit"
            )
        # Ranking needs two documents; one row would train a constant model.
        checks = dict(reset=reset, ensure_min_samples=2 if reset else 1)
        if categorical:
            validate_data(self, X, skip_check_array=True, reset=reset)
            numeric = X.drop(columns=categorical)
            check_array(numeric, dtype=[np.float64, np.float32], ensure_all_finite="allow-nan",
                        ensure_min_features=0, ensure_min_samples=checks["ensure_min_samples"])
            if labels:
                if y is None:
                    raise ValueError("Ranker requires y to be passed, but the target y is None")
                y = check_array(y, ensure_2d=False, dtype="numeric", input_name="y")
                check_consistent_length(X, y)
            return X, y
        if not labels:
            X = validate_data(self, X, dtype=[np.float64, np.float32], ensure_all_finite="allow-nan", **checks)
        else:
            X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], ensure_all_finite="allow-nan",
                                 y_numeric=True, **checks)
        names = getattr(self, "feature_names_in_", None)
        if names is not None:
            # the engines keep the names (LightGBM's categorical_feature="name:..." reads them)
            X = pd.DataFrame(X, columns=list(names), copy=False)
        return X, y

    def _eval_sets(self, eval_set, eval_group, eval_qid):
        if eval_set is None:
            if eval_group is not None or eval_qid is not None:
                raise ValueError("eval_group / eval_qid were given without an eval_set")
            return []
        if isinstance(eval_set, tuple):
            eval_set = [eval_set]
        evals = []
        for i, pair in enumerate(eval_set):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(f"eval_set[{i}] must be a pair (X, y)")
            group = _entry(eval_group, i, len(eval_set), "eval_group")
            qid = _entry(eval_qid, i, len(eval_set), "eval_qid")
            X, y, rows = self._grouped(pair[0], _first_column(pair[1]), group, qid, reset=False)
            evals.append((X, y, rows.sizes))
        return evals


def _first_column(y):
    """The first label column of a 2-D ``y`` (several labels), else ``y``."""
    values = np.asarray(y)
    return values[:, 0] if values.ndim == 2 else y


def _label_columns(y, objective):
    """``(first label column, all columns)`` of a 2-D ``y`` for a multi-label objective;
    ``(y, None)`` for one label."""
    from .objectives.multi_label import MultiLabel

    values = np.asarray(y)
    if values.ndim != 2 or (values.shape[1] == 1 and not isinstance(objective, MultiLabel)):
        return y, None
    if not isinstance(objective, MultiLabel):
        raise ValueError(
            f"y has {values.shape[1]} label columns: train on several labels with objective="
            "gbrank.multi_label(objective, weights=...), or pass one label column"
        )
    from ._validation import check_labels

    # in the caller's row order, before the rows are grouped by query (the first column is y's)
    for j in range(1, values.shape[1]):
        check_labels(values[:, j], name=f"y[:, {j}]")
    return values[:, 0], values


def _categorical_columns(X) -> list[str]:
    """A DataFrame's columns of pandas ``category`` dtype; refuses columns of strings or
    objects, which neither engine takes."""
    if not isinstance(X, pd.DataFrame):
        return []
    text = [str(c) for c, dtype in X.dtypes.items()
            if not isinstance(dtype, pd.CategoricalDtype) and not pd.api.types.is_numeric_dtype(dtype)
            and not pd.api.types.is_bool_dtype(dtype)]
    if text:
        raise ValueError(
            f"X has columns of {X[text[0]].dtype} values ({text}); Ranker takes numbers and pandas "
            f"categoricals: convert them with X[{text[0]!r}] = X[{text[0]!r}].astype('category')"
        )
    return [str(c) for c, dtype in X.dtypes.items() if isinstance(dtype, pd.CategoricalDtype)]


def _categorical_param(params: dict, engine: str):
    """LightGBM's ``categorical_feature``, taken out of ``params`` for the training set
    (LightGBM ignores it in the parameters of a Dataset built from a DataFrame)."""
    given = [name for name in _CATEGORICAL_PARAMS if name in params]
    if not given:
        return "auto"
    if engine != "lightgbm":
        raise ValueError(
            f"params[{given[0]!r}] is LightGBM's; XGBoost reads categorical features from the "
            "DataFrame's dtypes: give those columns pandas 'category' dtype (X[col].astype('category'))"
        )
    if len(given) > 1:
        raise ValueError(f"params sets the categorical features twice ({given}): keep one")
    value = params.pop(given[0])
    if isinstance(value, str):
        names = value[len("name:"):] if value.startswith("name:") else value
        return [int(v) if v.strip().lstrip("-").isdigit() else v.strip() for v in names.split(",") if v.strip()]
    return list(value)


def _best_rounds_only(booster, rounds: int):
    """The booster with the first ``rounds`` rounds: XGBoost keeps every round trained and
    predicts with all of them once saved and loaded; LightGBM's boosters already stop there."""
    if type(booster).__module__.split(".")[0] != "xgboost" or booster.num_boosted_rounds() == rounds:
        return booster
    attributes = booster.attributes()
    best = booster[:rounds]
    best.set_attr(**attributes)
    return best


def _entry(values, i: int, n: int, name: str):
    if values is None:
        return None
    if len(values) != n:
        raise ValueError(f"{name} has {len(values)} entries for {n} eval sets")
    return values[i]


def _check_position(position, n: int, engine: str, objective):
    """Positions as int64 (1-based, -1 for rows never shown), or None; refused where
    nothing would read them."""
    if position is None:
        return None
    if not (uses_position(objective) or (engine == "lightgbm" and objective == "lambdarank")):
        where = "LightGBM's lambdarank or " if engine == "lightgbm" else ""
        raise ValueError(
            f"position= is read only by {where}gbrank objectives that declare "
            f"uses_position = True, and {objective!r} does not: drop position= or use such an objective"
        )
    values = positions.check(position, n)
    if isinstance(objective, str) and (values == -1).any():
        row = int(np.flatnonzero(values == -1)[0])
        raise ValueError(
            f"position[{row}] = -1 (never shown): LightGBM's lambdarank has no rows never shown, it "
            "would learn a bias for -1 as for a position; drop those rows, or train a gbrank click "
            "objective (gbrank.ips_listnet(), gbrank.ips_ranknet()), which leaves them out of the loss"
        )
    return values


def _check_evaluable(y: np.ndarray, sizes, gain, name: str) -> None:
    from .gains import gain_values

    try:
        gain_values(y, gain, offsets=np.concatenate(([0], np.cumsum(sizes))), name=name)
    except ValueError as exc:
        raise ValueError(
            f"{exc}. This Ranker evaluates NDCG with gain={gain!r}, chosen in fit from the "
            "training labels when gain='auto'; set gain='linear' to evaluate any labels >= 0"
        ) from None


def _fit_lightgbm(*, params, categorical, objective, data, evals, names, metrics, **training):
    from .engines import lightgbm as engine

    _require("lightgbm")
    X, y, sizes, weight, position = data
    if position is not None and not isinstance(objective, str):
        # LightGBM keeps positions as ids of distinct values: the loss gets them bound
        objective, position = with_position(objective, position), None
    dtrain = engine.dataset(X, y, sizes, weight=weight, position=position, params=params,
                            categorical_feature=categorical)
    valid = [engine.dataset(Xe, ye, ge, reference=dtrain, params=params) for Xe, ye, ge in evals]
    feval = metrics.lightgbm if metrics else None
    return (*engine.train(params, dtrain, objective, valid=valid, valid_names=names, feval=feval, **training), dtrain)


def _fit_xgboost(*, params, categorical, objective, data, evals, names, metrics, **training):
    from .engines import xgboost as engine

    _require("xgboost")
    X, y, sizes, weight, position = data
    categories = _categorical_columns(X) != []
    dtrain = engine.dmatrix(X, y, sizes, weight=weight, enable_categorical=categories)
    watch = [(engine.dmatrix(Xe, ye, ge, enable_categorical=categories), name)
             for (Xe, ye, ge), name in zip(evals, names)]
    if position is not None:
        objective = with_position(objective, position)
    custom_metric = metrics.xgboost if metrics else None
    return (*engine.train(params, dtrain, objective, evals=watch, custom_metric=custom_metric, **training), dtrain)


def _require(engine: str) -> None:
    import importlib.util

    if importlib.util.find_spec(engine) is None:
        raise ImportError(f"engine={engine!r} needs {engine}: pip install 'gbrank[{engine}]'")
