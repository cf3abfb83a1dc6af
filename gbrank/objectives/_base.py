"""The objective protocol shared by every gbrank loss, and its engine adapters.

A gbrank objective is one callable object that serves three callers:

* ``lgb.train(params={"objective": obj})`` calls ``obj(preds, train_set)``;
* ``LGBMRanker(objective=obj)`` calls ``obj(y_true, y_pred, weight, group)`` (LightGBM counts
  exactly four parameters of ``__call__``);
* ``xgb.train(params, dtrain, obj=obj)`` calls ``obj(preds, dtrain)``.

Each call reads labels, query groups and sample weights from what it is given, checks them,
computes the gradient and hessian with a numba kernel, and returns float64 ``(grad, hess)``.

Subclasses supply the math through methods over validated flat arrays and int64 group
offsets: ``_prepare`` (per-dataset work, cached; a named tuple or frozen dataclass of arrays),
and either ``_grad_hess`` and ``_loss`` or one ``_run`` serving both. Nothing in a prepared
state is written during an iteration, so one object can serve several trainings, sequential
or concurrent.

An objective is a value: its settings are fixed when it is built. Assigning or deleting an
attribute the constructor set raises ``AttributeError`` (build a new objective instead), arrays
and containers given to the constructor are copied, arrays read-only, so that what ``repr`` and
a pickle say is what the object computes. Only the private per-dataset cache changes.
"""

from __future__ import annotations

import copy
import functools
import operator
import threading
import weakref
from typing import Any, Callable

import numpy as np
from numba import njit

from .. import engines as _engines
from .._threading import configure_threading
from .._validation import check_float, check_labels, check_scores, check_weights
from ..groups import check_group

# every objective module imports this one before its kernels can compile, and numba fixes
# its threading layer at the first parallel compile
configure_threading()

# states of training sets given as plain arrays (grad_hess, LGBMRanker without its Dataset):
# the most recent few, matched on their values; engine data keep theirs per live object
_CACHE_SIZE = 4


def _key_array(a: Any) -> np.ndarray:
    return np.ascontiguousarray(a)


@njit(cache=True)
def _same_words(a, b):
    for i in range(a.shape[0]):
        if a[i] != b[i]:
            return False
    return True


def _same_array(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two contiguous arrays hold the same bytes (same dtype and shape).

    Compared as 64-bit words in one pass without temporaries: a cache hit reads each array
    once, which ``np.array_equal`` (an elementwise comparison array, then its ``all``) does not.
    """
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.nbytes % 8 or a.nbytes < 4096:
        return bool(np.array_equal(a, b))
    return bool(_same_words(a.reshape(-1).view(np.uint64), b.reshape(-1).view(np.uint64)))


def _engine_of(obj: Any) -> str | None:
    return _engines.engine_of(obj)


# the private per-dataset caches and their lock: the only attributes that change after construction
_MUTABLE = frozenset({"_cache", "_owned", "_checked", "_lock"})


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


def _settings(state: dict) -> frozenset:
    """Names that cannot change: everything the constructor set, but the cache."""
    return frozenset(state) - _MUTABLE | {"_settings"}


def _read_only(state: dict) -> None:
    for value in state.values():
        if isinstance(value, np.ndarray):
            value.flags.writeable = False


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
            _read_only(self.__dict__)
            object.__setattr__(self, "_settings", _settings(self.__dict__))

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
    (``AttributeError``), so a setting changed after a first call cannot be ignored by the
    per-dataset cache. To train with other settings, build a new objective.
    """

    #: Name of the factory that builds this objective (used in ``repr``).
    factory: str = "objective"
    #: Whether adding a constant to a query's scores leaves the loss unchanged.
    shift_invariant: bool = True
    #: Whether a query without order (all labels equal, or one document) gets zero gradient.
    #: False only where the loss itself says otherwise (the click objectives: see there).
    ignores_orderless_queries: bool = True
    #: Attributes shown by ``repr`` (as the factory's keyword arguments), before the hessian's.
    _setting_names: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            cls.__init__ = _freezing(cls.__dict__["__init__"])

    def __init__(self, *, hess_floor: float = 1e-6, hess_scale: float = 1.0) -> None:
        self.hess_floor = check_float("hess_floor", hess_floor, min=0.0)
        self.hess_scale = check_float("hess_scale", hess_scale, min=0.0, strict=True)
        self._lock = threading.Lock()
        self._cache: list[tuple[tuple[np.ndarray, ...], Any]] = []
        self._owned: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        # training set -> (its field objects, state, offsets, weights) at the last call
        self._checked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    # ----------------------------------------------------------------- subclass hooks
    def _prepare(self, labels: np.ndarray, offsets: np.ndarray) -> Any:
        """Per-dataset state computed once from labels and offsets; read-only afterwards."""
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

    # ----------------------------------------------------------------- public API
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
        """
        return self._gradients(y_true, y_pred, group, weight)

    def loss(self, y_true, y_pred, group) -> float:
        """Sum over queries of the per-query loss (sample weights do not enter)."""
        labels = np.asarray(y_true)
        if labels.ndim != 1:
            raise ValueError(f"y_true must be one-dimensional, got shape {labels.shape}")
        offsets = check_group(group, labels.shape[0])
        state = self._state(labels, offsets)
        scores = check_scores(y_pred, labels.shape[0], offsets)
        return float(np.sum(self._loss(state, scores)))

    def __call__(self, y_true, y_pred, weight=None, group=None):
        """Engine entry point: ``(preds, Dataset)``, ``(preds, DMatrix)`` or LGBMRanker's four.

        Engine data is read by :func:`gbrank.engines.read`, which also refuses what the
        engine would get wrong with a custom objective (``bagging_by_query``, an
        ``lgb.cv`` fold that cuts queries). The per-dataset state belongs to the engine's
        training set while it lives (``LGBMRanker``'s too), so any number of them (the folds
        of ``xgb.cv`` or ``lgb.cv``) each keep their own.
        """
        if _engine_of(y_pred) is None:
            owner = None if group is None else _engines.lightgbm.check_caller()
            with _engines.kernel_threads(owner):
                # LGBMRanker hands over the Dataset's own label, weight and group objects
                token = None if owner is None else self._unchanged_fields(owner)
                if token is not None and all(map(operator.is_, token, (y_true, group, weight))):
                    return self._kept_gradients(owner, token, y_pred, lambda: (y_true, group, weight, None))
                return self._gradients(y_true, y_pred, group, weight, owner=owner)
        with _engines.kernel_threads(y_pred):
            return self._from_engine(y_true, y_pred)

    # ----------------------------------------------------------------- internals
    def _from_engine(self, preds, data, position=None):
        """Gradients for an engine's ``(preds, data)`` call (a Dataset or any DMatrix);
        ``position`` bound by :func:`gbrank.engines.with_position`, else read from ``data``."""
        token = self._unchanged_fields(data) if position is None else None
        if token is not None:
            def read():
                fields = _engines.read(data)
                return fields.labels, fields.sizes, fields.weights, fields.statistics

            return self._kept_gradients(data, token, preds, read)
        fields = _engines.read(data, position=position is None and self._reads_position())
        return self._gradients(fields.labels, preds, fields.sizes, fields.weights, owner=data,
                               position=fields.position if position is None else position,
                               statistics=fields.statistics)

    def _unchanged_fields(self, data):
        """What says that ``data``'s fields are those of the previous call
        (:func:`gbrank.engines.unchanged_fields`), for an objective whose gradients read
        nothing else of it; None where the fields must be read and checked at every call.

        A training set whose fields are the same objects as at the previous call skips the
        reads, checks and state lookup: right after the engine's tree growing, each such
        step of Python costs several times what it costs in a loop of calls.
        """
        if type(self)._gradients is not RankingObjective._gradients or self._reads_position():
            return None
        return _engines.unchanged_fields(data)

    def _kept_gradients(self, data, token, preds, read):
        """The gradients from the checked inputs kept for ``data`` while its fields are still
        ``token``; otherwise from ``read()`` (labels, group sizes, weights, statistics), whose
        checked inputs are kept for ``token``."""
        entry = self._checked.get(data)
        if entry is None or len(entry[0]) != len(token) or not all(map(operator.is_, entry[0], token)):
            labels, sizes, weights, statistics = read()
            entry = (token, *self._training_inputs(labels, sizes, weights, owner=data, statistics=statistics))
            self._checked[data] = entry
        _, state, offsets, weights = entry
        return self._finish(state, check_scores(preds, int(offsets[-1]), offsets), weights)

    def _reads_position(self) -> bool:
        """Whether the gradients need the displayed positions (``uses_position``)."""
        return bool(getattr(self, "uses_position", False))

    def _gradients(self, y_true, y_pred, group, weight=None, *, owner=None, position=None, statistics=None):
        """``grad_hess`` with the state kept for ``owner`` (an engine's training set), with
        the training set's global ``statistics`` (:class:`gbrank.engines.Statistics`).

        An objective of another package that reads positions (``uses_position = True``)
        takes them as ``grad_hess(..., position=)``.
        """
        if position is not None:
            return self.grad_hess(y_true, y_pred, group, weight, position=position)
        state, offsets, weights = self._training_inputs(y_true, group, weight, owner=owner, statistics=statistics)
        return self._finish(state, check_scores(y_pred, int(offsets[-1]), offsets), weights)

    def _training_inputs(self, y_true, group, weight, *, owner=None, statistics=None):
        """The checked ``(state, offsets, weights)`` of a training set's labels, groups and weights."""
        labels = np.asarray(y_true)
        if labels.ndim != 1:
            raise ValueError(f"y_true must be one-dimensional, got shape {labels.shape}")
        n = labels.shape[0]
        offsets = check_group(group, n)
        state = self._state(labels, offsets, owner=owner, statistics=statistics)
        return state, offsets, check_weights(weight, n, offsets)

    def _state(
        self,
        labels: np.ndarray,
        offsets: np.ndarray,
        extra: np.ndarray | None = None,
        prepare: Callable[[], Any] | None = None,
        *,
        owner: Any = None,
        statistics: Any = None,
    ) -> Any:
        """Per-dataset state: kept for ``owner`` (an engine's training set, weakly: it goes
        with the training set) or, without one, among the few latest of plain arrays;
        matched on the labels', offsets' (and ``extra``'s) values either way.

        ``prepare`` computes the state on a miss (default: check the labels, then
        ``_prepare``); ``extra`` is one more array the state depends on (e.g. positions);
        ``statistics`` the global statistics of the training data it is computed with
        (:class:`gbrank.engines.Statistics`). Arrays match when they have the same dtype,
        shape and bytes.
        """
        key = tuple(_key_array(a) for a in (labels, offsets, extra) if a is not None)
        if statistics is not None:
            key += (statistics.key(),)

        def matches(cached_key):
            return len(cached_key) == len(key) and all(map(_same_array, cached_key, key))

        with self._lock:
            if owner is not None:
                entry = self._owned.get(owner)
                if entry is not None and matches(entry[0]):
                    return entry[1]
            else:
                for cached_key, state in self._cache:
                    if matches(cached_key):
                        return state
        with _engines.statistics.given(statistics):
            if prepare is None:
                state = self._prepare(self._label_check(labels, offsets), offsets)
            else:
                state = prepare()
        with self._lock:
            entry = (tuple(a.copy() for a in key), state)
            if owner is not None:
                self._owned[owner] = entry
            else:
                self._cache.insert(0, entry)
                del self._cache[_CACHE_SIZE:]
        return state

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
        settings = self.__dict__.get("_settings")
        if settings is None or name in _MUTABLE:
            return  # under construction, or the cache
        if name in settings or not name.startswith("_"):
            params = self._params()
            example = f"{self.factory}({name}=...)" if name in params else f"{self.factory}(...)"
            raise AttributeError(
                f"cannot change {name!r} of {self!r}: a gbrank objective's settings are fixed when "
                f"it is built (its per-dataset cache depends on them); build a new objective "
                f"instead, e.g. {example}"
            )

    def __deepcopy__(self, memo):
        # lgb.train and lgb.cv deep-copy their params before they construct the training set,
        # after which LightGBM keeps only ids of its positions: the one moment to read them
        if self._reads_position():
            _engines.positions.remember_training_set()
        clone = type(self).__new__(type(self))
        clone.__setstate__(self._copied_state(memo))
        return clone

    def _copied_state(self, memo) -> dict:
        """The state a deep copy starts from: a deep copy of the pickled state."""
        return copy.deepcopy(self.__getstate__(), memo)

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_lock"]
        state["_cache"] = []
        del state["_owned"]
        del state["_checked"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        _read_only(self.__dict__)
        self.__dict__.setdefault("_settings", _settings(self.__dict__))
        self._lock = threading.Lock()
        self._owned = weakref.WeakKeyDictionary()
        self._checked = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        args = ", ".join(f"{key}={value!r}" for key, value in self._params().items())
        return f"{self.factory}({args})"


RankingObjective.__init__ = _freezing(RankingObjective.__init__)  # type: ignore[method-assign]
