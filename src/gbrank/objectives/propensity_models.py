r"""Curves the propensity estimate may take: one value per position, non-increasing, or a power law.

Within one alternation of :func:`gbrank.objectives.propensity.estimate_propensity` the
per-query factors and the scores are fixed, so the propensities are fitted to two sums per
position :math:`p`: its clicks :math:`C_p = \sum_{i:\,p_i = p} c_i` and its exposure
:math:`E_p = \sum_{i:\,p_i = p} \kappa_{q(i)} e^{a s_i}`, the clicks it would get at
:math:`\theta_p = 1`. The Poisson quasi-likelihood of the propensities is then

.. math::

    \ell(\theta) = \sum_p C_p \log \theta_p - \theta_p E_p ,

and each model maximises it over its own set of curves:

``"free"``
    one value per position, :math:`\theta_p = C_p / E_p`. Unbiased, but a deep position with
    a handful of clicks gets a handful's noise, and a position without clicks no value.
``"monotone"``
    the non-increasing curve of largest likelihood: the weighted isotonic regression of
    :math:`C_p / E_p` with weights :math:`E_p` (the Poisson likelihood's maximiser under an
    order restriction is the weighted least-squares one; Robertson, Wright and Dykstra,
    *Order Restricted Statistical Inference*, 1988, ch. 1). Thin positions are pooled with
    their neighbours where their free values would climb.
``"power"``
    :math:`\theta_p = A p^{-\eta}`, one shape parameter :math:`\eta \ge 0` (the examination
    curve of the simulators of Joachims et al., WSDM 2017, and
    :func:`gbrank.datasets.simulate_clicks`); :math:`A` is profiled out and :math:`\eta`
    found by Newton's method on the concave profile likelihood. Every position gets a value,
    clicked or not, but a curve of another shape is fitted wrongly everywhere.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PROPENSITY_MODELS", "check_propensity_model", "fit_curve"]

#: The curves :func:`fit_curve` fits, in the order the docs list them.
PROPENSITY_MODELS = ("free", "monotone", "power")

# Newton steps of the power law's exponent per fit; it starts from the previous alternation's
_POWER_STEPS = 8


def check_propensity_model(model) -> str:
    """Return ``model`` if it names a curve, else raise naming the choices."""
    if not isinstance(model, str) or model not in PROPENSITY_MODELS:
        raise ValueError(f"propensity_model must be one of {', '.join(map(repr, PROPENSITY_MODELS))}, got {model!r}")
    return model


def _non_increasing(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted least-squares non-increasing fit of ``values`` (pool adjacent violators:
    each block holds the weighted mean of its values; a block that rises above the one before
    it joins it). Weights are positive."""
    means: list[float] = []
    totals: list[float] = []
    counts: list[int] = []
    for value, weight in zip(values.tolist(), weights.tolist()):
        means.append(value)
        totals.append(weight)
        counts.append(1)
        while len(means) > 1 and means[-1] > means[-2]:
            mean, total, count = means.pop(), totals.pop(), counts.pop()
            merged = totals[-1] + total
            means[-1] = (means[-1] * totals[-1] + mean * total) / merged
            totals[-1] = merged
            counts[-1] += count
    return np.repeat(means, counts)


def _monotone(clicks: np.ndarray, exposure: np.ndarray) -> np.ndarray:
    theta = np.zeros(clicks.size)
    seen = np.flatnonzero(exposure > 0)
    if seen.size:
        theta[seen] = _non_increasing(clicks[seen] / exposure[seen], exposure[seen])
    return theta


def _power(clicks: np.ndarray, exposure: np.ndarray, eta: float) -> tuple[np.ndarray, float]:
    log_p = np.log(np.arange(1, clicks.size + 1, dtype=np.float64))
    total = clicks.sum()
    seen = exposure > 0
    if total <= 0 or not seen.any():
        return np.zeros(clicks.size), eta
    for _ in range(_POWER_STEPS):
        # the profile log-likelihood in eta, A = sum C / sum p^-eta E, is
        #   -eta sum_p C_p log p - (sum C) log sum_p p^-eta E_p ;
        # its slope and curvature in eta, with w_p the weights p^-eta E_p normalised
        w = np.where(seen, np.exp(-eta * log_p) * exposure, 0.0)
        w = w / w.sum()
        mean = np.dot(w, log_p)
        slope = -np.dot(clicks, log_p) + total * mean
        curvature = total * np.dot(w, (log_p - mean) ** 2)
        if curvature <= 0:
            break
        eta = max(eta + slope / curvature, 0.0)
    curve = np.exp(-eta * log_p)
    scale = total / np.dot(curve[seen], exposure[seen])
    return scale * curve, eta


def fit_curve(model: str, clicks: np.ndarray, exposure: np.ndarray, eta: float) -> tuple[np.ndarray, float]:
    """Propensities of positions 1..K (the index of ``clicks`` and ``exposure``) maximising
    the Poisson likelihood of the per-position clicks under ``model``, and the power law's
    exponent (``eta`` as given for the other models; the power law's start). A position
    without exposure gets 0 from ``"free"`` and ``"monotone"``."""
    if model == "power":
        return _power(clicks, exposure, eta)
    if model == "monotone":
        return _monotone(clicks, exposure), eta
    return np.where(exposure > 0, clicks / np.maximum(exposure, 1e-300), 0.0), eta
