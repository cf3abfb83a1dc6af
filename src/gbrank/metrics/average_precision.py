"""Average precision at k and its mean over queries, MAP@k."""

from __future__ import annotations

from ._common import by_query, NoRelevant, binary_metric, check_binary, check_choice, shared_doc
from ._precision_kernel import AVERAGE_PRECISION, precision_kernel

__all__ = ["mean_average_precision"]

DENOMINATORS = {"min_rk": 0, "R": 1}


def _check_options(k, *, ties="input", no_relevant=1.0, denominator="min_rk", relevance_threshold=0.0):
    """Fail on a bad setting before any data is read."""
    by_r = check_choice(denominator, DENOMINATORS, "denominator") == 1
    return (*check_binary(k, ties, no_relevant, relevance_threshold), by_r)


@shared_doc("mean_average_precision", mean=0.625, per_query=[0.25, 1.0])
def mean_average_precision(y_true, y_pred, group=None, k: int | None = None, *, qid=None, ties: str = "input",
                           no_relevant: NoRelevant = 1.0, denominator: str = "min_rk",
                           relevance_threshold: float = 0.0, per_query: bool = False):
    r"""Mean average precision at ``k`` (MAP@k).

    A document is relevant when its label exceeds ``relevance_threshold``. For one query
    ranked by descending score, with :math:`\mathrm{rel}_r \in \{0, 1\}` at rank :math:`r`,

    .. math::

        \mathrm{AP@k} = \frac{1}{D} \sum_{r=1}^{\min(k, n)} \mathrm{rel}_r\, \mathrm{P@r},
        \qquad \mathrm{P@r} = \frac{1}{r} \sum_{i=1}^{r} \mathrm{rel}_i,

    where :math:`D = \min(R, k)` (``denominator="min_rk"``, LightGBM and XGBoost) or
    :math:`D = R` (``"R"``, trec_eval and ranx), :math:`R` being the number of relevant
    documents of the query. MAP@k is the mean of AP@k over queries.

    Parameters
    ----------
    %(binary_inputs)s
    no_relevant : float or "exclude", default=1.0
        Value of a query with :math:`R = 0`: ``1.0`` (LightGBM, XGBoost's ``map@k``), ``0.0``
        (trec_eval, XGBoost's ``map@k-``), or ``"exclude"`` (left out of the mean; NaN with
        ``per_query=True``; a mean over no query is NaN with a ``RuntimeWarning``).
    denominator : {"min_rk", "R"}, default="min_rk"
        See the formula.
    relevance_threshold : float, default=0.0
        Relevant means ``label > relevance_threshold``. LightGBM tests ``label > 0.5``, which
        is the same for integer labels.
    %(per_query_returns)s

    %(example)s
    """
    y_true, y_pred, group = by_query(y_true, y_pred, group, qid)
    options = _check_options(k, ties=ties, no_relevant=no_relevant, denominator=denominator,
                             relevance_threshold=relevance_threshold)
    return binary_metric(precision_kernel, y_true, y_pred, group, (*options, AVERAGE_PRECISION), per_query)
