r"""Learning to rank from position-biased clicks: the inverse-propensity weighted pairwise loss.

The loss
--------
A query's documents were shown in sessions; document :math:`i`, shown at position
:math:`p_i`, got :math:`c_i` clicks, and :math:`w_i = c_i / \theta_{p_i}` is its
inverse-propensity weighted click count. Every click prefers the clicked document to every
other shown document of its query (Joachims, Swaminathan and Schnabel, WSDM 2017, with
RankNet's logistic in place of the hinge):

.. math::

    L(s) = \sum_i w_i \sum_{j \ne i} \lambda_{ij}\, \phi(s_i - s_j), \qquad
    \phi(z) = \log_2\big(1 + e^{-\sigma z}\big),

over the shown documents, with pair weights :math:`\lambda_{ij}`:

* ``weighting="constant"``: :math:`\lambda_{ij} = 1` (RankNet): the sum over :math:`j` is a
  smooth upper bound of the clicked document's rank, so the loss bounds the
  inverse-propensity weighted average rank of the clicks (Joachims et al. 2017);
* ``weighting="dcg"``: :math:`\lambda_{ij} = D(r_i) = 1/\log_2(1 + r_i)` with :math:`r_i`
  the clicked document's current rank by score, held fixed within an iteration as in
  LambdaMART: LambdaLoss's NDCG-Loss1 (Wang et al., CIKM 2018) with the weighted clicks as
  gains, an upper bound of the inverse-propensity weighted DCG loss that puts the effort
  on the top of the ranking (Agarwal et al., SIGIR 2019).

The loss is linear in the weighted clicks, so under the position-based model
(:math:`E[c_i] = N \theta_{p_i} \gamma_i` over :math:`N` sessions) its expectation is the
full-information loss :math:`N \sum_i \gamma_i \sum_{j \ne i} \lambda_{ij} \phi(s_i - s_j)`,
the same loss with the true click probabilities :math:`\gamma_i` of every document as if
all were examined. A pair of two clicked documents enters twice, once in each direction,
each weighted by its own clicks: the relevance is learnt from the difference.

Gradient and hessian
--------------------
With :math:`z = \sigma(s_i - s_j)` and :math:`\rho = 1/(1 + e^{z})`, each term adds
:math:`-\sigma w_i \lambda_{ij} \rho / \ln 2` to :math:`g_i`, the opposite to :math:`g_j`, and
:math:`\sigma^2 w_i \lambda_{ij} \rho (1 - \rho) / \ln 2` to both hessians: the exact
diagonal (for ``"dcg"``, with the weights frozen). A query's gradients sum to zero. The
terms go through the pairwise kernel shared with RankNet and LambdaRank
(:mod:`gbrank.objectives._pairwise`, NDCG-Loss1's pair set: every ordered pair whose
preferred document has clicks), with the clicks as the per-row values and
:math:`1/\theta_{p_i}` as the preferred document's factor: :math:`O(n^2)` per query.

Positions, the propensities (given, estimated jointly with the model, clipped) and the
estimate exposed after training are shared with :func:`gbrank.ips_listnet`: see
:mod:`gbrank.objectives.propensity`. Rows never shown take no part in any pair.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._docstrings import fill_doc, objective_example
from .._validation import check_choice, check_float, check_scores
from ..gains import discount_values
from ._pairwise import PairSettings
from .propensity import ClickObjective, click_doc

__all__ = ["IPSRankNet", "ips_ranknet"]

WEIGHTINGS = ("constant", "dcg")


class IPSRankNet(ClickObjective):
    """Inverse-propensity weighted pairwise loss on clicks; build it with :func:`ips_ranknet`."""

    factory = "ips_ranknet"

    def __init__(self, propensity: Any, *, weighting: str, sigma: float, **settings: Any) -> None:
        # settings: those of every click objective (clip, warmup, update_every, hess_floor, hess_scale)
        super().__init__(propensity, **settings)
        self.weighting = check_choice("weighting", weighting, WEIGHTINGS)
        self.sigma = check_float("sigma", sigma, min=0.0, strict=True)
        # NDCG-Loss1's pair set: every ordered pair, weighted by the preferred row's value
        # (its clicks) times the discount at its rank (all ones for constant weights)
        self.pairs = PairSettings("ndcg_loss1", sigma=self.sigma)

    def _params(self) -> dict[str, Any]:
        params = super()._params()
        return {"propensity": params.pop("propensity"), "weighting": self.weighting, "sigma": self.sigma, **params}

    def _bind(self, state) -> None:
        rows = state["shown"]
        offsets = state["offsets"] if rows is None else state["shown_offsets"]
        clicks = state["clicks"] if rows is None else state["clicks"][rows]
        longest = int(np.diff(offsets).max(initial=1))
        table = np.ones(longest) if self.weighting == "constant" else discount_values(longest, "log2")
        state["pairs"] = self.pairs.prepare(clicks, offsets, discount=table)

    def _kernel(self, state, scores, at, weight, inverse, offsets, grad, hess, want_loss):
        pairs = state["pairs"]
        if want_loss:
            return pairs.loss(scores, high=inverse, at=at)
        pairs.run(scores, grad, hess, high=inverse, at=at)
        return None

    def fixed_weight_loss(self, y_true, y_pred, group, at, *, position=None) -> float:
        """The loss at ``y_pred`` with the ranks (``weighting="dcg"``) frozen at the scores
        ``at``: the function whose exact gradient and hessian ``grad_hess`` returns at
        ``y_pred == at``."""
        binding = self.bind(y_true, group, position=position)
        scores = check_scores(y_pred, binding.n_rows, binding.offsets)
        ref = check_scores(at, binding.n_rows, binding.offsets)
        n = scores.shape[0]
        return float(np.sum(self._run(binding.state, scores, np.zeros(n), np.zeros(n), True, at=ref)))


@click_doc
@fill_doc(example=objective_example(
    "gbrank.ips_ranknet(propensity=None)  # labels: clicks / propensity",
    loss=11.2548, gradient=[-2.7452, 2.9755, -2.4222, 2.1919],
))
def ips_ranknet(
    propensity: Any = "estimate",
    *,
    weighting: str = "constant",
    sigma: float = 1.0,
    clip: float | None = None,
    warmup: int = 10,
    update_every: int = 5,
    propensity_model: str = "free",
    hess_floor: float = 1e-6,
    hess_scale: float = 1.0,
) -> IPSRankNet:
    r"""Inverse-propensity weighted pairwise (RankNet) loss for learning from clicks.

    .. math::

        L(s) = \sum_i \frac{c_i}{\theta_{p_i}} \sum_{j \ne i} \lambda_{ij}
               \log_2\big(1 + e^{-\sigma (s_i - s_j)}\big)

    per query, over its shown rows, with :math:`c_i` the clicks on row :math:`i` (the labels),
    :math:`\theta_{p_i}` the propensity of its display position and :math:`\lambda_{ij}` 1
    (``"constant"``) or the DCG discount at the clicked row's current rank (``"dcg"``). In
    expectation over position-biased clicks it equals the loss on the true relevance. See
    :mod:`gbrank.objectives.clicks_pairwise` for the derivation and
    :mod:`gbrank.objectives.propensity` for the estimator.

    Parameters
    ----------
    {click_params}
    weighting : {"constant", "dcg"}, default="constant"
        Pair weights: 1 (RankNet, Joachims et al. 2017), or :math:`1/\log_2(1 + r_i)` at the
        clicked row's current rank, held fixed within an iteration (LambdaLoss's NDCG-Loss1).
    sigma : float, default=1.0
        Slope :math:`\sigma` of the logistic.
    hess_floor : float, default=1e-6
        Lower bound on every row's hessian (rows in no pair have none).
    hess_scale : float, default=1.0
        Factor on every row's hessian.

    Returns
    -------
    IPSRankNet

    Notes
    -----
    {click_notes} The cost is :math:`O(n^2)` per query, :math:`n` its shown rows.

    %(example)s
    """
    return IPSRankNet(
        propensity, weighting=weighting, sigma=sigma, clip=clip, warmup=warmup, update_every=update_every,
        hess_floor=hess_floor, hess_scale=hess_scale,
        propensity_model=propensity_model,
    )
