"""The binding of each live training set: where an engine's call finds its objective's state.

An engine calls an objective with its training set at every iteration: ``(preds, Dataset)``,
``(preds, DMatrix)``, or LightGBM's scikit-learn wrapper's ``(labels, preds, weight, group)``,
which hands over the Dataset's own label array. The binding made for that training set
(:class:`gbrank.objectives._binding.Binding`) is kept here, keyed weakly by the object the
engine hands over (it goes when that object goes), one per objective *value*: LightGBM
deep-copies its parameters, so the objective that trains is an equal copy of the user's,
and ``objective.binding(dataset)`` on the user's finds what the copy learned.

At every call the fields are read again and compared by value with the bound ones; a
change of any (a new array, or one written in place) binds anew, with every check. Nothing
here reads the call stack or an engine's private state.
"""

from __future__ import annotations

import functools
import threading
import weakref
from typing import Any

import numpy as np

from .statistics import Statistics

__all__ = ["bound", "find", "owner_of_labels"]

_lock = threading.Lock()
# id(owner) -> (weak reference to owner, {objective value key: binding})
_kept: dict[int, tuple[weakref.ref, dict[Any, Any]]] = {}


def _forget(key: int, ref: weakref.ref, lock=_lock, kept=_kept) -> None:
    # the module's names are bound as defaults: at interpreter exit they may be gone
    with lock:
        entry = kept.get(key)
        if entry is not None and entry[0] is ref:
            del kept[key]


def owner_of_labels(labels: Any) -> Any:
    """What a binding of fields given as plain arrays is kept for: the label array while it
    lives (a list, a new object at every call, keeps none)."""
    return labels if isinstance(labels, np.ndarray) else None


def find(owner: Any, objective: Any):
    """The binding kept for ``owner`` and an objective equal to ``objective``, or None."""
    with _lock:
        entry = _kept.get(id(owner))
        if entry is None or entry[0]() is not owner:
            return None
        return entry[1].get(objective.value_key)


def _keep(owner: Any, objective: Any, binding: Any) -> None:
    key = id(owner)
    with _lock:
        entry = _kept.get(key)
        if entry is None or entry[0]() is not owner:
            try:
                ref = weakref.ref(owner, functools.partial(_forget, key))
            except TypeError:  # an owner that cannot be referenced weakly keeps nothing
                return
            entry = _kept[key] = (ref, {})
        entry[1][objective.value_key] = binding


def bound(objective: Any, owner: Any, labels, sizes, weights=None, position=None,
          statistics: Statistics | None = None):
    """The binding of ``objective`` to the fields of the training set ``owner``: the one kept
    while the fields are the same values, else a new one (kept for ``owner``; with
    ``owner=None``, kept nowhere)."""
    if owner is not None:
        binding = find(owner, objective)
        if binding is not None and binding.holds(labels, sizes, weights, position, statistics):
            return binding
    binding = objective.bind(labels, sizes, weight=weights, position=position, statistics=statistics)
    if owner is not None:
        _keep(owner, objective, binding)
    return binding
