"""Precision at k, averaged over queries."""

from __future__ import annotations

from ._common import by_query, NoRelevant, binary_metric, check_binary, check_choice, shared_doc
from ._precision_kernel import PRECISION, precision_kernel

__all__ = ["precision_at_k"]

DIVIDE_BY = {"k": 0, "min_kn": 1}


def _check_options(k, *, ties="input", no_relevant=1.0, relevance_threshold=0.0, divide_by="k"):
    """Fail on a bad setting before any data is read."""
    shrink = check_choice(divide_by, DIVIDE_BY, "divide_by") == 1
    return (*check_binary(k, ties, no_relevant, relevance_threshold), shrink)


@shared_doc("precision_at_k", mean=0.3333, per_query=[0.3333, 0.3333])
def precision_at_k(y_true, y_pred, group=None, k: int | None = None, *, qid=None, ties: str = "input", no_relevant: NoRelevant = 1.0,
                   relevance_threshold: float = 0.0, divide_by: str = "k", per_query: bool = False):
    r"""Precision at ``k``: the fraction of relevant documents among the top ``k``.

    .. math::

        \mathrm{P@k} = \frac{1}{K} \sum_{r=1}^{\min(k, n)} \mathrm{rel}_r,

    with :math:`\mathrm{rel}_r = 1` when the label at rank :math:`r` exceeds
    ``relevance_threshold``, and :math:`K = k` (``divide_by="k"``, trec_eval and ranx: a short
    list counts its missing ranks as non-relevant) or :math:`K = \min(k, n)`
    (``divide_by="min_kn"``, XGBoost's ``pre@k``). ``k=None`` gives :math:`K = n`. With
    ``ties="average"``, a tied block of :math:`m` documents, :math:`c` of them relevant, that
    ``k`` cuts contributes :math:`c / m` per rank above the cut.

    Parameters
    ----------
    %(binary_inputs)s
    no_relevant : float or "exclude", default=1.0
        Value of a query without relevant documents: ``1.0`` (LightGBM's convention for its
        ranking metrics), ``0.0`` (trec_eval, XGBoost), or ``"exclude"`` (left out of the
        mean; NaN with ``per_query=True``; a mean over no query is NaN with a
        ``RuntimeWarning``).
    relevance_threshold : float, default=0.0
        Relevant means ``label > relevance_threshold``.
    divide_by : {"k", "min_kn"}, default="k"
        See the formula.
    %(per_query_returns)s

    %(example)s
    """
    y_true, y_pred, group = by_query(y_true, y_pred, group, qid)
    options = _check_options(k, ties=ties, no_relevant=no_relevant, relevance_threshold=relevance_threshold,
                             divide_by=divide_by)
    return binary_metric(precision_kernel, y_true, y_pred, group, (*options, PRECISION), per_query)
