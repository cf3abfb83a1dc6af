"""Input checks shared by metrics and objectives.

Every check names the problem and where it is (row, and query when offsets are known), so
that a bad value is reported instead of turning into a NaN gradient.
"""

from __future__ import annotations

import numpy as np


def _show(value: float) -> str:
    return "NaN" if np.isnan(value) else repr(float(value))


def _where(row: int, offsets: np.ndarray | None) -> str:
    if offsets is None:
        return f"row {row}"
    query = int(np.searchsorted(offsets, row, side="right") - 1)
    return f"row {row} (query {query})"


def check_scores(y_pred, n_rows: int | None = None, offsets=None, name: str = "y_pred") -> np.ndarray:
    """Return scores as contiguous float64, rejecting NaN/inf and wrong shapes."""
    scores = np.asarray(y_pred)
    if scores.ndim == 2 and scores.shape[1] == 1:
        scores = scores[:, 0]
    if scores.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {scores.shape}")
    if n_rows is not None and scores.shape[0] != n_rows:
        raise ValueError(f"{name} has {scores.shape[0]} rows but the labels have {n_rows}")
    if scores.dtype.kind not in "fiub":
        raise TypeError(f"{name} must be numeric, got dtype {scores.dtype}")
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    if not np.isfinite(scores).all():
        row = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise ValueError(f"{name} contains {_show(scores[row])} at {_where(row, offsets)}; scores must be finite")
    return scores


def check_labels(
    y_true,
    *,
    offsets=None,
    integer: bool = False,
    max_label: float | None = None,
    why: str = "",
    name: str = "y_true",
) -> np.ndarray:
    """Return labels as contiguous float64.

    Labels must be finite and non-negative; with ``integer`` they must be whole numbers, and
    with ``max_label`` no larger than it. ``why`` completes the message (which setting needs it).
    """
    labels = np.asarray(y_true)
    if labels.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {labels.shape}")
    if labels.dtype.kind not in "fiub":
        raise TypeError(f"{name} must be numeric, got dtype {labels.dtype}")
    labels = np.ascontiguousarray(labels, dtype=np.float64)
    if labels.size == 0:
        return labels
    bad = ~np.isfinite(labels)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} contains {_show(labels[row])} at {_where(row, offsets)}; labels must be finite")
    if labels.min() < 0:
        row = int(np.argmin(labels))
        raise ValueError(f"{name} must be non-negative; {name}[{row}] = {labels[row]:g} at {_where(row, offsets)}")
    if integer:
        frac = labels != np.floor(labels)
        if frac.any():
            row = int(np.flatnonzero(frac)[0])
            raise ValueError(
                f"{name} must hold integers{why}; {name}[{row}] = {labels[row]:g} at {_where(row, offsets)}"
            )
    if max_label is not None and labels.max() > max_label:
        row = int(np.argmax(labels))
        raise ValueError(
            f"{name}[{row}] = {labels[row]:g} at {_where(row, offsets)} exceeds the largest "
            f"supported label {max_label:g}{why}"
        )
    return labels


def check_weights(weight, n_rows: int, offsets=None, name: str = "weight") -> np.ndarray | None:
    """Return per-row weights as float64, or None. Weights must be finite and non-negative."""
    if weight is None:
        return None
    w = np.ascontiguousarray(np.asarray(weight, dtype=np.float64))
    if w.ndim != 1 or w.shape[0] != n_rows:
        raise ValueError(f"{name} has shape {w.shape} but there are {n_rows} rows")
    if not np.isfinite(w).all():
        row = int(np.flatnonzero(~np.isfinite(w))[0])
        raise ValueError(f"{name} contains {_show(w[row])} at {_where(row, offsets)}; weights must be finite")
    if w.size and w.min() < 0:
        row = int(np.argmin(w))
        raise ValueError(f"{name} must be non-negative; {name}[{row}] = {w[row]:g} at {_where(row, offsets)}")
    return w


# ---------------------------------------------------------------------- settings
class InvalidParameterError(ValueError, TypeError):
    """A setting of the wrong type or out of range.

    A subclass of both ``ValueError`` and ``TypeError`` (as scikit-learn's), so that callers
    catching either keep working whichever of the two a check used to raise.
    """


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_real(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def check_int(name: str, value, *, min: int | None = None, max: int | None = None, optional: bool = False) -> int | None:
    """Return ``value`` as an int, or None when ``optional`` and ``value`` is None.

    Booleans are refused (``True`` is not the integer 1 here), as are floats, even whole ones.
    """
    if value is None and optional:
        return None
    if _is_int(value) and (min is None or value >= min) and (max is None or value <= max):
        return int(value)
    if min is not None and max is not None:
        bound = f" in {min} .. {max}"
    elif min is not None:
        bound = f" >= {min}"
    elif max is not None:
        bound = f" <= {max}"
    else:
        bound = ""
    raise InvalidParameterError(f"{name} must be an integer{bound}{' or None' if optional else ''}, got {value!r}")


def check_float(name: str, value, *, min: float | None = None, strict: bool = False, optional: bool = False) -> float | None:
    """Return ``value`` as a finite float (``> min`` with ``strict``, else ``>= min``)."""
    if value is None and optional:
        return None
    if _is_real(value) and np.isfinite(value):
        if min is None or value > min or (value == min and not strict):
            return float(value)
    bound = "" if min is None else f" {'>' if strict else '>='} {min:g}"
    raise InvalidParameterError(
        f"{name} must be a finite number{bound}{' or None' if optional else ''}, got {value!r}"
    )


def check_bool(name: str, value) -> bool:
    """Return ``value`` if it is True or False (a string such as ``"no"`` would read as True)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InvalidParameterError(f"{name} must be True or False, got {value!r}")


def check_present(name: str, values: np.ndarray, fix: str) -> None:
    """Refuse a missing entry (NaN, None, ``pd.NA``) of the ids ``values``, naming the first
    row: a missing id equals no other, itself included."""
    import pandas as pd

    missing = np.flatnonzero(pd.isna(values))
    if missing.size:
        row = int(missing[0])
        raise ValueError(f"{name}[{row}] is missing ({values[row]}): {fix}")


def check_choice(name: str, value, choices) -> str:
    """Return ``value`` if it is one of the strings ``choices``."""
    if isinstance(value, str) and value in choices:
        return value
    raise InvalidParameterError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")

