"""Displayed positions of a training set: the one place that reads them from engine data.

Positions are 1-based display ranks (1 = top, any value: a second results page holds 11..20)
and ``-1`` marks a row never shown. They are the values the user gave, whatever the row
order, and gbrank never guesses them:

* **LightGBM** keeps, once a ``Dataset`` is constructed, only ids of the distinct positions
  (numbered in an order that differs between its versions), and ``lgb.train`` constructs
  the Dataset before it first calls the objective. The values therefore come from the user:
  :func:`gbrank.engines.with_position` (the positions travel with the objective, in
  ``lgb.train``, ``lgb.cv``, ``Booster.update(fobj=)`` alike), or
  :func:`gbrank.engines.lightgbm.dataset` (``position=``), which keeps the values with the
  Dataset it builds (:func:`keep`). An ``lgb.cv`` fold reads its rows of them. A Dataset
  with positions that gbrank was not given is refused, every time, with the fix: its ids
  could mean any positions (a second page, any order repeated in every query).
* **XGBoost** has no position field. Positions travel with the objective
  (:func:`gbrank.engines.with_position`, ``gbrank.Ranker.fit(position=)``, a position
  column in :mod:`gbrank.dask`). Without them the row order within each query is the
  position (XGBoost's own convention for ``lambdarank_unbiased``), with a warning naming how
  to give positions; ``with_position(objective, "row_order")`` asks for the row order and
  silences it.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
import weakref
from typing import Any

import numpy as np

from ..groups import row_in_query

__all__ = ["ROW_ORDER", "check", "given", "keep", "of_lightgbm", "of_rows", "row_order"]

#: ``with_position(objective, ROW_ORDER)``: the rows of each query are in display order.
ROW_ORDER = "row_order"

# lightgbm.Dataset -> (the positions the user gave (int64, read-only), the ids LightGBM made
# of them, or None before construction), while it lives
_GIVEN: "weakref.WeakKeyDictionary[Any, tuple[np.ndarray, np.ndarray | None]]" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()

_XGBOOST_ROW_ORDER = (
    "XGBoost has no position field: gbrank reads each query's row order as the display positions "
    "1, 2, 3, ... (XGBoost's own convention). Give the positions with "
    "obj=gbrank.engines.with_position(objective, position) or gbrank.Ranker(...).fit(..., position=), "
    "or say that the rows are in display order with with_position(objective, 'row_order')"
)
_LIGHTGBM_IDS = (
    "the LightGBM Dataset holds positions that gbrank was not given: once constructed, LightGBM keeps only "
    "ids of them, which could mean any positions (a second results page, any order repeated in every "
    "query). Give the values: obj=gbrank.engines.with_position(objective, position), or build the Dataset "
    "with gbrank.engines.lightgbm.dataset(X, y, group, position=position)"
)


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


def keep(data, position, ids=None) -> None:
    """Keep the ``position`` values given for the ``lightgbm.Dataset`` ``data`` (checked),
    for the objectives that read them while ``data`` lives; ``ids``: what LightGBM made of
    them when it constructed ``data`` (``get_position()``), against which a later
    ``set_position`` is found."""
    values = check(position, len(position))
    values.setflags(write=False)
    with _LOCK:
        # the array itself: set_position replaces it, also with the same ids (positions
        # shifted or reversed), which a copy of the ids could not tell apart
        _GIVEN[data] = values, ids


def given(data) -> np.ndarray | None:
    """The positions recorded for a ``lightgbm.Dataset`` (an ``lgb.cv`` fold: its rows of its
    full set's), or None."""
    with _LOCK:
        kept = _GIVEN.get(data)
    if kept is not None:
        values, ids = kept
        if ids is not None and data.get_position() is not ids:
            raise ValueError(
                "the LightGBM Dataset's positions changed after gbrank kept them (set_position on a "
                "constructed Dataset, of which LightGBM keeps only ids): build a new Dataset with "
                "gbrank.engines.lightgbm.dataset(..., position=), or bind the positions with "
                "gbrank.engines.with_position(objective, position)"
            )
        return values
    reference = getattr(data, "reference", None)
    used = getattr(data, "used_indices", None)
    if reference is None or used is None:
        return None
    # an lgb.cv fold: the full set's values at the fold's rows
    full = given(reference)
    return None if full is None else full[np.asarray(used, dtype=np.int64)]


def of_lightgbm(data, offsets: np.ndarray) -> np.ndarray | None:
    """The positions of a ``lightgbm.Dataset`` as the user gave them (:func:`keep`), None if
    it has none; a Dataset with positions gbrank was not given is refused with the fix."""
    n = int(offsets[-1])
    values = given(data)
    if values is not None:
        if values.shape != (n,):
            raise ValueError(f"the LightGBM Dataset holds {values.size} positions for {n} rows")
        return values
    if data.get_position() is not None:
        raise ValueError(_LIGHTGBM_IDS)
    return None


def of_rows(values: np.ndarray, data, n: int) -> np.ndarray:
    """Positions ``values`` given for a training set, for the ``n`` rows of ``data``: all of
    them, or an ``lgb.cv`` fold's rows of the full set they were given for."""
    if values.size == n:
        return values
    used = getattr(data, "used_indices", None)
    reference = getattr(data, "reference", None)
    if used is not None and reference is not None and reference.num_data() == values.size:
        return values[np.asarray(used, dtype=np.int64)]
    raise ValueError(
        f"{values.size} positions for training data of {n} rows: give the positions of exactly its rows, in their "
        "order. An xgb.cv fold is a part of the DMatrix that keeps no link to it, so gbrank cannot tell which "
        "positions are its rows: cross-validate with lgb.cv, or with a loop over gbrank.engines.query_folds(sizes, "
        "nfold=...) training each fold with xgb.train and with_position(objective, position[train_rows]); or "
        "with_position(objective, 'row_order') where each query's rows are in display order"
    )


def row_order(sizes: np.ndarray, *, asked: bool = False) -> np.ndarray:
    """Positions 1, 2, 3, ... in row order within each query of ``sizes`` rows; warns unless
    ``asked`` (Python's warning filter shows it once per place, by default)."""
    if not asked:
        _warn_at_the_callers_line(_XGBOOST_ROW_ORDER)
    return row_in_query(sizes) + 1


# frames between this module and the user's xgb.train(obj=...) line: row_order, the reader,
# the engine layer's read and gradients, the objective's call, XGBoost 3.2's five, and this one
_XGBOOST_CALL_DEPTH = 11


def _warn_at_the_callers_line(message: str) -> None:
    """Warn at the user's line: the first frame outside gbrank and the engines (Python 3.12's
    ``skip_file_prefixes``); before 3.12, where a direct ``xgb.train(obj=...)`` puts it."""
    if sys.version_info >= (3, 12):
        folders = tuple(os.path.dirname(module.__file__) for name in ("gbrank", "xgboost", "lightgbm")
                        if (module := sys.modules.get(name)) is not None and module.__file__)
        warnings.warn(message, UserWarning, skip_file_prefixes=folders)
    else:
        warnings.warn(message, UserWarning, stacklevel=_XGBOOST_CALL_DEPTH)
