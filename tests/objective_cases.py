"""The objectives the test catalogues check, read from the registry.

Every registered objective and every settings dict of its ``examples`` is a :class:`Case`;
the catalogues (bad input, determinism, properties) parametrize over :func:`objective_cases`
and derive what applies to a case from its spec (``labels``, ``hessian_bound``), its
factory's signature and the objective itself, so that a new registry entry is checked
without editing them. The builders are functions so that a test can register a toy objective
and call them again (pytest builds its parametrization at import).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from gbrank.objectives import registry


@dataclass(frozen=True)
class Case:
    """One registered objective with one of its example settings."""

    id: str
    spec: registry.ObjectiveSpec
    kwargs: dict[str, Any] = field(default_factory=dict)

    def build(self, **overrides: Any):
        """The objective, with ``overrides`` for the keywords its factory takes (others dropped)."""
        return self.spec.factory()(**{**self.kwargs, **{k: v for k, v in overrides.items() if self.accepts(k)}})

    def accepts(self, keyword: str) -> bool:
        """Whether the factory takes ``keyword`` (by name or through ``**kwargs``)."""
        return _accepts(self.spec.factory(), keyword)

    def __repr__(self) -> str:
        return self.id


def _accepts(factory, keyword: str) -> bool:
    params = inspect.signature(factory).parameters
    return keyword in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def case_id(name: str, kwargs: dict[str, Any]) -> str:
    if not kwargs:
        return name
    return f"{name}({', '.join(f'{key}={value!r}' for key, value in kwargs.items())})"


def objective_cases(specs=None) -> dict[str, Case]:
    """Case id -> :class:`Case` for every spec (the registry's by default) and example."""
    specs = registry.specs().values() if specs is None else specs
    cases = {}
    for spec in specs:
        for kwargs in spec.examples:
            case = Case(case_id(spec.name, kwargs), spec, dict(kwargs))
            cases[case.id] = case
    return cases


def ids(cases) -> list[str]:
    return [case.id for case in cases]


# --------------------------------------------------------------------------- derived facts
# Nine rows in two queries with tied labels: a probe on which random tie-breaking or sampling
# shows in the gradient.
_PROBE_Y = np.array([2, 1, 0, 1, 0, 3, 0, 2, 1, 1, 0, 2, 2, 0, 1], dtype=float)
_PROBE_S = np.linspace(-1.0, 1.0, _PROBE_Y.size)
_PROBE_G = [4, 5, 6]


def randomised(case: Case) -> bool:
    """Whether the objective draws random numbers: it takes a seed, and two seeds give two
    gradients on tied labels."""
    key = (case.spec.module, case.spec.name, repr(case.kwargs))
    if key not in _RANDOMISED:
        drawn = False
        if case.accepts("seed"):
            one = case.build(seed=1).grad_hess(_PROBE_Y, _PROBE_S, _PROBE_G)[0]
            two = case.build(seed=2).grad_hess(_PROBE_Y, _PROBE_S, _PROBE_G)[0]
            drawn = not np.array_equal(one, two)
        _RANDOMISED[key] = drawn
    return _RANDOMISED[key]


_RANDOMISED: dict[tuple[str, str, str], bool] = {}


def fixed_weights(objective) -> bool:
    """Pair weights from the current ranks, frozen within an iteration (LambdaRank and kin):
    the derivatives are those of ``fixed_weight_loss``."""
    return hasattr(objective, "fixed_weight_loss")


def linear_gain(case: Case) -> dict[str, str] | None:
    """Keywords that replace the ``2**l - 1`` gain or target by the labels themselves."""
    for keyword in ("gain", "target"):
        if keyword in inspect.signature(case.spec.factory()).parameters:
            return {keyword: "linear"}
    return None


def label_kind(case: Case) -> str:
    """What the case reads from the labels: the spec's ``labels``, refined for an ``"exp2"``
    objective by its settings: ``"exp2"`` while its gain or target is ``2**l - 1`` or it
    measures ERR (stop probabilities of integer labels), ``"order"`` when it has no gain (MAP
    and MRR: relevant means above a threshold), ``"any"`` for a linear or user gain."""
    if case.spec.labels != "exp2":
        return case.spec.labels
    params = case.build()._params()
    gain = params.get("gain", params.get("target"))
    if gain == "exp2" or "max_label" in params:
        return "exp2"
    return "order" if gain is None else "any"


def case_labels(case: Case, labels):
    """The catalogue's graded labels as the case takes them: as given, or for an objective
    of 0/1 labels (``labels="binary"``) whether each is above 0."""
    if case.spec.labels != "binary":
        return labels
    labels = np.asarray(labels)
    return (labels > 0).astype(labels.dtype if labels.dtype.kind == "f" else np.float64)


def case_data(case: Case, data):
    """``(X, labels, sizes)`` with the labels as the case takes them (:func:`case_labels`)."""
    X, labels, sizes = data
    return X, case_labels(case, labels), sizes


class _LabelsAsTaken:
    """The objective of a case fed the catalogue's graded labels as the case takes them
    (:func:`case_labels`), for the catalogues that call ``grad_hess`` and ``loss`` only."""

    def __init__(self, case: Case, objective) -> None:
        self.case, self.objective = case, objective

    def __getattr__(self, name: str):
        return getattr(self.objective, name)

    def grad_hess(self, y, *args, **kwargs):
        return self.objective.grad_hess(case_labels(self.case, y), *args, **kwargs)

    def loss(self, y, *args, **kwargs):
        return self.objective.loss(case_labels(self.case, y), *args, **kwargs)


def case_factory(case: Case):
    """``case.build``, its objective fed the labels as the case takes them."""
    if case.spec.labels != "binary":
        return case.build
    return lambda **overrides: _LabelsAsTaken(case, case.build(**overrides))


def spec_data(name: str, data):
    """A :class:`gbrank.datasets.RankingData` with the labels as the registered objective
    ``name`` takes them (:func:`case_labels`)."""
    spec = registry.get(name)
    if spec.labels != "binary":
        return data
    return replace(data, y=case_labels(Case(name, spec), data.y))
