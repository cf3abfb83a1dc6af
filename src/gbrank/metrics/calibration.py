r"""Calibration metrics: how well :math:`\sigma(s)`, the sigmoid of a raw score, estimates the
probability that a document is relevant.

Scores are raw margins (what LightGBM's ``predict`` gives for a custom objective and what
XGBoost gives with ``output_margin=True``, and what both engines pass to evaluation
callbacks when the objective is custom); the probability is :math:`q = \sigma(s)`. With a
built-in probabilistic objective (LightGBM's ``binary``, XGBoost's ``binary:logistic``) the
engines hand an evaluation callback probabilities instead, and nothing in the call says so:
pass ``probability=True`` there (in :func:`gbrank.metrics.make_metrics`, the option
``("logloss", {"probability": True})``). Read as raw scores, probabilities would give a
wrong figure, not an error.

Targets are the labels read as probabilities, :math:`y = l / l_{\max}`: binary labels as
they are, graded labels divided by ``max_label``. Without ``max_label`` the labels must lie
in :math:`[0, 1]` (the evaluated set's own largest grade could differ from the training
set's, so it is not guessed). Both metrics are means over rows, not over queries, and lower
is better; ``group`` is optional and only checked.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .._validation import check_int, check_labels, check_scores
from ..groups import check_group

__all__ = ["CalibrationBins", "calibration_bins", "expected_calibration_error", "log_loss", "reliability_diagram"]


# probabilities are clipped this far from 0 and 1 for the log loss (LightGBM's kEpsilon)
_EPSILON = 1e-15


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


def _check_probability(probability, name: str = "probability") -> bool:
    """``probability`` as given: True or False (numpy's booleans too), else a TypeError."""
    if not isinstance(probability, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {probability!r}")
    return bool(probability)


def _targets(y_true, y_pred, group, max_label, probability: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Validated targets in [0, 1] and float64 scores (probabilities in [0, 1] where
    ``probability``)."""
    labels = np.asarray(y_true)
    if labels.ndim != 1:
        raise ValueError(f"y_true must be one-dimensional, got shape {labels.shape}")
    if labels.shape[0] == 0:
        raise ValueError("empty input: y_true has no rows")
    offsets = None if group is None else check_group(group, labels.shape[0])
    scores = check_scores(y_pred, n_rows=labels.shape[0], offsets=offsets)
    if _check_probability(probability):
        outside = np.flatnonzero((scores < 0.0) | (scores > 1.0))
        if outside.size:
            raise ValueError(f"y_pred row {outside[0]} is {float(scores[outside[0]])!r}, not a probability in [0, 1] "
                             "(probability=True); pass raw scores with probability=False")
    if max_label is None:
        labels = check_labels(labels, offsets=offsets, max_label=1.0,
                              why=" (labels are read as probabilities); pass max_label= for graded labels")
        return labels, scores
    if isinstance(max_label, bool) or not isinstance(max_label, (int, float, np.integer, np.floating)) \
            or not np.isfinite(max_label) or max_label <= 0:
        raise ValueError(f"max_label must be a positive number or None, got {max_label!r}")
    labels = check_labels(labels, offsets=offsets, max_label=float(max_label),
                          why=" (targets are label / max_label); raise max_label")
    return labels / float(max_label), scores


def log_loss(y_true, y_pred, group=None, *, max_label: float | None = None, probability: bool = False) -> float:
    r"""Mean binary cross-entropy of :math:`\sigma(s)` against the targets.

    .. math::

        \mathrm{LogLoss} = \frac{1}{N} \sum_{i=1}^{N} -y_i \log \sigma(s_i) - (1 - y_i) \log (1 - \sigma(s_i)),

    computed from the raw scores as :math:`y\,\mathrm{softplus}(-s) + (1-y)\,\mathrm{softplus}(s)`,
    so that no probability of 0 or 1 is clipped. Equal to ``sklearn.metrics.log_loss(y,
    expit(s))`` for binary labels while :math:`|s| \lesssim 30` (beyond, ``1 - expit(s)``
    loses its digits and scikit-learn clips it at machine epsilon: a confidently wrong row
    costs :math:`|s|` here, at most 36 there); graded
    labels enter as soft targets :math:`l / l_{\max}`. With ``probability=True`` ``y_pred``
    holds :math:`q = \sigma(s)` itself, clipped to :math:`[10^{-15}, 1 - 10^{-15}]` as
    LightGBM's ``binary_logloss`` clips it, so a row's cost is at most :math:`34.5` there.

    Parameters
    ----------
    y_true : array-like of shape (n_rows,)
        Labels: in [0, 1], or graded up to ``max_label``.
    y_pred : array-like of shape (n_rows,)
        Raw scores (logits).
    group : array-like of shape (n_queries,), optional
        Group sizes; only checked (the mean is over rows).
    max_label : float, optional
        The label read as probability 1. None: labels must lie in [0, 1].
    probability : bool, default=False
        ``y_pred`` holds probabilities in [0, 1], not raw scores: what the engines hand an
        evaluation callback under a built-in ``binary`` / ``binary:logistic`` objective.

    Returns
    -------
    float
        Lower is better.

    Examples
    --------
    >>> from gbrank.metrics import log_loss
    >>> round(log_loss([1, 0, 1, 0], [2.0, -1.0, 0.0, 0.5]), 4)
    0.5269
    >>> round(log_loss([4, 0, 2, 0], [2.0, -1.0, 0.0, 0.5], max_label=4), 4)
    0.5269
    >>> round(log_loss([1, 0, 1, 0], [0.8808, 0.2689, 0.5, 0.6225], probability=True), 4)
    0.5269
    """
    targets, scores = _targets(y_true, y_pred, group, max_label, probability)
    if probability:
        q = np.clip(scores, _EPSILON, 1.0 - _EPSILON)
        return float(np.mean(-targets * np.log(q) - (1.0 - targets) * np.log1p(-q)))
    return _mean(targets * _softplus(-scores) + (1.0 - targets) * _softplus(scores))


def _mean(values: np.ndarray) -> float:
    """The mean, also where the sum of finite terms (scores near the float range) overflows."""
    with np.errstate(over="ignore"):
        mean = np.mean(values)
    return float(mean if np.isfinite(mean) else np.sum(values / values.size))


class CalibrationBins(NamedTuple):
    """Per bin of predicted probability: its edges, row count, mean probability and mean target
    (NaN for an empty bin)."""

    edges: np.ndarray
    count: np.ndarray
    predicted: np.ndarray
    observed: np.ndarray


def calibration_bins(y_true, y_pred, group=None, *, n_bins: int = 10, max_label: float | None = None,
                     probability: bool = False) -> CalibrationBins:
    r"""Rows binned by their probability :math:`\sigma(s)` into ``n_bins`` equal-width bins of
    :math:`[0, 1]`: bin :math:`b` holds :math:`b/B \le q < (b+1)/B`, the last one also
    :math:`q = 1`.

    Parameters are those of :func:`expected_calibration_error`.

    Returns
    -------
    CalibrationBins
    """
    n_bins = check_int("n_bins", n_bins, min=1)
    targets, scores = _targets(y_true, y_pred, group, max_label, probability)
    prob = scores if probability else 0.5 * (1.0 + np.tanh(0.5 * scores))  # the sigmoid, without overflow
    index = np.minimum((prob * n_bins).astype(np.int64), n_bins - 1)
    count = np.bincount(index, minlength=n_bins).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        predicted = np.bincount(index, weights=prob, minlength=n_bins) / count
        observed = np.bincount(index, weights=targets, minlength=n_bins) / count
    return CalibrationBins(np.linspace(0.0, 1.0, n_bins + 1), count, predicted, observed)


def expected_calibration_error(y_true, y_pred, group=None, *, n_bins: int = 10,
                               max_label: float | None = None, probability: bool = False) -> float:
    r"""Expected calibration error of :math:`\sigma(s)`, over equal-width probability bins.

    .. math::

        \mathrm{ECE} = \sum_{b=1}^{B} \frac{n_b}{N} \,\Big| \bar y_b - \bar q_b \Big|,

    where bin :math:`b` holds the :math:`n_b` rows whose probability :math:`q = \sigma(s)`
    falls in :math:`[(b-1)/B, b/B)` (the last bin closed), :math:`\bar q_b` is their mean
    probability and :math:`\bar y_b` their mean target (Naeini et al. 2015; Guo et al.
    2017). Empty bins count zero. 0 is perfect calibration; lower is better.

    Parameters
    ----------
    y_true : array-like of shape (n_rows,)
        Labels: in [0, 1], or graded up to ``max_label``.
    y_pred : array-like of shape (n_rows,)
        Raw scores (logits).
    group : array-like of shape (n_queries,), optional
        Group sizes; only checked.
    n_bins : int, default=10
        Number of equal-width bins :math:`B`.
    max_label : float, optional
        The label read as probability 1. None: labels must lie in [0, 1].
    probability : bool, default=False
        ``y_pred`` holds the probabilities :math:`q` in [0, 1], not raw scores (see
        :func:`log_loss`).

    Returns
    -------
    float

    Examples
    --------
    >>> from gbrank.metrics import expected_calibration_error
    >>> round(expected_calibration_error([1, 0, 1, 0], [2.0, -1.0, 0.0, 0.5], n_bins=2), 4)
    0.068
    """
    bins = calibration_bins(y_true, y_pred, group, n_bins=n_bins, max_label=max_label, probability=probability)
    kept = bins.count > 0
    weights = bins.count[kept] / bins.count.sum()
    return float(np.sum(weights * np.abs(bins.observed[kept] - bins.predicted[kept])))


def reliability_diagram(y_true, y_pred, group=None, *, n_bins: int = 10, max_label: float | None = None,
                        probability: bool = False, ax: Any = None, label: str | None = None) -> Any:
    r"""Plot the mean target against the mean probability :math:`\sigma(s)` per bin, with the
    diagonal of perfect calibration.

    Parameters are those of :func:`expected_calibration_error`, and:

    Parameters
    ----------
    ax : matplotlib Axes, optional
        Where to draw; a new figure's by default.
    label : str, optional
        Legend entry of the curve (its ECE is appended).

    Returns
    -------
    matplotlib.axes.Axes

    Notes
    -----
    Needs matplotlib (``pip install 'gbrank[bench]'``). Call it once per model on the same
    ``ax`` to compare models; bins without rows are not drawn.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("reliability_diagram needs matplotlib: pip install 'gbrank[bench]'") from exc
    bins = calibration_bins(y_true, y_pred, group, n_bins=n_bins, max_label=max_label, probability=probability)
    ece = expected_calibration_error(y_true, y_pred, group, n_bins=n_bins, max_label=max_label,
                                     probability=probability)
    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 4.5))
    kept = bins.count > 0
    ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=1)
    ax.plot(bins.predicted[kept], bins.observed[kept], marker="o", label=f"{label or 'model'} (ECE {ece:.3f})")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("mean predicted probability")
    ax.set_ylabel("observed rate")
    ax.legend(loc="upper left", fontsize="small")
    return ax
