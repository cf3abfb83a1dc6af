"""Per-query test figures of a benchmark run, under named metric conventions.

Every figure comes from :mod:`gbrank.metrics` with ties in input row order (as LightGBM,
XGBoost and LETOR's evaluation script order them). Two sets of conventions:

``lightgbm`` (default)
    gbrank's defaults, equal to LightGBM's and XGBoost's built-in metrics: discount
    ``1/log2(1 + r)``, a query without relevant documents scores 1; MAP@k divides by
    ``min(R, k)``.
``letor``
    LETOR 3.0/4.0's evaluation script (``Eval-Score``), which the papers' OHSUMED tables use:
    discount 1 at ranks 1 and 2 and ``1/log2(r)`` from rank 3; a query without relevant
    documents scores 0 in every measure; AP divides by ``R``.

Relevant means label > 0 for MAP and precision in both. The NDCG gain is chosen apart from
the conventions (``gain=``, :data:`GAINS`): ``2**l - 1`` as both engines and LETOR's script use
it, for integer labels 0..31, or the label itself, for any labels >= 0; ``auto`` follows
:class:`gbrank.Ranker`'s label policy (:func:`gbrank.gains.resolve_gain`) on the whole data.

Calibration (``logloss``, ``ece``)
    For a method whose scores are logits of probabilities of relevance (the ``calibrated``
    family: RCR, the weighted logistic + softmax, and ``rcr(alpha=1.0)``, a pointwise logistic
    regression), the test part's mean log loss and expected calibration error
    (:mod:`gbrank.metrics.calibration`, 10 equal-width bins), each a mean over documents,
    lower is better. The targets are the labels divided by the method's ``max_label``, or by
    default by the data set's largest label, or 1 where none exceeds 1 (0/1 labels and
    probabilities as they are), as the objective reads them. Other methods' scores are not
    probabilities: a sigmoid of a ranking score is an arbitrary number, so they get no value
    (blank in the CSV files, — in the report), never a figure that would look comparable.

Several labels (``ndcg@10:<column>``)
    On a table with several label columns, every method's test NDCG@10 against each column
    after the first (the first is ``ndcg@10``), each with its own gain under ``auto`` (the
    label policy on that column), under these conventions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..gains import resolve_gain
from ..metrics import mean_average_precision, ndcg, precision_at_k
from ..metrics.calibration import expected_calibration_error, log_loss

__all__ = [
    "CALIBRATION_FIGURES",
    "CONVENTIONS",
    "GAINS",
    "Conventions",
    "gain_description",
    "MAP_CUTOFF",
    "NDCG_CUTOFFS",
    "PRECISION_CUTOFFS",
    "calibration_metrics",
    "label_figure",
    "label_gains",
    "label_metrics",
    "letor_discount",
    "ndcg_at",
    "per_query_metrics",
]

NDCG_CUTOFFS = tuple(range(1, 11))
#: The harness's NDCG gains (``--gain``): ``auto`` is resolved per dataset.
GAINS = ("auto", "exp2", "linear")
_GAIN_TEXT = {"exp2": "2^l-1", "linear": "l (the label)"}
PRECISION_CUTOFFS = (1, 3, 5, 10)
MAP_CUTOFF = 10
#: The calibration figures of a method whose scores are probabilities (module notes).
CALIBRATION_FIGURES = ("logloss", "ece")
#: Cut-off of the NDCG reported per label column.
LABEL_CUTOFF = 10


def letor_discount(r: np.ndarray) -> np.ndarray:
    """LETOR's discount: 1 at ranks 1 and 2, ``1/log2(r)`` after (``Eval-Score-3.0.pl``)."""
    return 1.0 / np.log2(np.maximum(r, 2))


@dataclass(frozen=True)
class Conventions:
    """Keyword arguments passed to each gbrank metric."""

    name: str
    description: str
    ndcg: dict = field(default_factory=dict)
    map: dict = field(default_factory=dict)
    precision: dict = field(default_factory=dict)


CONVENTIONS = {
    "lightgbm": Conventions(
        name="lightgbm",
        description=(
            "LightGBM/XGBoost conventions: NDCG discount 1/log2(1+r), ties in input "
            "order, a query without relevant documents scores 1; MAP@10 divides by min(R, 10); "
            "relevant means label > 0"
        ),
    ),
    "letor": Conventions(
        name="letor",
        description=(
            "LETOR evaluation-script conventions: NDCG discount 1 at ranks 1-2 and "
            "1/log2(r) after, ties in input order, a query without relevant documents scores 0; "
            "MAP@10 divides by R; P@k divides by k; relevant means label > 0"
        ),
        ndcg={"discount": letor_discount, "no_relevant": 0.0},
        map={"denominator": "R", "no_relevant": 0.0},
        precision={"no_relevant": 0.0},
    ),
}


def gain_description(gain: str) -> str:
    """``2^l-1`` or ``l (the label)`` for a resolved gain."""
    return _GAIN_TEXT[gain]


def per_query_metrics(y, scores, group, conventions: Conventions, gain: str = "exp2") -> dict[str, np.ndarray]:
    """``{"ndcg@1": ..., ..., "ndcg@10": ..., "map@10": ..., "p@1": ..., ...}``, one value
    per query; NDCG with ``gain`` (``"exp2"`` or ``"linear"``)."""
    out = {}
    for k in NDCG_CUTOFFS:
        out[f"ndcg@{k}"] = ndcg(y, scores, group, k, per_query=True, gain=gain, **conventions.ndcg)
    out[f"map@{MAP_CUTOFF}"] = mean_average_precision(y, scores, group, MAP_CUTOFF, per_query=True, **conventions.map)
    for k in PRECISION_CUTOFFS:
        out[f"p@{k}"] = precision_at_k(y, scores, group, k, per_query=True, **conventions.precision)
    return out


def ndcg_at(k: int, conventions: Conventions, gain: str = "exp2"):
    """``f(y, scores, group) -> mean NDCG@k`` under the conventions with ``gain`` (the
    validation metric)."""

    def metric(y, scores, group) -> float:
        return ndcg(y, scores, group, k, gain=gain, **conventions.ndcg)

    return metric


def calibration_metrics(y, scores, max_label: float) -> dict[str, float]:
    """``{"logloss": ..., "ece": ...}`` of the test scores read as logits, with the targets
    ``y / max_label`` (module notes)."""
    return {"logloss": log_loss(y, scores, max_label=max_label),
            "ece": expected_calibration_error(y, scores, max_label=max_label)}


def label_figure(column: str) -> str:
    """The name of the NDCG@10 figure of the label column ``column``: ``ndcg@10:<column>``."""
    return f"ndcg@{LABEL_CUTOFF}:{column}"


def label_gains(requested: str, names, table: np.ndarray) -> dict[str, str]:
    """The NDCG gain of each label column after the first: ``requested``, or under ``auto``
    the label policy on that column's values."""
    return {name: resolve_gain(requested, table[:, j]) for j, name in enumerate(names) if j > 0}


def label_metrics(labels: np.ndarray, names, scores, group, conventions: Conventions,
                  gains: dict[str, str]) -> dict[str, float]:
    """Mean NDCG@10 of ``scores`` against each label column after the first (``labels`` of
    shape ``(n_rows, n_labels)``), keyed by :func:`label_figure`."""
    return {label_figure(name): float(ndcg(np.ascontiguousarray(labels[:, j]), scores, group, LABEL_CUTOFF,
                                           gain=gains[name], **conventions.ndcg))
            for j, name in enumerate(names) if j > 0}
