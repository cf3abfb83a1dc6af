r"""LambdaRank (LambdaMART) for any measure, and the LambdaLoss family (Wang et al., CIKM 2018).

Both are pairwise logistic losses whose pair weights depend on the current ranking, computed
by the kernel of :mod:`gbrank.objectives._pairwise`. For one query with scores :math:`s`,
current ranks :math:`r_i` (by score, ties in input row order, as LightGBM sorts),

.. math::

    L(s) = c \sum_{(i, j):\, v_i > v_j} w_{ij}\, \log\big(1 + e^{-\sigma (s_i - s_j)}\big).

The weights :math:`w_{ij}` are **held fixed within an iteration**: they are computed from the
ranking at the current scores, and the gradient and hessian returned are the exact gradient
and diagonal hessian of :math:`L` with the weights frozen,

.. math::

    \partial_{s_i} L = -\sigma c\, w_{ij} \rho_{ij} = -\partial_{s_j} L, \qquad
    \partial^2_{s_i} L = \partial^2_{s_j} L = \sigma^2 c\, w_{ij} \rho_{ij} (1 - \rho_{ij}),
    \qquad \rho_{ij} = \frac{1}{1 + e^{\sigma (s_i - s_j)}},

summed over the pairs of each document. :meth:`~gbrank.objectives._pairwise.PairwiseObjective.fixed_weight_loss`
evaluates :math:`L` at any scores with the weights frozen at others.

LambdaRank
----------
:func:`lambdarank` weighs a pair by the absolute change :math:`|\Delta M_{ij}|` of the measure
when :math:`i` and :math:`j` swap places in the current ranking, with :math:`c = 1`
(LightGBM's natural logarithm). Its defaults are LightGBM's ``lambdarank``:

* NDCG with gain :math:`2^l - 1` and discount :math:`1/\log_2(1 + r)`:
  :math:`|\Delta M_{ij}| = |G_i - G_j|\,|D(r_i) - D(r_j)| / Z`, with :math:`Z` the ideal DCG
  at the truncation level (LightGBM's ``inverse_max_dcgs_``; the discount itself is not cut);
* truncation 30: only the pairs with a member in the first 30 positions;
* ``norm=True`` (``lambdarank_norm``): :math:`|\Delta M_{ij}|` divided by
  :math:`0.01 + |s_i - s_j|` unless all scores of the query are equal, and the query's
  gradients and hessians multiplied by :math:`\log_2(1 + S)/S`, :math:`S` the sum over pairs
  of :math:`2 \sigma \rho_{ij} w_{ij}`;
* sigmoid :math:`\sigma = 1`.

LightGBM evaluates :math:`\rho` from a table of :math:`2^{20}` values over
:math:`[-25/\sigma, 25/\sigma]`, read at the lower edge of each bin: an error of at most
:math:`\sigma \cdot 50 / 2^{20} / 4 \approx 1.2 \cdot 10^{-5}` in :math:`\rho`, and none at the
first iteration, where every score difference is 0 (a bin edge). gbrank evaluates the exact
logistic: the difference is far below the agreement the tests ask for (first tree to
:math:`10^{-4}`, NDCG@10 after 100 rounds to 0.005), and the exact value keeps the gradient
the derivative of the loss.

Beyond LightGBM: any gain (labels of 31 and above with ``gain="linear"`` or a gain array),
any discount of :mod:`gbrank.gains`, a cut-off ``k``, queries of any length (LightGBM stops at
10,000 documents), and the measures

* MAP: :math:`|\Delta \mathrm{AP}|`, relevant meaning ``label > relevance_threshold``, with
  the denominator :math:`\min(R, k)` (LightGBM's MAP);
* MRR: :math:`|\Delta \mathrm{RR}|`;
* ERR: :math:`|\Delta \mathrm{ERR}|` with stop probabilities
  :math:`(2^l - 1) / 2^{l_{\max}}`,

each exactly the change of :func:`gbrank.metrics.mean_average_precision`,
:func:`~gbrank.metrics.mean_reciprocal_rank` or :func:`~gbrank.metrics.err` of the query when
the two documents swap, computed in :math:`O(1)` per pair.

LambdaLoss
----------
:func:`lambdaloss` gives the losses of the LambdaLoss framework, with the paper's
:math:`c = 1/\ln 2` (base-2 logarithm), gains :math:`G`, discount :math:`D` (:math:`1/\log_2(1 + r)`
by default) and :math:`Z` the ideal DCG:

* ``"lambdarank"``: :math:`w_{ij} = |G_i - G_j|\,|D(r_i) - D(r_j)| / Z`;
* ``"ndcg_loss2"``: :math:`w_{ij} = |G_i - G_j|\,\delta_{ij} / Z`,
  :math:`\delta_{ij} = |D(|r_i - r_j|) - D(|r_i - r_j| + 1)|`;
* ``"ndcg_loss2pp"`` (NDCG-Loss2++): :math:`w_{ij} = |G_i - G_j|\,(|D(r_i) - D(r_j)| + \mu\,\delta_{ij}) / Z`;
* ``"ndcg_loss1"``: every ordered pair :math:`(i, j)`, :math:`i \ne j`, whatever the labels,
  weighted :math:`G_i D(r_i) / Z`; a query whose labels are all equal (constant NDCG) is
  left out.

Cost
----
One sort per query and call, then :math:`O(n T)` pair terms with truncation :math:`T`,
:math:`O(n^2)` without; queries in parallel.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._docstrings import fill_doc, objective_example
from .._validation import check_choice, check_float, check_int, check_labels
from ..engines.statistics import label_max
from ..gains import EXP2_MAX_LABEL, Discount, Gain, discount_values, gain_values
from ..groups import sizes_to_qid, varies_per_query
from ._label_order import ideal_dcg, label_order
from ._pairwise import PairSettings, PairwiseObjective

__all__ = ["LambdaLoss", "LambdaObjective", "LambdaRank", "lambdaloss", "lambdarank"]

MEASURES = ("ndcg", "map", "mrr", "err")
LAMBDALOSS_WEIGHTINGS = {
    "lambdarank": "ndcg",
    "ndcg_loss1": "ndcg_loss1",
    "ndcg_loss2": "ndcg_loss2",
    "ndcg_loss2pp": "ndcg_loss2pp",
    "ndcg_loss2++": "ndcg_loss2pp",
}


class LambdaObjective(PairwiseObjective):
    """Shared settings and NDCG inputs of :class:`LambdaRank` and :class:`LambdaLoss`."""

    def _check_common(self, gain, discount, truncation, sigma):
        gain_values(np.zeros(1), gain)
        discount_values(1, discount)
        self.gain = gain
        self.discount = discount
        self.truncation = check_int("truncation", truncation, min=1, optional=True)
        self.sigma = check_float("sigma", sigma, min=0.0, strict=True)

    def _ndcg_inputs(self, labels, offsets, k):
        gains = gain_values(labels, self.gain, offsets=offsets)
        longest = int(np.diff(offsets).max(initial=1))
        table = discount_values(longest, self.discount)
        depth = k if k is not None else self.truncation
        ideal = ideal_dcg(label_order(gains, offsets), table, offsets.size - 1, depth)
        if k is not None:
            table[k:] = 0.0
        with np.errstate(divide="ignore"):
            inv = np.where(ideal > 0, 1.0 / ideal, 0.0)
        return gains, table, inv


class LambdaRank(LambdaObjective):
    """LambdaRank objective; build it with :func:`lambdarank`."""

    factory = "lambdarank"

    def __init__(self, measure="ndcg", *, k=None, gain="exp2", discount="log2", truncation=30, sigma=1.0,
                 norm=True, relevance_threshold=0.0, max_label=None, hess_floor=0.0, hess_scale=1.0):
        super().__init__(hess_floor=hess_floor, hess_scale=hess_scale)
        self.measure = check_choice("measure", measure, MEASURES)
        self._check_common(gain, discount, truncation, sigma)
        self.k = check_int("k", k, min=1, optional=True)
        self.norm = bool(norm)
        self.relevance_threshold = check_float("relevance_threshold", relevance_threshold, min=0.0)
        self.max_label = check_int("max_label", max_label, min=0, max=EXP2_MAX_LABEL, optional=True)
        self.pairs = PairSettings(measure, k=self.k, sigma=self.sigma, natural_log=True, truncation=self.truncation,
                                  norm=self.norm)

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"measure": self.measure, "k": self.k}
        if self.measure == "ndcg":
            params.update(gain=self.gain, discount=self.discount)
        elif self.measure in ("map", "mrr"):
            params.update(relevance_threshold=self.relevance_threshold)
        else:
            params.update(max_label=self.max_label)
        params.update(truncation=self.truncation, sigma=self.sigma, norm=self.norm)
        return {**params, **super()._params()}

    def _label_check(self, y_true, offsets):
        if self.measure == "ndcg":
            gain_values(y_true, self.gain, offsets=offsets)
        elif self.measure == "err":
            return check_labels(
                y_true, offsets=offsets, integer=True,
                max_label=EXP2_MAX_LABEL if self.max_label is None else self.max_label,
                why=" for ERR, whose stop probability is (2**l - 1) / 2**max_label",
            )
        return super()._label_check(y_true, offsets)

    def _inputs(self, labels, offsets, statistics):
        if self.measure == "ndcg":
            gains, table, inv = self._ndcg_inputs(labels, offsets, self.k)
            return gains, table, inv, None
        if self.measure == "err":
            # the whole training data's maximum, also where these rows are a part of it
            top = int(label_max(labels, statistics)) if self.max_label is None else self.max_label
            return (np.exp2(labels) - 1.0) / 2.0**top, None, None, None
        relevant = (labels > self.relevance_threshold).astype(np.float64)
        inv = None
        if self.measure == "map":
            count = np.bincount(sizes_to_qid(np.diff(offsets)), weights=relevant, minlength=offsets.size - 1)
            denominator = count if self.k is None else np.minimum(count, self.k)
            with np.errstate(divide="ignore"):
                inv = np.where(denominator > 0, 1.0 / denominator, 0.0)
        return relevant, None, inv, None


class LambdaLoss(LambdaObjective):
    """LambdaLoss objective; build it with :func:`lambdaloss`."""

    factory = "lambdaloss"

    def __init__(self, weighting="ndcg_loss2pp", *, mu=10.0, gain="exp2", discount="log2", truncation=None,
                 sigma=1.0, norm=False, hess_floor=1e-6, hess_scale=1.0):
        super().__init__(hess_floor=hess_floor, hess_scale=hess_scale)
        check_choice("weighting", weighting, tuple(LAMBDALOSS_WEIGHTINGS))
        self._check_common(gain, discount, truncation, sigma)
        self.weighting = "ndcg_loss2pp" if weighting == "ndcg_loss2++" else weighting
        self.mu = check_float("mu", mu, min=0.0)
        self.norm = bool(norm)
        self.pairs = PairSettings(LAMBDALOSS_WEIGHTINGS[weighting], mu=self.mu, sigma=self.sigma,
                                  truncation=self.truncation, norm=self.norm)

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"weighting": self.weighting}
        if self.weighting == "ndcg_loss2pp":
            params["mu"] = self.mu
        params.update(gain=self.gain, discount=self.discount, truncation=self.truncation, sigma=self.sigma,
                      norm=self.norm)
        return {**params, **super()._params()}

    def _label_check(self, y_true, offsets):
        gain_values(y_true, self.gain, offsets=offsets)
        return super()._label_check(y_true, offsets)

    def _inputs(self, labels, offsets, statistics):
        gains, table, inv = self._ndcg_inputs(labels, offsets, None)
        if self.weighting == "ndcg_loss1":
            # NDCG-Loss1 pairs documents whatever their labels; a query of equal labels has a
            # constant NDCG, so it is left out, as every other gbrank objective leaves it out
            inv = np.where(varies_per_query(labels, offsets), inv, 0.0)
        return gains, table, inv, None


def _gain_doc(ideal_depth: str) -> str:
    """The gain, discount and truncation parameters; ``ideal_depth`` says where the ideal DCG
    is cut (LambdaRank also has a cut-off ``k``, LambdaLoss has none)."""
    return f"""
        gain : {{"exp2", "linear"}} or array, default="exp2"
            The gain :math:`G`, as in :mod:`gbrank.gains`: ``"exp2"`` (:math:`2^l - 1`, LightGBM's
            ``label_gain``) needs integer labels <= 31; ``"linear"`` takes any label >= 0.
        discount : {{"log2", "zipf"}}, float, array or callable, default="log2"
            The discount :math:`D`, as in :mod:`gbrank.gains`.
        truncation : int or None
            Keep only the pairs with a member among the first ``truncation`` positions of the
            current ranking (LightGBM's ``lambdarank_truncation_level``); None keeps every pair.
            The ideal DCG :math:`Z` is taken at {ideal_depth}.
    """


_SIGMA_DOC = """
    sigma : float, default=1.0
        Slope :math:`\\sigma` of the logistic (LightGBM's ``sigmoid``).
    hess_scale : float, default=1.0
        Factor on every row's hessian.
"""


@fill_doc(gain=_gain_doc("this depth (at ``k`` when given)"), sigma=_SIGMA_DOC, example=objective_example(
    "gbrank.lambdarank()", loss=0.9382, gradient=[-0.5077, 0.4219, -0.0678, 0.1537],
))
def lambdarank(
    measure: str = "ndcg",
    *,
    k: int | None = None,
    gain: Gain = "exp2",
    discount: Discount = "log2",
    truncation: int | None = 30,
    sigma: float = 1.0,
    norm: bool = True,
    relevance_threshold: float = 0.0,
    max_label: int | None = None,
    hess_floor: float = 0.0,
    hess_scale: float = 1.0,
) -> LambdaRank:
    r"""LambdaRank (LambdaMART) for NDCG, MAP, MRR or ERR; LightGBM's ``lambdarank`` by default.

    .. math::

        L(s) = \sum_{(i, j):\, v_i > v_j} |\Delta M_{ij}|\, \log\big(1 + e^{-\sigma (s_i - s_j)}\big),

    :math:`|\Delta M_{ij}|` the change of the measure when :math:`i` and :math:`j` swap places
    in the current ranking, held fixed within an iteration (see :mod:`gbrank.objectives.lambdarank`).
    With the defaults it trains the same model as LightGBM's built-in ``lambdarank`` with its
    defaults.

    Parameters
    ----------
    measure : {"ndcg", "map", "mrr", "err"}, default="ndcg"
        The measure whose swap changes weigh the pairs.
    k : int or None, default=None
        Cut-off of the measure (NDCG@k: discount 0 past rank ``k``, ideal DCG at ``k``;
        MAP@k, MRR@k, ERR@k). None: the whole list (NDCG's ideal DCG at ``truncation``, as
        LightGBM).
    %(gain)s
    %(sigma)s
    norm : bool, default=True
        LightGBM's ``lambdarank_norm``: weights divided by :math:`0.01 + |s_i - s_j|` and each
        query rescaled by :math:`\log_2(1 + S)/S`.
    relevance_threshold : float, default=0.0
        MAP and MRR: relevant means ``label > relevance_threshold``.
    max_label : int or None, default=None
        ERR: :math:`l_{\max}` of the stop probabilities :math:`(2^l - 1)/2^{l_{\max}}`; None
        takes the largest label of the training data.
    hess_floor : float, default=0.0
        Lower bound on every row's hessian. 0, as LightGBM, so that the built-in's model is
        reproduced; rows in no pair then have a zero hessian.

    Notes
    -----
    Tied scores are ranked in input row order (LightGBM's stable sort), which decides the
    pairs and weights at the first iteration, where all scores are equal. Sample weights
    multiply each row's gradient and hessian.

    %(example)s
    """
    return LambdaRank(
        measure, k=k, gain=gain, discount=discount, truncation=truncation, sigma=sigma, norm=norm,
        relevance_threshold=relevance_threshold, max_label=max_label, hess_floor=hess_floor, hess_scale=hess_scale,
    )


@fill_doc(gain=_gain_doc("this depth"), sigma=_SIGMA_DOC, example=objective_example(
    "gbrank.lambdaloss()", loss=10.1166, gradient=[-5.2735, 3.4224, -1.0858, 2.9369],
))
def lambdaloss(
    weighting: str = "ndcg_loss2pp",
    *,
    mu: float = 10.0,
    gain: Gain = "exp2",
    discount: Discount = "log2",
    truncation: int | None = None,
    sigma: float = 1.0,
    norm: bool = False,
    hess_floor: float = 1e-6,
    hess_scale: float = 1.0,
) -> LambdaLoss:
    r"""The LambdaLoss losses (Wang, Li, Golbandi, Bendersky and Najork, CIKM 2018).

    .. math::

        L(s) = \sum_{(i, j):\, G_i > G_j} w_{ij}\, \log_2\big(1 + e^{-\sigma (s_i - s_j)}\big),

    with the weights of the ``weighting`` (see :mod:`gbrank.objectives.lambdarank`) computed
    from the current ranks and held fixed within an iteration.

    Parameters
    ----------
    weighting : {"ndcg_loss2pp", "ndcg_loss2", "ndcg_loss1", "lambdarank"}, default="ndcg_loss2pp"
        NDCG-Loss2++ (also spelled ``"ndcg_loss2++"``), NDCG-Loss2, NDCG-Loss1, or
        LambdaRank's weights.
    mu : float, default=10.0
        NDCG-Loss2++'s weight :math:`\mu` of the NDCG-Loss2 term (allRank's default).
    %(gain)s
    %(sigma)s
    norm : bool, default=False
        Apply LightGBM's ``lambdarank_norm`` (see :func:`lambdarank`); the paper has none.
    hess_floor : float, default=1e-6
        Lower bound on every row's hessian (rows in no pair have none).

    Notes
    -----
    The loss is the paper's sum over pairs, normalised by the ideal DCG of each query. Tied
    scores are ranked in input row order. Sample weights multiply each row's gradient and
    hessian.

    %(example)s
    """
    return LambdaLoss(
        weighting, mu=mu, gain=gain, discount=discount, truncation=truncation, sigma=sigma, norm=norm,
        hess_floor=hess_floor, hess_scale=hess_scale,
    )
