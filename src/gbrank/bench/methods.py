"""The methods a benchmark compares: an engine and an objective, named ``engine:objective``.

Names
-----
``lgb:<objective>``
    LightGBM with a built-in ranking objective (``lambdarank``, ``rank_xendcg``) or a gbrank
    objective: any name in ``gbrank.objectives.registry``.
``xgb:<objective>``
    XGBoost with a built-in (``rank:ndcg``, ``rank:pairwise``) or a gbrank objective.
``native:ndcgboost``
    gbrank's stump-boosting NDCG_Boost (the paper's Algorithm 1).

The gbrank objectives, their families and their default settings come from the registry: a
method that names no arguments builds the objective of the registry entry's first example
(``lgb:plackett_luce`` uses the position weights given there), and arguments in parentheses
override it, e.g. ``lgb:listmle_topk(k=3)`` or ``lgb:listnet(k=2, target=rank_log)``; a bare
word is read as a string. ``native:ndcgboost(sample=True)`` passes arguments to the estimator.
A gbrank objective named like a built-in of either engine (``lambdarank``) has one
unambiguous method name in every engine, with the prefix ``gbrank_``:
``lgb:gbrank_lambdarank``, ``xgb:gbrank_lambdarank(measure=map)``. An engine-qualified
built-in name means that engine's own built-in or nothing: ``lgb:lambdarank`` is LightGBM's
LambdaRank; ``lgb:lambdarank(k=10)`` is refused (built-ins take no arguments here) and
``xgb:lambdarank`` is refused as ambiguous (``lambdarank`` is LightGBM's built-in, XGBoost's
LambdaMART is ``xgb:rank:ndcg``), each error naming both spellings.

Groups. ``default``, ``all`` and ``builtins`` expand to several methods; a method that came
from a group (``Method.group``) runs only on the data sets whose labels it fits
(:mod:`gbrank.bench.checks`), where a method named on its own is refused with the reason.

Seeds. A run's seed goes to the engine, to the native estimator's ``random_state`` and to a
gbrank objective whose default build has a ``seed`` setting (the objectives that break ties
or sample at random keep it as their ``seed`` attribute), unless the method name sets it.

Several labels. ``lgb:multi_label(objective=NAME, ...)`` (and ``xgb:``) trains the gbrank
objective ``NAME`` (its registry defaults, and ``objective_args={...}`` over them) on every
label column of a table (:mod:`gbrank.bench.data`) with :func:`gbrank.multi_label`; the
other arguments are ``multi_label``'s (``aggregate``, ``weights``, ``floors``, ``k``,
``penalty``), e.g. ``lgb:multi_label(objective=lambdarank, aggregate=constrained,
floors=[0.6])``. It runs only on a data set with several label columns, the label column
first; a weight or floor count that does not match the columns is refused before anything
trains.

Probabilities. The methods of the ``calibrated`` family (``rcr``, ``weighted_logistic_softmax``;
``rcr(alpha=1.0)`` is the pointwise logistic baseline) score a document with the logit of its
probability of relevance (:attr:`Method.probabilistic`): the report gives their log loss and
expected calibration error (:mod:`gbrank.bench.evaluate`).

A method whose objective cannot be imported (an engine that is not installed, a gbrank
objective that is not registered) is *unavailable*: the harness reports it and runs the others.
"""

from __future__ import annotations

import ast
import difflib
import importlib
import inspect
from dataclasses import dataclass, field, replace
from typing import Any

from ..objectives import registry

__all__ = [
    "BUILTIN_FAMILY",
    "ENGINES",
    "GBRANK_PREFIX",
    "MULTI_LABEL",
    "MULTI_LABEL_FAMILY",
    "NATIVE_FAMILY",
    "Method",
    "all_method_names",
    "default_method_names",
    "describe",
    "group_names",
    "method_objective",
    "parse_method",
    "parse_methods",
    "suggest_method",
]

#: Short engine prefixes and the engine each names.
ENGINES = {"lgb": "lightgbm", "xgb": "xgboost", "native": "native"}
_BUILTINS = {
    "lightgbm": ("lambdarank", "rank_xendcg"),
    "xgboost": ("rank:ndcg", "rank:pairwise"),
}
_BUILTIN_SUMMARIES = {
    "lambdarank": "LightGBM's LambdaRank (NDCG-weighted pairwise)",
    "rank_xendcg": "LightGBM's XE-NDCG (cross-entropy over a sampled target distribution)",
    "rank:ndcg": "XGBoost's LambdaMART with NDCG pair weights",
    "rank:pairwise": "XGBoost's pairwise logistic loss (RankNet)",
}
_NATIVE = ("ndcgboost",)
#: The built-in names of the other engines, which an engine-qualified name must not take for
#: gbrank's objective of that name (``xgb:lambdarank``).
_OTHER_BUILTINS = {engine: tuple(o for e, names in _BUILTINS.items() if e != engine for o in names)
                   for engine in _BUILTINS}
#: Settings ``--tune`` searches for the built-ins (engine parameters) and the native estimator
#: (its keyword arguments); a gbrank objective's are its registry entry's ``search_space``.
_PAIR_METHOD = (registry.Knob("lambdarank_pair_method", choices=("topk", "mean")),
                registry.Knob("lambdarank_num_pair_per_sample", 1, 32, integer=True, log=True))
_SEARCH_SPACES = {
    "lambdarank": (registry.Knob("lambdarank_truncation_level", 5, 60, integer=True, log=True),
                   registry.Knob("lambdarank_norm", choices=(True, False))),
    "rank_xendcg": (),
    "rank:ndcg": _PAIR_METHOD,
    "rank:pairwise": _PAIR_METHOD,
    "ndcgboost": (registry.Knob("max_alpha", 0.5, 20.0, log=True), registry.Knob("sample", choices=(False, True))),
}

#: Prefix of a gbrank objective in method names where its registry name is a built-in's.
GBRANK_PREFIX = "gbrank_"
#: Family of the engines' built-in objectives and of the native estimator in reports and plots.
BUILTIN_FAMILY = "built-in"
NATIVE_FAMILY = "native"
#: The method objective that trains a gbrank objective on several label columns, and its family.
MULTI_LABEL = "multi_label"
MULTI_LABEL_FAMILY = "multi-label"
#: The registry family whose objectives' scores are logits of probabilities.
PROBABILISTIC_FAMILY = "calibrated"
#: gbrank objectives that ``python -m gbrank.bench`` also runs in XGBoost by default.
_DEFAULT_XGBOOST = ("listmle_topk",)


def _gbrank_names() -> tuple[str, ...]:
    return registry.names()


def method_objective(name: str) -> str:
    """The objective part of gbrank objective ``name``'s method name: ``gbrank_<name>``
    when an engine has a built-in of that name (``gbrank_lambdarank``), else ``name``."""
    builtins = {o for names in _BUILTINS.values() for o in names}
    return GBRANK_PREFIX + name if name in builtins else name


def _registry_name(objective: str) -> str | None:
    """The registry name a method's objective part names (``gbrank_lambdarank`` and
    ``lambdarank`` both name ``lambdarank``), or None."""
    names = _gbrank_names()
    if objective in names:
        return objective
    if objective.startswith(GBRANK_PREFIX) and objective[len(GBRANK_PREFIX):] in names:
        name = objective[len(GBRANK_PREFIX):]
        return name if method_objective(name) == objective else None
    return None


def _engine_objectives(engine: str) -> tuple[str, ...]:
    """The objective parts of every method of ``engine``, each once."""
    if engine == "native":
        return _NATIVE
    return _BUILTINS[engine] + tuple(method_objective(n) for n in _gbrank_names())


def default_method_names() -> tuple[str, ...]:
    """What ``python -m gbrank.bench`` runs without ``--methods``: both engines' built-ins,
    every registered gbrank objective marked ``in_default_bench`` in LightGBM, top-k ListMLE
    in XGBoost and the native NDCG_Boost."""
    in_default = [n for n in _gbrank_names() if registry.get(n).in_default_bench]
    return (
        *(f"lgb:{o}" for o in _BUILTINS["lightgbm"]),
        *(f"xgb:{o}" for o in _BUILTINS["xgboost"]),
        *(f"lgb:{method_objective(n)}" for n in in_default),
        *(f"xgb:{method_objective(n)}" for n in _DEFAULT_XGBOOST if n in in_default),
        *(f"native:{o}" for o in _NATIVE),
    )


def all_method_names() -> tuple[str, ...]:
    """Every built-in and registered gbrank objective in every engine (the full grid)."""
    names = [f"lgb:{o}" for o in _BUILTINS["lightgbm"]]
    names += [f"xgb:{o}" for o in _BUILTINS["xgboost"]]
    names += [f"lgb:{method_objective(o)}" for o in _gbrank_names()]
    names += [f"xgb:{method_objective(o)}" for o in _gbrank_names()]
    names += [f"native:{o}" for o in _NATIVE]
    return tuple(names)


_GROUPS = {
    "default": default_method_names,
    "all": all_method_names,
    "builtins": lambda: tuple(
        f"{prefix}:{o}" for prefix, engine in (("lgb", "lightgbm"), ("xgb", "xgboost")) for o in _BUILTINS[engine]
    ),
}


def group_names() -> tuple[str, ...]:
    """The names that expand to several methods (``default``, ``all``, ``builtins``)."""
    return tuple(_GROUPS)


_SUGGEST_CUTOFF = 0.6


def suggest_method(text: str, engine: str | None = None) -> str:
    """`` (did you mean 'X'?)`` for a misspelt method or group, else ``""``.

    A word without an engine is also compared with the objectives alone (``lambdaloss``
    finds ``lgb:lambdaloss``). Among equally close names the engine the user typed comes
    first (``engine``, a prefix such as ``"xgb"``), then ``lgb``, ``xgb``, ``native``:
    difflib alone breaks ties by the larger string, which put ``xgb:`` first.
    """
    order = [p for p in (engine, "lgb", "xgb", "native") if p in ENGINES]
    order = list(dict.fromkeys(order))
    candidates = [(f"{p}:{o}", o, rank) for rank, p in enumerate(order) for o in _engine_objectives(ENGINES[p])]
    candidates += [(g, None, len(order)) for g in group_names()]
    bare = engine is None

    def score(candidate) -> float:
        name, objective, _ = candidate
        ratios = [difflib.SequenceMatcher(None, text, name).ratio()]
        if bare and objective is not None:
            ratios.append(difflib.SequenceMatcher(None, text, objective).ratio())
        return max(ratios)

    scored = [(round(score(c), 9), c) for c in candidates]
    best = max(scored, key=lambda item: (item[0], -item[1][2]))
    return f" (did you mean {best[1][0]!r}?)" if best[0] >= _SUGGEST_CUTOFF else ""


@dataclass(frozen=True)
class Method:
    """One (engine, objective) pair of the grid.

    Attributes
    ----------
    name : str
        Canonical name, e.g. ``"lgb:listmle_topk(k=3)"``.
    engine : {"lightgbm", "xgboost", "native"}
    objective : str
        Built-in objective name, gbrank factory name, or ``"ndcgboost"``.
    builtin : bool
        Whether the engine's own objective is used.
    kwargs : dict
        Arguments given in the name, over the registry's defaults (or of the native estimator).
    group : str or None
        The group it was asked for through (``"all"``), or None when it was named.
    """

    name: str
    engine: str
    objective: str
    builtin: bool
    kwargs: dict = field(default_factory=dict)
    group: str | None = field(default=None, compare=False)

    @property
    def family(self) -> str:
        """The loss family for grouping in reports and plots: the registry's ``family`` of a
        gbrank objective, ``"built-in"`` or ``"native"``."""
        if self.builtin:
            return BUILTIN_FAMILY
        if self.engine == "native":
            return NATIVE_FAMILY
        if self.multi_label:
            return MULTI_LABEL_FAMILY
        spec = registry.specs().get(self.objective)
        return spec.family if spec is not None else "other"

    @property
    def binary_labels(self) -> bool:
        """Whether the method's objective takes 0/1 labels only (the registry's
        ``labels="binary"``, the likelihood of binary clicks)."""
        spec = None if self.builtin else registry.specs().get(self.objective)
        return spec is not None and spec.labels == "binary"

    @property
    def multi_label(self) -> bool:
        """Whether the method trains on several label columns (``multi_label``)."""
        return not self.builtin and self.engine != "native" and self.objective == MULTI_LABEL

    @property
    def probabilistic(self) -> bool:
        """Whether the method's scores are logits of probabilities of relevance (the
        ``calibrated`` family), which the report scores with log loss and ECE."""
        return self.family == PROBABILISTIC_FAMILY

    def inner(self) -> "Method":
        """A multi-label method's objective as a method of its own (its engine and settings)."""
        if not self.multi_label:
            raise ValueError(f"{self.name} is not a multi-label method")
        prefix = next(p for p, e in ENGINES.items() if e == self.engine)
        objective = _registry_name(str(self.kwargs["objective"]))
        return Method(name=f"{prefix}:{method_objective(objective)}", engine=self.engine, objective=objective,
                      builtin=False, kwargs=dict(self.kwargs.get("objective_args") or {}))

    def settings(self) -> dict:
        """The factory's keyword arguments: the registry's first example, then the name's."""
        if self.builtin or self.engine == "native" or self.multi_label:
            return dict(self.kwargs)
        return {**self._spec().examples[0], **self.kwargs}

    def _spec(self) -> registry.ObjectiveSpec:
        try:
            return registry.get(self.objective)
        except KeyError as exc:
            raise ImportError(f"gbrank.{self.objective} is not available: {exc.args[0]}") from None

    def factory(self):
        """The gbrank factory or estimator class; raises ImportError when unavailable."""
        if self.engine == "native":
            return importlib.import_module("gbrank").NDCGBoost
        if self.multi_label:
            return importlib.import_module("gbrank").multi_label
        spec = self._spec()
        try:
            return spec.factory()
        except (AttributeError, ImportError) as exc:
            raise ImportError(f"gbrank.{self.objective} is not available: {exc}") from exc

    def search_space(self) -> tuple:
        """The method's own settings that ``--tune`` searches (registry ``Knob`` objects), less
        those its name fixes."""
        if self.multi_label:
            return ()
        if self.builtin or self.engine == "native":
            knobs = _SEARCH_SPACES[self.objective]
        else:
            knobs = self._spec().search_space
        return tuple(k for k in knobs if k.name not in self.kwargs)

    def unavailable_reason(self) -> str | None:
        """Why the method cannot run here (engine or objective missing), or None."""
        if self.engine in ("lightgbm", "xgboost"):
            try:
                importlib.import_module(self.engine)
            except ImportError:
                return f"{self.engine} is not installed (pip install 'gbrank[{self.engine}]')"
        if self.builtin:
            return None
        try:
            self.factory()
            if self.multi_label:
                self.inner().factory()
        except ImportError as exc:
            return str(exc)
        return None

    def build(self, seed: int = 0, *, gain: str | None = None, labels=None) -> Any:
        """A fresh objective (or native estimator) for one run; a string for built-ins.

        ``seed`` goes to the native estimator's ``random_state`` and to a gbrank objective
        that has a ``seed`` setting, unless the method name sets it. ``gain`` (``"exp2"`` or
        ``"linear"``) goes to the ``gain`` setting of the objective or estimator, or else to
        its ``target`` (ListNet, RankCosine: the same names), unless the name sets either.
        A multi-label method builds its objective so (``objective_args`` over the registry's
        defaults) and binds it to ``labels``, the training rows' label columns; ``gain`` is
        also the gain of its floors (``aggregate="constrained"``) unless the name sets one.
        """
        if self.builtin:
            return self.objective
        if self.multi_label:
            settings = {k: v for k, v in self.kwargs.items() if k not in ("objective", "objective_args")}
            settings.setdefault("seed", seed)
            if gain is not None:
                settings.setdefault("gain", gain)
            return self.factory()(self.inner().build(seed, gain=gain), labels, **settings)
        factory = self.factory()
        kwargs = self.settings()
        parameters = inspect.signature(factory).parameters
        if gain is not None and not {"gain", "target"} & set(kwargs):
            for setting in ("gain", "target"):
                if setting in parameters:
                    kwargs[setting] = gain
                    break
        if self.engine == "native":
            kwargs.setdefault("random_state", seed)
            return factory(**kwargs)
        if "seed" in parameters:
            kwargs.setdefault("seed", seed)
        return factory(**kwargs)


def describe(method: Method) -> str:
    """One line about a method: its family and summary, and the defaults it runs with."""
    if method.builtin:
        return f"{BUILTIN_FAMILY}: {_BUILTIN_SUMMARIES.get(method.objective, method.objective)}"
    if method.engine == "native":
        return f"{NATIVE_FAMILY}: NDCG_Boost with decision stumps (Valizadegan et al. 2009, Algorithm 1)"
    if method.multi_label:
        return (f"{MULTI_LABEL_FAMILY}: {method.inner().name.split(':', 1)[1]} on every label column with "
                "gbrank.multi_label [" + ", ".join(f"{k}={_format_value(v)}" for k, v in method.kwargs.items()) + "]")
    spec = registry.specs().get(method.objective)
    if spec is None:
        return "not a registered objective"
    text = f"{spec.family}: {spec.summary}"
    settings = method.settings()
    if settings:
        text += " [" + ", ".join(f"{k}={_format_value(v)}" for k, v in settings.items()) + "]"
    return text


def _format_value(value) -> str:
    if isinstance(value, str) and value.isidentifier():
        return value
    return repr(value)


def _parse_arguments(text: str, spec: str) -> dict:
    try:
        call = ast.parse(f"f({text})", mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"method {spec!r}: cannot read the arguments {text!r}: {exc.msg}") from exc
    if not isinstance(call, ast.Call) or call.args:
        raise ValueError(f"method {spec!r}: arguments must be keyword arguments, e.g. (k=3)")
    kwargs = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise ValueError(f"method {spec!r}: ** is not allowed in the arguments")
        if isinstance(keyword.value, ast.Name):
            kwargs[keyword.arg] = keyword.value.id
            continue
        try:
            kwargs[keyword.arg] = ast.literal_eval(keyword.value)
        except ValueError as exc:
            raise ValueError(
                f"method {spec!r}: the value of {keyword.arg} must be a literal "
                f"(number, string, list, True/False/None)"
            ) from exc
    return kwargs


def parse_method(spec: str) -> Method:
    """Read one method name such as ``"lgb:listmle_topk(k=3)"`` or ``"xgb:rank:ndcg"``.

    Raises
    ------
    ValueError
        For an unknown engine or objective, or malformed arguments; the message suggests
        the closest known name and lists the known ones.
    """
    text = spec.strip()
    arguments = ""
    if text.endswith(")"):
        if "(" not in text:
            raise ValueError(f"method {spec!r}: unbalanced parentheses")
        text, arguments = text[: text.index("(")], text[text.index("(") + 1 : -1]
    prefix, sep, objective = text.partition(":")
    if not sep or prefix not in ENGINES:
        typed = difflib.get_close_matches(prefix, list(ENGINES), n=1, cutoff=0.6) if sep else []
        raise ValueError(
            f"unknown method {spec!r}{suggest_method(text, typed[0] if typed else None)}: a method is "
            f"<engine>:<objective> with engine one of {', '.join(ENGINES)}, or a group "
            f"({', '.join(group_names())}); known methods: {', '.join(all_method_names())}"
        )
    engine = ENGINES[prefix]
    kwargs = _parse_arguments(arguments, spec) if arguments.strip() else {}
    known = _engine_objectives(engine)
    gbrank_name = _registry_name(objective) if engine != "native" else None
    if engine == "native":
        if objective not in _NATIVE:
            raise ValueError(f"unknown method {spec!r}{suggest_method(text, prefix)}: the native engine has {', '.join(_NATIVE)}")
        builtin = False
    elif objective in _BUILTINS[engine]:
        if kwargs:
            hint = (f"; gbrank's {objective} is {prefix}:{method_objective(gbrank_name)}({arguments.strip()})"
                    if gbrank_name is not None else "")
            raise ValueError(f"method {spec!r}: built-in objectives take no arguments here{hint}")
        builtin = True
    elif objective in _OTHER_BUILTINS[engine] and gbrank_name is not None:
        other = next(e for e, names in _BUILTINS.items() if objective in names)
        raise ValueError(
            f"method {spec!r} is ambiguous: {objective} is a built-in of {other}, not of {engine}: write "
            f"{prefix}:{method_objective(gbrank_name)}{f'({arguments.strip()})' if kwargs else ''} for gbrank's "
            f"{objective} in {engine}, or one of "
            f"{engine}'s own built-ins ({', '.join(f'{prefix}:{o}' for o in _BUILTINS[engine])})"
        )
    elif gbrank_name is not None:
        objective, builtin = gbrank_name, False
    elif objective == MULTI_LABEL:
        _check_multi_label(kwargs, spec, prefix)
        builtin = False
    else:
        raise ValueError(f"unknown method {spec!r}{suggest_method(text, prefix)}: {prefix} objectives are {', '.join(known)}")
    name = f"{prefix}:{objective if builtin or engine == 'native' else method_objective(objective)}"
    if kwargs:
        name += "(" + ", ".join(f"{k}={_format_value(v)}" for k, v in kwargs.items()) + ")"
    return Method(name=name, engine=engine, objective=objective, builtin=builtin, kwargs=kwargs)


def _check_multi_label(kwargs: dict, spec: str, prefix: str) -> None:
    """A multi-label method names a gbrank objective and only ``multi_label``'s settings."""
    inner = kwargs.get("objective")
    if not isinstance(inner, str) or _registry_name(inner) is None or inner == MULTI_LABEL:
        shown = f"{inner!r} is not one" if inner is not None else "it names none"
        raise ValueError(f"method {spec!r}: objective= must name a gbrank objective, and {shown}; e.g. "
                         f"{prefix}:{MULTI_LABEL}(objective=lambdarank, weights=[0.7, 0.3]); objectives: "
                         f"{', '.join(_gbrank_names())}")
    if not isinstance(kwargs.get("objective_args", {}), dict):
        raise ValueError(f"method {spec!r}: objective_args must be a dict of the objective's settings, "
                         "e.g. objective_args={'gain': 'linear'}")
    allowed = {"objective", "objective_args", "aggregate", "weights", "floors", "k", "penalty", "gain", "seed"}
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise ValueError(f"method {spec!r}: {MULTI_LABEL} takes no setting {unknown[0]!r}; its settings are "
                         f"{', '.join(sorted(allowed))}")


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside parentheses and brackets."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_methods(specs) -> list[Method]:
    """Methods from a comma-separated string or a sequence of names and groups.

    The groups ``default``, ``all`` (every objective in both engines) and ``builtins`` expand
    to their members, marked with the group (``Method.group``). Duplicates are dropped, the
    first occurrence keeps its place; a method named on its own as well is named.
    """
    if isinstance(specs, str):
        specs = _split_top_level(specs)
    out: dict[str, Method] = {}
    for spec in specs:
        if isinstance(spec, Method):
            expanded = [spec]
        elif spec in _GROUPS:
            expanded = [replace(parse_method(s), group=spec) for s in _GROUPS[spec]()]
        else:
            expanded = [parse_method(spec)]
        for method in expanded:
            if method.name not in out:
                out[method.name] = method
            elif method.group is None:
                # named as well as asked for through a group: it is named
                out[method.name] = replace(out[method.name], group=None)
    out = list(out.values())
    if not out:
        raise ValueError("no methods given")
    return out
