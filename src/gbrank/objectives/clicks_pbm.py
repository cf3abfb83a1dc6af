r"""Learning to rank from position-biased clicks: the position-based model's likelihood.

The loss
--------
A query's documents were shown in sessions; document :math:`i`, shown at position
:math:`p_i`, got :math:`c_i` clicks. The position-based click model says
:math:`E[c_i] = N \theta_{p_i} \gamma_i` over :math:`N` sessions, with :math:`\theta_p` the
examination probability of position :math:`p` and :math:`\gamma_i` the relevance. Instead of
re-weighting each click by :math:`1/\theta_{p_i}` (inverse propensity scoring,
:func:`gbrank.ips_listnet`), this loss fits the model's mean to the raw clicks: with
:math:`\gamma_i \propto e^{s_i}` within a query, the Poisson quasi-likelihood of the click
counts, with the per-query scale profiled out, is the softmax cross-entropy of the clicks
over the *offset* scores :math:`z_i = s_i + \log \theta_{p_i}`:

.. math::

    L(s) = -\sum_i c_i \log \pi_i
         = \sum_i c_i \Big(\log \sum_j \theta_{p_j} e^{s_j} - s_i - \log \theta_{p_i}\Big), \qquad
    \pi_i = \frac{\theta_{p_i} e^{s_i}}{\sum_j \theta_{p_j} e^{s_j}},

.. math::

    g_i = C \pi_i - c_i, \qquad h_i = C \pi_i (1 - \pi_i), \qquad C = \sum_i c_i,

the gradient and the exact diagonal of the (positive semi-definite) hessian. :math:`L` is the
negative log-likelihood of the query's clicks given their number :math:`C` (multinomial over
the shown rows); the last term is constant in :math:`s`. It is the kernel of
:func:`gbrank.ips_listnet` with the clicks as targets and :math:`\log \theta_{p_i}` added to
the scores (the position-aware loss of Guo et al., RecSys 2019, and the M-step of
regression-EM, Wang et al., WSDM 2018, in the quasi-likelihood form). It is consistent
wherever the mean model holds: :math:`E[g_i] = 0` at :math:`e^{s_i} \propto \gamma_i`,
whatever the variance of the clicks. No click is multiplied by :math:`1/\theta_p`, so a
deep position adds no variance: a click at position 30 counts one click, and the loss asks
the model for the *share* of the clicks that position 30 would get at the relevance
:math:`e^{s_i}`, instead of inflating it by :math:`p^\eta`. A query's gradients sum to zero
and a query without clicks contributes nothing; a row never shown (position -1) takes no
part (zero gradient), as in :func:`gbrank.ips_listnet`.

There is no weight to clip: ``clip`` is refused. Positions, propensities (given, or
estimated jointly with the model by :func:`gbrank.objectives.propensity.estimate_propensity`)
and the estimate exposed after training are shared with the other click objectives: see
:mod:`gbrank.objectives.propensity`. The estimator fits the same Poisson model,
:math:`E[c_i] = \theta_{p_i} \kappa_q e^{a s_i}`; here the scores are the log-relevance of
that model, so the slope is held at :math:`a = 1` (``fit_slope=False``) and boosting and
re-estimation alternate on one likelihood. Fitting the slope as for the IPS losses let the
estimate drift further from the truth on the benchmark's clicks (largest error over
positions 1-10 of 17-40% instead of 6-12% at :math:`\eta = 1`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._docstrings import fill_doc, objective_example
from .listnet import weighted_top1
from .propensity import OffsetClickObjective, click_doc

__all__ = ["PBMListNet", "pbm_listnet"]


class PBMListNet(OffsetClickObjective):
    """Position-based model likelihood (softmax over offset scores) on clicks; build it with
    :func:`pbm_listnet`."""

    factory = "pbm_listnet"
    #: The loss is the Poisson likelihood the estimator fits, with e^s the relevance: the
    #: estimate holds the slope of the relevance link at 1, so that boosting and
    #: re-estimation alternate on one likelihood.
    _fits_slope = False

    def _kernel(self, state, scores, at, weight, inverse, offsets, grad, hess, want_loss):
        if inverse is not None:
            scores = scores + state["offset"]
        return weighted_top1(scores, weight, offsets, grad, hess, want_loss)


@click_doc
@fill_doc(example=objective_example(
    "gbrank.pbm_listnet(propensity=None)  # no offsets: the softmax on raw clicks",
    loss=4.9712, gradient=[-1.2016, 1.3164, -0.7063, 0.5915],
))
def pbm_listnet(
    propensity: Any = "estimate",
    *,
    clip: float | None = None,
    warmup: int = 10,
    update_every: int = 5,
    propensity_model: str = "free",
    start: str = "click_rate",
    hess_floor: float = 1e-6,
    hess_scale: float = 1.0,
) -> PBMListNet:
    r"""Position-based model likelihood on clicks: a softmax over scores offset by
    :math:`\log \theta_p`, the raw clicks as targets.

    .. math::

        L(s) = -\sum_i c_i \log \frac{\theta_{p_i} e^{s_i}}{\sum_j \theta_{p_j} e^{s_j}}

    per query, over its shown rows, with :math:`c_i` the clicks on row :math:`i` (the labels)
    and :math:`\theta_{p_i}` the propensity of its display position. It is the Poisson
    quasi-likelihood of the clicks under the position-based model
    :math:`E[c_i] \propto \theta_{p_i} e^{s_i}`, so its minimiser has :math:`e^{s_i}` in
    proportion to the relevance; unlike :func:`gbrank.ips_listnet` it weights no click by
    :math:`1/\theta_p`, so steep position bias adds no variance. See
    :mod:`gbrank.objectives.clicks_pbm` for the derivation and
    :mod:`gbrank.objectives.propensity` for the estimator.

    Parameters
    ----------
    propensity : "estimate", array-like or None, default="estimate"
        ``"estimate"``: estimated from the clicks jointly with the model (exposed as
        ``propensity_`` after training), by the same Poisson model this loss fits. An array:
        the known propensities :math:`\theta_1, \theta_2, \dots` of positions 1, 2, ....
        None: no offsets, the softmax on the raw clicks (the naive loss); positions are not
        read.
    clip : None
        Refused: the propensities are offsets of the scores, not weights of the clicks, so
        there is no weight to bound (it is here so that a setting of
        :func:`gbrank.ips_listnet` passed on fails loudly instead of being ignored).
    warmup : int, default=10
        Boosting iterations on the starting estimate (each position's click rate within
        its queries) before the first re-estimation from the scores (``"estimate"`` only).
    update_every : int, default=5
        Iterations between re-estimations (``"estimate"`` only).
    propensity_model : {"free", "monotone", "power"}, default="free"
        The curve the estimate may take (``"estimate"`` only): one value per position, the
        non-increasing curve of largest likelihood, or :math:`p^{-\eta}`; see
        :func:`gbrank.ips_listnet` and :mod:`gbrank.objectives.propensity_models`.
    start : {"click_rate", "flat"}, default="click_rate"
        Where the estimate starts (``"estimate"`` only): each position's click rate within
        its queries, too steep by as much as the logging ranker is good, or flat
        propensities (all 1), too flat by as much as the features predict the logging
        order. :func:`gbrank.fit_propensity` fits from both and takes the geometric mean.
    hess_floor : float, default=1e-6
        Lower bound on every row's hessian.
    hess_scale : float, default=1.0
        Factor on every row's hessian.

    Returns
    -------
    PBMListNet

    Notes
    -----
    {click_notes}

    %(example)s

    With positions and known propensities the clicks of the lower rows count for more
    relevance, without being multiplied by :math:`1/\theta_p`:

    >>> pbm = gbrank.pbm_listnet(propensity=[1.0, 0.5, 0.25, 0.125])
    >>> round(pbm.loss(y, s, group=[4], position=[1, 2, 3, 4]), 4)
    4.4791
    >>> pbm.grad_hess(y, s, group=[4], position=[1, 2, 3, 4])[0].round(4).tolist()
    [-0.5067, 1.231, -0.8627, 0.1383]
    """
    return PBMListNet(
        propensity, clip=clip, warmup=warmup, update_every=update_every, hess_floor=hess_floor, hess_scale=hess_scale,
        propensity_model=propensity_model, start=start
    )
