"""What the harness checks before anything trains: the labels each method can take, and the
work a method would do per iteration.

Labels
------
A method *fits* a data set's labels unless one of these holds, each a known refusal with its
reason and fix:

- LightGBM's built-ins (``lgb:lambdarank``, ``lgb:rank_xendcg``) with the linear gain index a
  gain table (``label_gain``) by the label: they need integer labels, no larger than
  :data:`LABEL_TABLE_MAX` (the table the harness builds has one entry per label value);
- the click objectives (family ``clicks``) read the labels as clicks: 0 or 1. A click
  objective named on its own runs on any labels, as its factory allows; the groups leave it
  out of graded data;
- a multi-label method (``multi_label``) trains on every label column of a table: it needs
  a data set with several (``label``, ``label_click``, ...), its weights and floors must
  match their number (checked by building the objective on the columns' count), and the
  objective must take every column's labels (checked by binding it to them: an exponential
  gain refuses fractional labels);
- a method whose ``max_label`` (a calibrated objective's, ERR's) is below the data set's
  largest label, which its objective would refuse in the folds that hold one.

A method asked for through a group (``all``, ``default``, ``builtins``) that does not fit a
data set is left out of that data set with one line saying so. A method named on its own
that does not fit is refused on that data set, with one line naming the method, the data
set, the reason and the fix; the others run, and the command exits with status 1.
``--gain exp2`` on labels that are not integers 0..31 is refused for the whole data set.

Work per iteration
------------------
RankNet, W-RankNet, LambdaLoss, NDCG_Boost (and gbrank's LambdaRank without truncation) look
at every pair of documents of a query, so their work per iteration grows with the square of
a query's size: :func:`estimate_work` counts the pair terms of each fold's training part
(``n^2`` per query of ``n`` documents, or ``n * min(T, n)`` with a truncation ``T``), and
:func:`cost_warning` turns them into seconds at :data:`SECONDS_PER_PAIR` (a lower estimate:
the pair kernels took 2 to 10 ns per pair on one core) and warns when one run's objective
would take more than :data:`OBJECTIVE_BUDGET_SECONDS`. The other objectives are linear in a
query's size and never warned about.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np

from ..gains import EXP2_MAX_LABEL
from ..objectives import registry
from .methods import Method

__all__ = [
    "LABEL_TABLE_MAX",
    "OBJECTIVE_BUDGET_SECONDS",
    "SECONDS_PER_PAIR",
    "Problem",
    "Refusal",
    "cost_warning",
    "estimate_work",
    "gain_problem",
    "label_problem",
    "label_range_problem",
]

#: The largest label LightGBM's built-ins take here: their gain table has an entry per label.
LABEL_TABLE_MAX = 10_000
#: Objective seconds of one run (all its iterations) above which a method is warned about.
OBJECTIVE_BUDGET_SECONDS = 300.0
#: Seconds per pair term of the quadratic objectives, the lower end of what they measured.
SECONDS_PER_PAIR = 2e-9
#: The truncation the cost warning proposes for a quadratic objective that has one.
SUGGESTED_TRUNCATION = 30


class Refusal(ValueError):
    """A known limitation of a method on some data: reported in one line, without a traceback."""


@dataclass(frozen=True)
class Problem:
    """Why a method does not fit a data set's labels, and what to do."""

    reason: str
    fix: str

    def line(self, method: str, dataset: str) -> str:
        return f"{method} on {dataset}: {self.reason}; {self.fix}"


def _labels_named(label_column: str | None) -> str:
    return f"the label column {label_column!r}" if label_column else "the labels"


def label_problem(method: Method, gain, labels: np.ndarray, label_column: str | None = None,
                  label_names: tuple = (), label_table: np.ndarray | None = None) -> Problem | None:
    """Why ``method`` cannot train on these labels under ``gain`` (a resolved
    :class:`~gbrank.bench.train.LabelGain`), or None; see the module notes. The click
    objectives' problem is returned only for a method from a group. ``label_names`` are the
    data set's label columns when it has several, ``label_table`` their values."""
    if method.multi_label:
        return _multi_label_problem(method, gain, label_names, label_table)
    top = method.settings().get("max_label")
    if top is not None and labels.size and labels.max() > top:
        return Problem(
            f"it reads label / max_label as a probability, and {_labels_named(label_column)} goes up to "
            f"{labels.max():.6g}, above max_label={top:g}",
            f"raise max_label to at least {labels.max():.6g}, or leave it out for the data set's largest label",
        )
    if method.builtin and method.engine == "lightgbm" and gain.gain == "linear":
        if not gain.integer:
            return Problem(
                f"LightGBM's built-in {method.objective} indexes its gain table (label_gain) by the label, and "
                f"{_labels_named(label_column)} holds fractional labels",
                "run a gbrank objective or xgb:rank:ndcg, or round the labels",
            )
        if gain.max_label > LABEL_TABLE_MAX:
            return Problem(
                f"LightGBM's built-in {method.objective} indexes its gain table (label_gain) by the label, and "
                f"{_labels_named(label_column)} goes up to {gain.max_label:.6g}, above {LABEL_TABLE_MAX}, the "
                "largest label the harness builds a table for",
                "rescale the labels, or drop it and run gbrank objectives or xgb:rank:ndcg with --gain linear "
                "(any labels >= 0)",
            )
    if method.family == "clicks" and not np.isin(labels, (0.0, 1.0)).all():
        if method.binary_labels:
            # named or not: the objective refuses any other label
            return Problem(
                f"{method.objective} takes 0/1 clicks (clicked in any session or not), and "
                f"{_labels_named(label_column)} holds other values",
                "give 0/1 labels, or run pbm_listnet, ips_listnet or ips_ranknet on click counts",
            )
        if method.group is not None:
            return Problem(
                f"a click objective reads the labels as clicks (0 or 1), and {_labels_named(label_column)} "
                "holds graded labels",
                "name it with --methods to run it on these labels anyway",
            )
    return None


def _multi_label_problem(method: Method, gain, label_names: tuple, label_table: np.ndarray | None) -> Problem | None:
    if len(label_names) < 2:
        return Problem(
            "a multi-label method trains on several label columns, and this data set has one",
            "give a table with further label columns named after the label column, such as label_click and "
            "label_purchase beside label",
        )
    try:
        method.build(0, labels=np.zeros((1, len(label_names))))
    except (TypeError, ValueError) as exc:
        return Problem(f"its settings do not fit the {len(label_names)} label columns "
                       f"({', '.join(label_names)}): {exc}", "give one weight per label column and one floor per "
                       "label column after the first")
    if label_table is None:
        return None
    try:
        # the objective's own checks of every label column, on all the rows as one query
        method.build(0, gain=gain.gain, labels=label_table).bind(label_table[:, 0], [label_table.shape[0]])
    except (TypeError, ValueError) as exc:
        return Problem(f"it cannot train on the label columns ({', '.join(label_names)}): {exc}",
                       "give settings that take these labels, e.g. objective_args={'gain': 'linear'} for fractional "
                       "labels, and gain=linear for the floors of aggregate=constrained")
    return None


def label_range_problem(labels: np.ndarray, dataset: str, label_column: str | None = None) -> str | None:
    """Why no engine can hold these labels (above float32's largest value), or None."""
    top = np.finfo(np.float32).max
    if labels.size == 0 or not labels.max() > top:
        return None
    return (f"{_labels_named(label_column)} of {dataset} goes up to {labels.max():.6g}, above {top:.6g}, the largest "
            "label LightGBM and XGBoost hold (float32): rescale the labels")


def gain_problem(requested: str, labels: np.ndarray, dataset: str, label_column: str | None = None) -> str | None:
    """Why ``--gain requested`` cannot be used on a data set's labels, or None."""
    if requested != "exp2" or labels.size == 0:
        return None
    integer = bool(np.all(labels == np.floor(labels)))
    if integer and labels.max() <= EXP2_MAX_LABEL:
        return None
    what = "fractional labels" if not integer else f"labels up to {labels.max():.6g}"
    return (f"--gain exp2 (2^l-1) needs integer labels 0..{EXP2_MAX_LABEL}, and {_labels_named(label_column)} "
            f"of {dataset} holds {what}: use --gain linear (or auto)")


def _truncation(method: Method) -> tuple[bool, int | None]:
    """Whether the objective has a ``truncation`` setting, and its value in this method."""
    parameters = inspect.signature(method.factory()).parameters
    if "truncation" not in parameters:
        return False, None
    settings = method.settings()
    if "truncation" in settings:
        return True, settings["truncation"]
    default = parameters["truncation"].default
    return True, None if default is inspect.Parameter.empty else default


def estimate_work(method: Method, sizes: np.ndarray) -> float | None:
    """Pair terms per iteration of ``method`` on queries of ``sizes`` documents, or None for a
    method whose work is linear in a query's size (and the built-ins and the native
    estimator, which the harness does not estimate)."""
    if method.builtin or method.engine == "native" or method.unavailable_reason() is not None:
        return None
    has_truncation, truncation = _truncation(method)
    spec = registry.specs().get(method.objective)
    quadratic = spec is not None and spec.guide is not None and "n^2" in spec.guide.cost
    n = np.asarray(sizes, dtype=np.float64)
    if has_truncation and truncation is not None:
        return float(np.sum(n * np.minimum(float(truncation), n)))
    if quadratic or has_truncation:
        return float(np.sum(n * n))
    return None


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    return f"{seconds / 3600:.3g} h"


def cost_warning(method: Method, dataset: str, sizes: list[np.ndarray], rounds: int,
                 budget: float | None = None) -> str | None:
    """One line warning that ``method``'s objective would take more than ``budget`` seconds
    (default :data:`OBJECTIVE_BUDGET_SECONDS`) in one run of ``rounds`` iterations on the
    largest of the training parts ``sizes``, with the estimate and what to do; None within
    the budget."""
    budget = OBJECTIVE_BUDGET_SECONDS if budget is None else budget
    estimates = [(estimate_work(method, part), part) for part in sizes]
    estimates = [(work, part) for work, part in estimates if work is not None]
    if not estimates:
        return None
    work, part = max(estimates, key=lambda item: item[0])
    per_iteration = work * SECONDS_PER_PAIR
    if per_iteration * rounds <= budget:
        return None
    has_truncation, _ = _truncation(method)
    prefix = method.name.split(":", 1)[0]
    if has_truncation:
        settings = {**method.kwargs, "truncation": SUGGESTED_TRUNCATION}
        arguments = ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in settings.items())
        capped = f"{prefix}:{method.name.split(':', 1)[1].split('(')[0]}({arguments})"
        fix = f"drop it from --methods, or cap its pairs with {capped}"
    else:
        fix = "drop it from --methods (it has no truncation setting), or split the longest queries"
    return (f"{method.name} on {dataset}: about {work:.3g} pair terms per iteration (its work grows with the "
            f"square of a query's size; the longest query has {int(np.max(part))} documents), an estimated "
            f"{_duration(per_iteration)} per iteration and {_duration(per_iteration * rounds)} for {rounds} "
            f"rounds, above the budget of {_duration(budget)} per run: {fix}")
