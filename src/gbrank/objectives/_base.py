"""The objective protocol shared by every gbrank loss.

A gbrank objective is a value: its settings, fixed when it is built, and nothing else.
Assigning or deleting an attribute the constructor set raises ``AttributeError`` (build a new
objective instead); arrays and containers given to the constructor are copied, arrays
read-only, so that what ``repr`` and a pickle say is what the object computes. ``copy``,
``deepcopy``, pickling and ``sklearn.clone`` give equal objectives that share nothing.

Training state belongs to a training set, not to the objective: ``obj.bind(labels, group,
weight=..., position=..., statistics=...)`` checks one training set's fields and prepares
the per-dataset state once, and returns a :class:`~gbrank.objectives._binding.Binding`
whose ``grad_hess(scores)`` and ``loss(scores)`` take only the scores. The objective is also
the callable the engines take:

* ``lgb.train(params={"objective": obj})`` calls ``obj(preds, train_set)``;
* ``LGBMRanker(objective=obj)`` calls ``obj(y_true, y_pred, weight, group)`` (LightGBM counts
  exactly four parameters of ``__call__``);
* ``xgb.train(params, dtrain, obj=obj)`` calls ``obj(preds, dtrain)``.

Each call reads the training set's fields through :mod:`gbrank.engines` and finds its
binding in :mod:`gbrank.engines.bindings` (bound anew whenever a field's values changed).

Subclasses supply the math through methods over validated flat arrays and int64 group
offsets: ``_prepare`` (per-dataset work; a named tuple or frozen dataclass of arrays), and
either ``_grad_hess`` and ``_loss`` or one ``_run`` serving both. Nothing in a prepared state
is written during an iteration, so one binding can serve concurrent calls.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import engines as _engines
from .._validation import check_float, check_labels, check_weights
from ..engines.statistics import Statistics
from ..groups import check_group
from ._binding import Binding

__all__ = ["RankingObjective"]


def _frozen_value(value: Any) -> Any:
    """A copy of a constructor argument that the caller's references cannot change."""
    if isinstance(value, np.ndarray):
        value = value.copy()
        value.flags.writeable = False
        return value
    if type(value) in (list, tuple):
        return type(value)(_frozen_value(item) for item in value)
    if type(value) is dict:
        return {key: _frozen_value(item) for key, item in value.items()}
    if isinstance(value, functools.partial):
        return functools.partial(
            value.func, *_frozen_value(value.args), **_frozen_value(value.keywords)
        )
    return value


def _key_of(value: Any) -> Any:
    """A hashable stand-in for a setting: equal settings, equal keys."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_key_of(item) for item in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((repr(k), _key_of(v)) for k, v in value.items())))
    if isinstance(value, functools.partial):
        return ("partial", value.func, _key_of(value.args), _key_of(value.keywords))
    if isinstance(getattr(value, "value_key", None), tuple):
        # an objective inside another (multi_label's): equal by its settings, as its copies are
        return ("objective", value.value_key)
    try:
        hash(value)
    except TypeError:
        return ("object", id(value))
    return value


def _value_key(state: dict) -> tuple:
    return tuple((name, _key_of(state[name])) for name in sorted(state) if name not in ("_settings", "value_key"))


def _read_only(state: dict) -> None:
    for value in state.values():
        if isinstance(value, np.ndarray):
            value.flags.writeable = False


def _freeze(obj: Any) -> None:
    state = obj.__dict__
    _read_only(state)
    object.__setattr__(obj, "value_key", (type(obj).__module__, type(obj).__qualname__, _value_key(state)))
    object.__setattr__(obj, "_settings", frozenset(state) | {"_settings"})


def _freezing(init):
    """Wrap a constructor: copy its arguments, and freeze the object when the outermost
    constructor (the one of the object's own class) returns."""

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        outermost = type(self).__init__ is __init__
        if outermost:
            args, kwargs = _frozen_value(args), _frozen_value(kwargs)
        init(self, *args, **kwargs)
        if outermost:
            _freeze(self)

    return __init__


class RankingObjective:
    """Base class of gbrank's ranking objectives.

    Parameters
    ----------
    hess_floor : float
        Lower bound applied to every row's hessian (after ``hess_scale``), so that no row
        has zero curvature.
    hess_scale : float
        Factor on every row's hessian. Second-order engines divide the summed gradient by the
        summed hessian, so the scale acts as a learning-rate on the Newton step; it also
        brings hessian sums over XGBoost's ``min_child_weight`` (default 1).

    Notes
    -----
    Sample weights multiply each row's gradient and hessian, as LightGBM's built-in ranking
    objectives do. LightGBM gives one weight per row; XGBoost gives one weight per query,
    which is spread to the query's rows.

    Objectives are values: after construction their settings cannot be assigned or deleted
    (``AttributeError``). To train with other settings, build a new objective. Two objectives
    of the same class and settings are equal (``value_key``) and interchangeable.
    """

    #: Name of the factory that builds this objective (used in ``repr``).
    factory: str = "objective"
    #: Whether adding a constant to a query's scores leaves the loss unchanged.
    shift_invariant: bool = True
    #: Whether a query without order (all labels equal, or one document) gets zero gradient.
    #: False only where the loss itself says otherwise (the click objectives: see there).
    ignores_orderless_queries: bool = True
    #: Whether the objective reads a display position per row (the click objectives).
    uses_position: bool = False
    #: Attributes shown by ``repr`` (as the factory's keyword arguments), before the hessian's.
    _setting_names: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            cls.__init__ = _freezing(cls.__dict__["__init__"])

    @property
    def reads_position(self) -> bool:
        """Whether the gradients need a display position per row."""
        return self.uses_position

    def __init__(self, *, hess_floor: float = 1e-6, hess_scale: float = 1.0) -> None:
        self.hess_floor = check_float("hess_floor", hess_floor, min=0.0)
        self.hess_scale = check_float("hess_scale", hess_scale, min=0.0, strict=True)

    # ----------------------------------------------------------------- subclass hooks
    def _prepare(self, labels: np.ndarray, offsets: np.ndarray, statistics: Statistics) -> Any:
        """Per-dataset state computed once from checked labels and offsets, with the
        ``statistics`` of the whole training data (:class:`gbrank.engines.Statistics`;
        empty where the rows at hand are the whole data); read-only afterwards."""
        raise NotImplementedError

    def _run(self, state: Any, scores: np.ndarray, grad: np.ndarray, hess: np.ndarray, want_loss: bool) -> np.ndarray:
        """Fill the raw gradient and hessian (zero on entry) and return the per-query loss
        (computed only with ``want_loss``): the one hook of kernels that give both at once."""
        raise NotImplementedError

    def _grad_hess(self, state: Any, scores: np.ndarray, grad: np.ndarray, hess: np.ndarray) -> None:
        """Fill the raw gradient and hessian (before weights, scale and floor)."""
        self._run(state, scores, grad, hess, False)

    def _loss(self, state: Any, scores: np.ndarray) -> np.ndarray:
        """Per-query loss values, float64 of shape (n_queries,)."""
        n = scores.shape[0]
        return self._run(state, scores, np.zeros(n), np.zeros(n), True)

    def _params(self) -> dict[str, Any]:
        """Constructor arguments shown by ``repr`` (subclasses extend)."""
        settings = {name: getattr(self, name) for name in self._setting_names}
        return {**settings, "hess_floor": self.hess_floor, "hess_scale": self.hess_scale}

    def _label_check(self, y_true, offsets: np.ndarray) -> np.ndarray:
        """Validate labels; subclasses that need integer labels override this."""
        return check_labels(y_true, offsets=offsets)

    def _bound_state(self, labels: np.ndarray, offsets: np.ndarray, position: np.ndarray | None,
                     statistics: Statistics) -> Any:
        """The state of a new binding (the click objectives also take the positions)."""
        return self._prepare(self._label_check(labels, offsets), offsets, statistics)

    def _bound_gradients(self, binding: Binding, scores: np.ndarray, init_score=None) -> tuple[np.ndarray, np.ndarray]:
        """``(grad, hess)`` of a binding at checked scores (the click objectives first
        advance their propensity estimate, telling a new training by ``init_score``)."""
        return self._finish(binding.state, scores, binding.weights)

    def _estimate(self, state: Any) -> np.ndarray:
        raise AttributeError(f"{self!r} estimates no propensities: propensity_ belongs to the click objectives "
                             "trained with propensity='estimate'")

    # ----------------------------------------------------------------- public API
    def bind(self, labels, group, *, weight=None, position=None, statistics: Statistics | None = None) -> Binding:
        """This objective bound to one training set: its fields checked, its state prepared.

        Parameters
        ----------
        labels : array-like of shape (n_rows,)
            Relevance labels (clicks for the click objectives).
        group : array-like of int, shape (n_queries,)
            Group sizes; the rows of a query are contiguous.
        weight : array-like of shape (n_rows,), optional
            Non-negative per-row sample weights.
        position : array-like of int, shape (n_rows,), optional
            Display positions (1 = top, -1 never shown), for an objective that reads them
            (``uses_position``); refused by the others.
        statistics : gbrank.engines.Statistics, optional
            Statistics of the whole training data where these rows are a part of it (a Dask
            worker's, a cross-validation fold's): the label maximum of ERR's gains, the
            number of positions and the allreduce of the propensity estimate.

        Returns
        -------
        Binding
            With ``grad_hess(scores)``, ``loss(scores)`` and, for an estimating click
            objective, ``propensity_``.
        """
        labels = np.asarray(labels)
        if labels.ndim != 1:
            raise ValueError(f"y_true must be one-dimensional, got shape {labels.shape}")
        n = labels.shape[0]
        offsets = check_group(group, n)
        weights = check_weights(weight, n, offsets)
        if position is not None:
            if not self.uses_position:
                raise ValueError(f"{self!r} does not read positions: drop position=, or use an objective that reads them")
            position = _engines.positions.check(position, n, offsets)
        statistics = statistics or Statistics()
        state = self._bound_state(labels, offsets, position, statistics)
        return Binding(self, (labels, group, weight, position), offsets, weights, position, statistics, state)

    def binding(self, data) -> Binding:
        """The binding this objective (or an equal one: ``lgb.train`` trains a copy) made for
        the engine training set ``data`` (a ``lightgbm.Dataset`` or ``xgboost.DMatrix``),
        while ``data`` lives: e.g. ``obj.binding(dtrain).propensity_`` after training."""
        found = _engines.bindings.find(data, self)
        if found is None:
            raise LookupError(
                f"{self!r} has no binding to this {type(data).__name__}: it is made by the first training "
                "call on it (lgb.train, xgb.train, Booster.update) and kept while the training set lives"
            )
        return found

    def grad_hess(self, y_true, y_pred, group, weight=None) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and hessian of the loss with respect to the scores.

        Parameters
        ----------
        y_true : array-like of shape (n_rows,)
            Relevance labels.
        y_pred : array-like of shape (n_rows,)
            Current scores (raw margins). float32 is accepted and promoted.
        group : array-like of shape (n_queries,)
            Group sizes; the rows of a query are contiguous.
        weight : array-like of shape (n_rows,), optional
            Non-negative per-row sample weights.

        Returns
        -------
        grad, hess : ndarray of float64, shape (n_rows,)

        Notes
        -----
        The state prepared for ``y_true`` is kept while that array lives and holds the same
        values; ``bind`` makes the binding explicit.
        """
        return _engines.gradients(self, y_pred, labels=y_true, sizes=group, weights=weight)

    def loss(self, y_true, y_pred, group) -> float:
        """Sum over queries of the per-query loss (sample weights do not enter)."""
        return _engines.bindings.bound(self, _engines.bindings.owner_of_labels(y_true), y_true, group).loss(y_pred)

    def __call__(self, y_true, y_pred, weight=None, group=None):
        """Engine entry point: ``(preds, Dataset)``, ``(preds, DMatrix)`` or LGBMRanker's
        four ``(y_true, y_pred, weight, group)``; see :func:`gbrank.engines.gradients`."""
        if group is None and _engines.engine_of(y_pred) is not None:
            return _engines.gradients(self, y_true, data=y_pred)
        return _engines.gradients(self, y_pred, labels=y_true, sizes=group, weights=weight)

    # ----------------------------------------------------------------- internals
    def _finish(self, state, scores, weights):
        n = scores.shape[0]
        grad = np.zeros(n, dtype=np.float64)
        hess = np.zeros(n, dtype=np.float64)
        self._grad_hess(state, scores, grad, hess)
        if self.hess_scale != 1.0:
            hess *= self.hess_scale
        np.maximum(hess, self.hess_floor, out=hess)
        if weights is not None:
            grad *= weights
            hess *= weights
        return grad, hess

    # ----------------------------------------------------------------- plumbing
    def __setattr__(self, name: str, value: Any) -> None:
        self._check_settable(name)
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self._check_settable(name)
        object.__delattr__(self, name)

    def _check_settable(self, name: str) -> None:
        if self.__dict__.get("_settings") is None:
            return  # under construction
        params = self._params()
        example = f"{self.factory}({name}=...)" if name in params else f"{self.factory}(...)"
        raise AttributeError(
            f"cannot change {name!r} of {self!r}: a gbrank objective's settings are fixed when "
            f"it is built; build a new objective instead, e.g. {example}"
        )

    def __setstate__(self, state):
        self.__dict__.update(state)
        _freeze(self)

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("_settings", "value_key")}

    def __repr__(self) -> str:
        args = ", ".join(f"{key}={value!r}" for key, value in self._params().items())
        return f"{self.factory}({args})"


RankingObjective.__init__ = _freezing(RankingObjective.__init__)  # type: ignore[method-assign]
