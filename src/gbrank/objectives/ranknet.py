r"""RankNet and W-RankNet (Chen, Liu, Lan, Ma and Li, NIPS 2009).

The loss
--------
For one query with scores :math:`s` and labels :math:`l`, the pairwise loss of section 2.1
with RankNet's logistic :math:`\phi`,

.. math::

    L(s) = \sum_{(i, j):\, l_i > l_j} w_{ij}\, \phi(s_i - s_j), \qquad
    \phi(z) = \log_2\!\big(1 + e^{-\sigma z}\big) = \frac{1}{\ln 2} \log\!\big(1 + e^{-\sigma z}\big).

The base-2 logarithm is the paper's normalisation :math:`\phi(0) = 1` (needed for its
bounds, Theorem 2): it is the natural-log logistic loss times the constant
:math:`1/\ln 2 \approx 1.4427`. :math:`\sigma` is the slope of LightGBM's ``sigmoid``.

* RankNet: :math:`w_{ij} = 1`.
* W-RankNet (section 4): each pair is weighted by its higher-labelled document,

  .. math::

      w_{ij} = G(l_i)\, D\Big(1 + \sum_{k > l_i} n_k\Big),

  with :math:`n_k` the number of the query's documents of label :math:`k`, so
  :math:`1 + \sum_{k > l_i} n_k` is the best position a document of label :math:`l_i` can
  hold. :math:`G(z) = 2^z - 1` and :math:`D(r) = 1/\log_2(1 + r)` by default, with the
  paper's cut-off :math:`D(r) = 0` for :math:`r > C` as an option.

Gradient and hessian
--------------------
With :math:`z = \sigma (s_i - s_j)` and the logistic :math:`\rho(z) = 1/(1 + e^{z})`
(the model's probability of the wrong order), each pair adds

.. math::

    \partial_{s_i} = -\frac{\sigma}{\ln 2} w_{ij}\, \rho(z) = -\partial_{s_j}, \qquad
    \partial^2_{s_i} = \partial^2_{s_j} = \frac{\sigma^2}{\ln 2} w_{ij}\, \rho(z)\big(1 - \rho(z)\big).

The hessian returned is the exact diagonal (the loss is convex). The gradients of a query
sum to zero. :math:`\rho` and the loss are evaluated from :math:`e^{-|z|}` only, so scores of
any magnitude neither overflow nor produce NaN.

Truncation
----------
``truncation=T`` keeps only the pairs in which at least one of the two documents is in the
top :math:`T` of the current ranking by score, as LightGBM's ``lambdarank_truncation_level``
does (its loop runs the better-ranked document of a pair over the top :math:`T` positions):
pairs far below the top, which NDCG@T ignores, cost nothing. "In the top :math:`T`" means
fewer than :math:`T` documents of the query score strictly higher, so documents tied with
the :math:`T`-th score are all in (the rule does not depend on row order, and all-equal
scores, where boosting starts, keep every pair). The pair set is re-chosen from the scores at
every call; the work is then :math:`O(T n)` per query instead of :math:`O(n^2)`. The
truncated loss is the sum over the chosen pairs; it is piecewise smooth in the scores, and the gradient and hessian are those of
the current piece.

Cost
----
One :math:`O(n \log n)` sort of each query by score, then :math:`O(n^2)` pair terms per
query without truncation, :math:`O(T n)` with it, no :math:`n \times n` memory; queries are
processed in parallel by the pairwise kernel shared with LambdaRank and LambdaLoss
(:mod:`gbrank.objectives._pairwise`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._deprecation import legacy_arguments
from .._docstrings import fill_doc, objective_example
from .._validation import check_float, check_int
from ..gains import Discount, Gain, discount_values, gain_values
from ._label_order import label_order, ndcg_weights
from ._pairwise import PairSettings, PairwiseObjective

__all__ = ["RankNet", "ranknet", "wranknet"]


class RankNet(PairwiseObjective):
    """(Weighted) RankNet objective; build it with :func:`ranknet` or :func:`wranknet`.

    The pairs go through the shared kernel of :mod:`gbrank.objectives._pairwise` with
    constant pair weights; W-RankNet's weights, which depend on the labels only, are the
    kernel's per-row factors on the higher-labelled document.
    """

    def __init__(
        self, factory: str, *, sigma: float, truncation: int | None, gain: Gain | None = None,
        discount: Discount = "log2", k: int | None = None, hess_floor: float, hess_scale: float,
    ) -> None:
        super().__init__(hess_floor=hess_floor, hess_scale=hess_scale)
        self.sigma = check_float("sigma", sigma, min=0.0, strict=True)
        self.truncation = check_int("truncation", truncation, min=1, optional=True)
        self.k = check_int("k", k, min=1, optional=True)
        if gain is not None:
            gain_values(np.zeros(1), gain)
            discount_values(1, discount)
        self.factory = factory
        self.gain = gain
        self.discount = discount
        self.pairs = PairSettings("constant", sigma=self.sigma, truncation=self.truncation, top_ties=True)

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if self.gain is not None:
            params.update(gain=self.gain, discount=self.discount, k=self.k)
        params.update(sigma=self.sigma, truncation=self.truncation)
        return {**params, **super()._params()}

    def _label_check(self, y_true, offsets):
        if self.gain is not None:
            gain_values(y_true, self.gain, offsets=offsets)
        return super()._label_check(y_true, offsets)

    def _inputs(self, labels, offsets, statistics):
        high = None
        if self.gain is not None:
            blocks = label_order(labels, offsets)
            high = np.empty(labels.shape[0])
            high[blocks.order] = ndcg_weights(blocks.sorted_labels, blocks.best_rank, self.gain, self.discount, self.k)
        return labels, None, None, high


_COMMON_DOC = """
    sigma : float, default=1.0
        Slope :math:`\\sigma` of the logistic, :math:`\\phi(z) = \\log_2(1 + e^{-\\sigma z})`.
    truncation : int, optional
        Keep only the pairs with at least one document in the current top ``truncation`` by
        score (LightGBM's ``lambdarank_truncation_level``; see the module notes). None keeps
        every pair, as the paper does.
    hess_floor : float, default=1e-6
        Lower bound on every row's hessian (rows in no pair have none).
    hess_scale : float, default=1.0
        Factor on every row's hessian.

    Notes
    -----
    The hessian is the exact diagonal. Queries whose labels are all equal, and
    single-document queries, have no pair: zero loss and zero gradient. The loss is the
    paper's sum over pairs, not normalised per query, so long lists weigh more. Sample
    weights multiply each row's gradient and hessian.
"""


@legacy_arguments(positional=("sigma",))
@fill_doc(common=_COMMON_DOC, example=objective_example(
    "gbrank.ranknet()", loss=6.7032, gradient=[-1.9, 2.0775, -1.7555, 1.5779],
))
def ranknet(
    *, sigma: float = 1.0, truncation: int | None = None, hess_floor: float = 1e-6, hess_scale: float = 1.0
) -> RankNet:
    r"""RankNet (Burges et al. 2005) in the form of Chen et al. (2009), section 2.1.

    .. math::

        L(s) = \sum_{(i, j):\, l_i > l_j} \log_2\!\big(1 + e^{-\sigma (s_i - s_j)}\big)

    Parameters
    ----------
    %(common)s

    %(example)s
    """
    return RankNet("ranknet", **locals())


@legacy_arguments(positional=("gain", "discount"), renamed={"cutoff": "k"})
@fill_doc(common=_COMMON_DOC, example=objective_example(
    "gbrank.wranknet()", loss=10.5239, gradient=[-5.6999, 3.4382, -0.1884, 2.4501],
))
def wranknet(
    *, gain: Gain = "exp2", discount: Discount = "log2", k: int | None = None, sigma: float = 1.0,
    truncation: int | None = None, hess_floor: float = 1e-6, hess_scale: float = 1.0,
) -> RankNet:
    r"""W-RankNet (Chen et al., 2009, section 4): RankNet with NDCG-derived pair weights.

    .. math::

        L(s) = \sum_{(i, j):\, l_i > l_j} G(l_i)\, D\Big(1 + \sum_{k > l_i} n_k\Big)
               \log_2\!\big(1 + e^{-\sigma (s_i - s_j)}\big)

    where :math:`n_k` counts the query's documents of label :math:`k`. Weighted so, the loss
    is a tighter upper bound of :math:`1 - \mathrm{NDCG}` (up to the normaliser) than RankNet's.

    Parameters
    ----------
    gain : {"exp2", "linear"} or array, default="exp2"
        The gain :math:`G`, as in :mod:`gbrank.gains` (``"exp2"`` needs integer labels <= 31).
    discount : {"log2", "zipf"}, float, array or callable, default="log2"
        The discount :math:`D`, as in :mod:`gbrank.gains`.
    k : int, optional
        The paper's cut-off :math:`C` (NDCG@k): :math:`D(r) = 0` for :math:`r > k`, so pairs
        whose higher document cannot reach the top ``k`` carry no weight. None keeps all.
        (Called ``cutoff`` before gbrank 0.2.)
    %(common)s

    %(example)s
    """
    if gain is None:
        raise ValueError("gain must be 'exp2', 'linear' or an array indexed by label, got None")
    return RankNet("wranknet", **locals())
