r"""Trust bias: the affine correction of click targets.

The model
---------
Under trust bias (Agarwal et al., WWW 2019) users trust the ranking: an examined document at
position :math:`p` is clicked with probability :math:`\epsilon^+_p` if relevant and
:math:`\epsilon^-_p` if not, both depending on the position, so with examination
:math:`\theta_p` and relevance probability :math:`\gamma_i`

.. math::

    P(c_i = 1) = \theta_p \big(\epsilon^+_p \gamma_i + \epsilon^-_p (1 - \gamma_i)\big)
               = \alpha_p \gamma_i + \beta_p, \qquad
    \alpha_p = \theta_p (\epsilon^+_p - \epsilon^-_p), \quad \beta_p = \theta_p \epsilon^-_p.

No factor :math:`1/\theta_p` removes the :math:`\beta_p` part: inverse propensity scoring
gives :math:`E[c_i / \theta_p] = \gamma_i (\epsilon^+_p - \epsilon^-_p) + \epsilon^-_p`, which
still favours what was shown on top.

The correction
--------------
The affine estimator (Vardasbi, Oosterhuis and de Rijke, CIKM 2020) subtracts the clicks
trust alone explains and divides by the rest: with :math:`c_i` the clicks of row :math:`i` in
its :math:`N_i` impressions at position :math:`p_i`,

.. math::

    \tilde c_i = \frac{c_i - N_i \beta_{p_i}}{\alpha_{p_i}}, \qquad
    E[\tilde c_i] = N_i \gamma_i.

Negative targets
----------------
:math:`\tilde c_i` is negative whenever a row got fewer clicks than trust alone explains,
which is common for irrelevant documents near the top. The click losses are linear in their
targets, so their expectation is still the loss on :math:`N_i \gamma_i`, but a negative
target makes a loss unbounded below: the softmax loss
:math:`-\sum_i t_i \log \pi_i` drives :math:`\pi_i \to 0` for ever, with a gradient that does
not vanish and a hessian that does, and a boosting engine's Newton steps blow up. The click
objectives therefore refuse negative targets. ``shift=True`` (the default) adds to every row
of a query the same constant, :math:`m_q = \max_{i \in q} N_i \beta_{p_i} / \alpha_{p_i}`, the
largest amount any of its rows can lose, so every target is non-negative. :math:`m_q`
depends on what was shown, not on the clicks, so:

* for the softmax loss, adding :math:`m_q` to every target adds
  :math:`m_q \sum_i (\log \sum_j e^{s_j} - s_i)`, a convex term free of the clicks that pulls
  the scores together; the expected loss is the loss on :math:`N_i \gamma_i + m_q`, whose
  minimiser :math:`\pi \propto N_i \gamma_i + m_q` orders the documents by
  :math:`N_i \gamma_i`, as the uncorrected loss would: the ranking it aims at is unchanged,
  its targets are flatter;
* for the pairwise loss it adds :math:`m_q \sum_{i \ne j} \phi(s_i - s_j)`, symmetric in
  every pair, likewise free of the clicks.

With :math:`\epsilon^\pm` the same at every position, :math:`N\beta_p/\alpha_p` is the same for
every row shown as often, and the shifted targets are the IPS targets
:math:`c_i/\alpha_{p_i}`: the correction matters where trust varies with the position.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_bool, check_labels
from ..groups import check_group
from .propensity import check_positions

__all__ = ["affine_targets"]


def _per_position(value, name: str, n: int) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.ndim != 1 or arr.size != n:
        raise ValueError(f"{name} must be a number or one value per position ({n}, as theta), got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite")
    return arr


def affine_targets(clicks, position, group, *, theta, eps_plus, eps_minus, impressions,
                   shift: bool = True) -> np.ndarray:
    r"""Click targets corrected for position and trust bias, :math:`(c_i - N_i\beta_{p_i})/\alpha_{p_i}`.

    With :math:`\alpha_p = \theta_p(\epsilon^+_p - \epsilon^-_p)` and
    :math:`\beta_p = \theta_p\epsilon^-_p` (Vardasbi, Oosterhuis and de Rijke, CIKM 2020),
    in expectation :math:`N_i \gamma_i`. Train :func:`gbrank.ips_listnet` or
    :func:`gbrank.ips_ranknet` with ``propensity=None`` on them; see
    :mod:`gbrank.objectives.affine` for the model and for ``shift``.

    Parameters
    ----------
    clicks : array-like of shape (n_rows,)
        Clicks of each row (sessions with a click on it).
    position : array-like of int, shape (n_rows,)
        Display position, 1 at the top, -1 for a row never shown.
    group : array-like of shape (n_queries,)
        Query sizes; each query's rows are contiguous.
    theta : array-like of shape (n_positions,)
        Examination probability :math:`\theta_p` of positions 1, 2, ... (> 0).
    eps_plus, eps_minus : float or array-like of shape (n_positions,)
        Click probability of an examined relevant (:math:`\epsilon^+_p`) and irrelevant
        (:math:`\epsilon^-_p`) document at each position, with
        :math:`0 \le \epsilon^-_p < \epsilon^+_p \le 1`.
    impressions : float or array-like of shape (n_rows,)
        Sessions in which each row was shown, :math:`N_i` (a number: the same for every row).
    shift : bool, default=True
        Add to every row of a query :math:`m_q = \max_{i \in q} N_i\beta_{p_i}/\alpha_{p_i}`,
        so that no target is negative (the click objectives refuse negative targets). False:
        the unbiased targets as they are, negative ones included.

    Returns
    -------
    ndarray of float64, shape (n_rows,)
        The corrected targets. A row never shown gets the query's shift (0 without it): the
        target of an irrelevant document; leave such rows out of the training set to leave
        them out of the loss.

    Examples
    --------
    >>> import numpy as np, gbrank
    >>> theta = np.array([1.0, 0.5])
    >>> eps_minus = np.array([0.5, 0.1])                # users trust the top result
    >>> gamma = np.array([0.0, 1.0])                    # the relevant document is shown second
    >>> clicks = 100 * theta * (1.0 * gamma + eps_minus * (1 - gamma))   # expected clicks
    >>> gbrank.affine_targets(clicks, [1, 2], [2], theta=theta, eps_plus=1.0, eps_minus=eps_minus,
    ...                       impressions=100, shift=False)
    array([  0., 100.])
    """
    shift = check_bool("shift", shift)
    raw = np.asarray(clicks)
    if raw.ndim != 1:
        raise ValueError(f"clicks must be one-dimensional, got shape {raw.shape}")
    offsets = check_group(group, raw.shape[0])
    c = check_labels(raw, offsets=offsets, name="clicks")
    theta = np.asarray(theta, dtype=np.float64)
    if theta.ndim != 1 or theta.size == 0:
        raise ValueError("theta must be a non-empty 1-d array, one propensity per position")
    if not (np.isfinite(theta) & (theta > 0)).all():
        p = int(np.flatnonzero(~(np.isfinite(theta) & (theta > 0)))[0]) + 1
        raise ValueError(f"the propensity of position {p} is {float(theta[p - 1])!r}; propensities must be > 0")
    plus = _per_position(eps_plus, "eps_plus", theta.size)
    minus = _per_position(eps_minus, "eps_minus", theta.size)
    bad = ~((minus >= 0) & (minus < plus) & (plus <= 1))
    if bad.any():
        p = int(np.flatnonzero(bad)[0]) + 1
        raise ValueError(
            f"at position {p} eps_minus = {minus[p - 1]:g} and eps_plus = {plus[p - 1]:g}: they are click "
            "probabilities with 0 <= eps_minus < eps_plus <= 1 (a relevant document is clicked more often)"
        )
    pos = check_positions(position, c, offsets, theta.size)
    n = np.full(c.shape, float(impressions)) if np.ndim(impressions) == 0 else np.asarray(impressions, np.float64)
    if n.shape != c.shape:
        raise ValueError(f"impressions has shape {n.shape} but there are {c.shape[0]} rows")
    seen = pos >= 1
    bad_n = ~np.isfinite(n) | (n < 0) | (seen & (c > n))
    if bad_n.any():
        row = int(np.flatnonzero(bad_n)[0])
        raise ValueError(f"row {row} has {c[row]:g} clicks in {n[row]:g} impressions: give the sessions in which "
                         "each row was shown (at least its clicks)")
    alpha = theta * (plus - minus)
    beta = theta * minus
    target = np.zeros(c.shape)
    loss = np.zeros(c.shape)  # N_i beta / alpha: what trust alone explains, in the targets' scale
    at = pos[seen] - 1
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # refused below, by row
        loss[seen] = n[seen] * beta[at] / alpha[at]
        target[seen] = c[seen] / alpha[at] - loss[seen]
    if shift and c.size:
        # every query has a row (check_group): reduceat sees no empty query
        target += np.repeat(np.maximum.reduceat(loss, offsets[:-1]), np.diff(offsets))
    bad = seen & ~(np.isfinite(target) & np.isfinite(loss))
    if bad.any():
        # a shift is finite where every shown row of its query is
        row = int(np.flatnonzero(bad)[0])
        p = int(pos[row])
        raise ValueError(
            f"the corrected target of row {row} is not finite: alpha = theta (eps_plus - eps_minus) at its position "
            f"{p} is {float(alpha[p - 1]):g}, too small to divide by; give propensities and trust curves whose "
            "difference is not vanishingly small there"
        )
    return target
