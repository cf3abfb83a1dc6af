r"""Learning to rank from position-biased clicks: the inverse-propensity weighted softmax loss.

The loss
--------
A query's documents were shown in sessions; document :math:`i`, shown at position
:math:`p_i`, got :math:`c_i` clicks. Under the position-based click model a document is
clicked when it is examined (probability :math:`\theta_{p}`, the propensity of its position)
and found relevant (probability :math:`\gamma_i`), independently, so
:math:`E[c_i] = N \theta_{p_i} \gamma_i` over :math:`N` sessions. The inverse-propensity
weighted (IPS) softmax cross-entropy, with :math:`w_i = c_i / \theta_{p_i}`,

.. math::

    L(s) = -\sum_i w_i \log \mathrm{softmax}(s)_i
         = \sum_i w_i \Big(\log \sum_j e^{s_j} - s_i\Big),

is then, in expectation over the clicks, the full-information loss
:math:`-N \sum_i \gamma_i \log \mathrm{softmax}(s)_i` (Joachims et al. 2017; Ai et al. 2018),
whose minimiser has :math:`\mathrm{softmax}(s)_i = \gamma_i / \sum_j \gamma_j`: the bias of
position is removed without knowing which clicks it caused. With :math:`W = \sum_i w_i` and
:math:`\pi = \mathrm{softmax}(s)`,

.. math::

    g_i = W \pi_i - w_i, \qquad h_i = W \pi_i (1 - \pi_i),

the gradient and the exact diagonal of the (positive semi-definite) hessian; it is
ListNet's top-one loss with unnormalised targets (:func:`gbrank.listnet`'s kernel serves
both), so a query's gradients sum to zero and a query without clicks contributes nothing.

Unbiasedness needs :math:`\theta_{p_i} > 0` wherever :math:`\gamma_i > 0`. A document never
shown (position -1) has no propensity and no clicks; it takes no part in the loss (the
softmax runs over the shown documents of the query: zero gradient), so it is neither pushed
down as irrelevant nor learnt from. With a deterministic top-k cut-off the loss is then
unbiased for the full-information loss over the shown documents only, and what the model
learns about the others comes from the features alone. A stochastic logging policy that can
show every document, with the policy-aware propensity
:math:`\rho_i = E_\pi[\theta_{\mathrm{rank}(i)}]` (Oosterhuis and de Rijke, CIKM 2020),
restores unbiasedness: pass :math:`c_i / \rho_i` as labels with ``propensity=None``.

Positions, the propensities (given, estimated jointly with the model, clipped) and the
estimate exposed after training are shared with :func:`gbrank.ips_ranknet`: see
:mod:`gbrank.objectives.propensity`.
"""

from __future__ import annotations

from typing import Any

from .._docstrings import fill_doc, objective_example
from .listnet import weighted_top1
from .propensity import ClickObjective, click_doc

__all__ = ["IPSListNet", "ips_listnet"]


class IPSListNet(ClickObjective):
    """Inverse-propensity weighted softmax loss on clicks; build it with :func:`ips_listnet`."""

    factory = "ips_listnet"

    def _kernel(self, state, scores, at, weight, inverse, offsets, grad, hess, want_loss):
        return weighted_top1(scores, weight, offsets, grad, hess, want_loss)


@click_doc
@fill_doc(example=objective_example(
    "gbrank.ips_listnet(propensity=None)  # labels: clicks / propensity",
    loss=4.9712, gradient=[-1.2016, 1.3164, -0.7063, 0.5915],
))
def ips_listnet(
    propensity: Any = "estimate",
    *,
    clip: float | None = None,
    warmup: int = 10,
    update_every: int = 5,
    propensity_model: str = "free",
    hess_floor: float = 1e-6,
    hess_scale: float = 1.0,
) -> IPSListNet:
    r"""Inverse-propensity weighted softmax (ListNet top-one) loss for learning from clicks.

    .. math::

        L(s) = -\sum_i \frac{c_i}{\theta_{p_i}} \log \frac{e^{s_i}}{\sum_j e^{s_j}}

    per query, with :math:`c_i` the clicks on row :math:`i` (the labels) and
    :math:`\theta_{p_i}` the propensity (examination probability) of its display position.
    In expectation over position-biased clicks it equals the loss on the true relevance.
    See :mod:`gbrank.objectives.clicks` for the derivation and
    :mod:`gbrank.objectives.propensity` for the estimator.

    Parameters
    ----------
    {click_params}
    hess_floor : float, default=1e-6
        Lower bound on every row's hessian.
    hess_scale : float, default=1.0
        Factor on every row's hessian.

    Returns
    -------
    IPSListNet

    Notes
    -----
    {click_notes}

    %(example)s
    """
    return IPSListNet(
        propensity, clip=clip, warmup=warmup, update_every=update_every, hess_floor=hess_floor, hess_scale=hess_scale,
        propensity_model=propensity_model
    )
