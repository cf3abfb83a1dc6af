"""Displayed positions of a training set: the one place that reads them from engine data.

Positions are 1-based display ranks (1 = top, any value: a second results page holds 11..20)
and ``-1`` marks a row never shown. They are the values the user gave, whatever the row
order:

* **LightGBM** keeps, once a ``Dataset`` is constructed, only ids of the distinct positions
  numbered in order of first appearance (``Metadata::SetPosition``): the Python ``Dataset``
  then answers ``get_position()`` with the ids. gbrank therefore records the values while
  the ``Dataset`` still holds them: :func:`remember` (called by ``lgb.train`` and ``lgb.cv``
  through the objective's deep copy, before they construct the training set, and by
  gbrank's own Dataset builder). An ``lgb.cv`` fold reads its rows of the full set's
  values. Ids are read only as a last resort, for a ``Dataset`` constructed before gbrank
  saw it, and only where they can mean one thing: every query's rows numbered 0, 1, 2, ...
  in row order, i.e. shown from the top in row order (a warning says so); anything else is
  refused with the fix.
* **XGBoost** has no position field. Positions travel with the objective
  (:func:`gbrank.engines.with_position`, ``gbrank.Ranker.fit(position=)``, a position
  column in :mod:`gbrank.dask`). Without them the row order within each query is the
  position (XGBoost's own convention for ``lambdarank_unbiased``), with a one-time warning
  naming how to give positions; ``with_position(objective, "row_order")`` asks for the row
  order and silences it.
"""

from __future__ import annotations

import sys
import threading
import warnings
import weakref
from typing import Any

import numpy as np

from ..groups import row_in_query

__all__ = ["ROW_ORDER", "check", "given", "of_lightgbm", "remember", "remember_training_set", "row_order"]

#: ``with_position(objective, ROW_ORDER)``: the rows of each query are in display order.
ROW_ORDER = "row_order"

# lightgbm.Dataset -> the positions the user gave (int64, read-only), while it lives
_GIVEN: "weakref.WeakKeyDictionary[Any, np.ndarray]" = weakref.WeakKeyDictionary()
# lightgbm.Dataset -> the ids array its recorded positions were last found to agree with
_AGREED: "weakref.WeakKeyDictionary[Any, np.ndarray]" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
_WARNED: set[str] = set()

_XGBOOST_ROW_ORDER = (
    "XGBoost has no position field: gbrank reads each query's row order as the display positions "
    "1, 2, 3, ... (XGBoost's own convention). Give the positions with "
    "obj=gbrank.engines.with_position(objective, position) or gbrank.Ranker(...).fit(..., position=), "
    "or say that the rows are in display order with with_position(objective, 'row_order')"
)
_LIGHTGBM_IDS = (
    "the LightGBM Dataset was constructed before gbrank could read its positions, and LightGBM keeps "
    "only ids of them: gbrank reads each query's rows as shown from the top in row order (positions "
    "1, 2, 3, ...). Pass the Dataset to lgb.train / lgb.cv before constructing it (or call "
    "gbrank.engines.positions.remember(dataset) before construct()), or bind the positions with "
    "gbrank.engines.with_position(objective, position)"
)


def _warn_once(key: str, message: str) -> None:
    with _LOCK:
        if key in _WARNED:
            return
        _WARNED.add(key)
    warnings.warn(message, UserWarning, stacklevel=4)


def _where(row: int, offsets: np.ndarray | None) -> str:
    if offsets is None:
        return f"row {row}"
    return f"row {row} (query {int(np.searchsorted(offsets, row, side='right') - 1)})"


def check(position, n: int, offsets: np.ndarray | None = None, *, name: str = "position") -> np.ndarray:
    """Positions as int64: integers >= 1, or -1 for a row never shown, one per row.

    Refuses another shape, non-integers, 0 and values below -1, naming the row (and its
    query where ``offsets`` are given).
    """
    values = np.asarray(position)
    if values.shape != (n,):
        raise ValueError(f"{name} has shape {values.shape} but there are {n} rows")
    if values.dtype.kind == "f":
        frac = ~np.isfinite(values) | (values != np.floor(values))
        if frac.any():
            row = int(np.flatnonzero(frac)[0])
            raise ValueError(f"{name}[{row}] = {float(values[row])!r} at {_where(row, offsets)} is not an integer")
    elif values.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers (display ranks from 1, -1 if never shown), got dtype {values.dtype}")
    values = values.astype(np.int64)
    bad = (values == 0) | (values < -1)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name}[{row}] = {values[row]} at {_where(row, offsets)}: positions are 1-based (1 = top) "
            "and -1 marks a row never shown"
        )
    return values


def remember(data) -> None:
    """Record the positions a not yet constructed ``lightgbm.Dataset`` holds, as given.

    Called before LightGBM constructs the Dataset (after which it keeps only ids); a
    constructed Dataset or one without positions is left as it is.
    """
    if getattr(data, "_handle", 0) is not None or getattr(data, "position", None) is None:
        return
    values = check(data.position, len(data.position))
    values.setflags(write=False)
    with _LOCK:
        _GIVEN[data] = values


def remember_training_set() -> None:
    """:func:`remember` the training set of the running ``lgb.train`` or ``lgb.cv``.

    Called while they deep-copy their parameters (the objective among them), the one moment
    gbrank code runs before they construct the Dataset; found in their frame as
    ``train_set``. Outside them it does nothing.
    """
    frame = sys._getframe(1)
    for _ in range(16):
        if frame is None:
            return
        if frame.f_globals.get("__name__") == "lightgbm.engine" and "train_set" in frame.f_locals:
            remember(frame.f_locals["train_set"])
            return
        frame = frame.f_back


def given(data) -> np.ndarray | None:
    """The positions recorded for a ``lightgbm.Dataset`` (an ``lgb.cv`` fold: its rows of its
    full set's), or None."""
    with _LOCK:
        values = _GIVEN.get(data)
    if values is not None:
        return values
    reference = getattr(data, "reference", None)
    used = getattr(data, "used_indices", None)
    if reference is None or used is None:
        return None
    # an lgb.cv fold: the full set's values at the fold's rows
    full = given(reference)
    return None if full is None else full[np.asarray(used, dtype=np.int64)]


def of_lightgbm(data, offsets: np.ndarray) -> np.ndarray | None:
    """The positions of a ``lightgbm.Dataset`` as the user gave them, or None if it has none."""
    n = int(offsets[-1])
    values = given(data)
    if values is None and getattr(data, "_handle", 0) is None and getattr(data, "position", None) is not None:
        values = check(data.position, n, offsets)
    if values is not None:
        if values.shape != (n,):
            raise ValueError(f"the LightGBM Dataset holds {values.size} positions for {n} rows")
        _check_agrees(data, values)
        return values
    ids = data.get_position()
    if ids is None:
        return None
    ids = np.asarray(ids, dtype=np.int64)
    # the one reading of ids that needs no values: the rows of every query shown from the
    # top in row order, which numbers them 0, 1, 2, ... in every query
    expected = row_in_query(np.diff(offsets))
    if ids.shape != (n,) or not np.array_equal(ids, expected):
        where = _where(int(np.flatnonzero(ids != expected)[0]), offsets) if ids.shape == (n,) else "its rows"
        raise ValueError(
            f"the LightGBM Dataset was constructed before gbrank could read its positions, and the ids "
            f"LightGBM keeps instead do not say which position each row had ({where}). Pass the "
            "Dataset to lgb.train / lgb.cv before constructing it (or call "
            "gbrank.engines.positions.remember(dataset) before construct()), or bind the positions "
            "with gbrank.engines.with_position(objective, position)"
        )
    _warn_once("lightgbm-ids", _LIGHTGBM_IDS)
    return ids + 1


def _first_appearance_ids(values: np.ndarray) -> np.ndarray:
    """LightGBM's ids of ``values``: the distinct values numbered in order of first appearance."""
    _, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    number = np.empty(first.size, dtype=np.int64)
    number[np.argsort(first, kind="stable")] = np.arange(first.size)
    return number[inverse.reshape(-1)]


def _check_agrees(data, values: np.ndarray) -> None:
    """Refuse recorded positions that the Dataset's ids contradict (``set_position`` after
    LightGBM constructed it); checked once per ids array."""
    if getattr(data, "_handle", None) is None or getattr(data, "used_indices", None) is not None:
        return
    ids = data.get_position()
    if ids is None:
        return
    with _LOCK:
        if _AGREED.get(data) is ids:
            return
    if not np.array_equal(np.asarray(ids, dtype=np.int64), _first_appearance_ids(values)):
        raise ValueError(
            "the LightGBM Dataset's positions changed after gbrank read them (set_position on a "
            "constructed Dataset, of which LightGBM keeps only ids): build a new Dataset with "
            "position=, or bind the positions with gbrank.engines.with_position(objective, position)"
        )
    with _LOCK:
        _AGREED[data] = ids


def row_order(sizes: np.ndarray, *, asked: bool = False) -> np.ndarray:
    """Positions 1, 2, 3, ... in row order within each query of ``sizes`` rows; warns once
    unless ``asked``."""
    if not asked:
        _warn_once("xgboost-row-order", _XGBOOST_ROW_ORDER)
    return row_in_query(sizes) + 1
