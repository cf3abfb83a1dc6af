"""The methods a benchmark compares: an engine and an objective, named ``engine:objective``.

Names
-----
``lgb:<objective>``
    LightGBM with a built-in ranking objective (``lambdarank``, ``rank_xendcg``) or a gbrank
    objective (``listmle``, ``listmle_topk``, ``wlistmle``, ``ranknet``, ``wranknet``,
    ``listnet``, ``cosine``, ``ndcg_boost``, ``plackett_luce``).
``xgb:<objective>``
    XGBoost with a built-in (``rank:ndcg``, ``rank:pairwise``) or a gbrank objective.
``native:ndcgboost``
    gbrank's stump-boosting NDCG_Boost (the paper's Algorithm 1).

A gbrank objective takes keyword arguments for its factory in parentheses, e.g.
``lgb:listmle_topk(k=3)`` or ``lgb:listnet(k=2, target=rank_log)``; a bare word is read as
a string. ``native:ndcgboost(sample=True)`` passes arguments to the estimator.

A method whose objective cannot be imported (an engine that is not installed, a gbrank
objective that is missing) is *unavailable*: the harness reports it and runs the others.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_METHODS",
    "ENGINES",
    "Method",
    "all_method_names",
    "parse_method",
    "parse_methods",
]

#: Short engine prefixes and the engine each names.
ENGINES = {"lgb": "lightgbm", "xgb": "xgboost", "native": "native"}
_BUILTINS = {
    "lightgbm": ("lambdarank", "rank_xendcg"),
    "xgboost": ("rank:ndcg", "rank:pairwise"),
}
_NATIVE = ("ndcgboost",)
# gbrank objective factories, in the order of the papers; plackett_luce needs an argument
# and is left out of the groups below.
_GBRANK = (
    "listmle",
    "listmle_topk",
    "wlistmle",
    "ranknet",
    "wranknet",
    "listnet",
    "cosine",
    "ndcg_boost",
)
_NEEDS_ARGUMENTS = ("plackett_luce", "lambdaloss")
# gbrank objectives named like a built-in: the name alone is the built-in, the name with
# arguments (``lgb:lambdarank(measure=map)``) the gbrank objective
_SHADOWED = ("lambdarank",)

#: What ``python -m gbrank.bench`` runs without ``--methods``: both engines' built-ins, the
#: gbrank objectives in LightGBM, top-k ListMLE in XGBoost and the native NDCG_Boost.
DEFAULT_METHODS = (
    "lgb:lambdarank",
    "lgb:rank_xendcg",
    "xgb:rank:ndcg",
    "xgb:rank:pairwise",
    *(f"lgb:{name}" for name in _GBRANK),
    "xgb:listmle_topk",
    "native:ndcgboost",
)


def all_method_names() -> tuple[str, ...]:
    """Every built-in and gbrank objective in every engine (the full grid)."""
    names = [f"lgb:{o}" for o in _BUILTINS["lightgbm"]]
    names += [f"xgb:{o}" for o in _BUILTINS["xgboost"]]
    names += [f"lgb:{o}" for o in _GBRANK]
    names += [f"xgb:{o}" for o in _GBRANK]
    names += [f"native:{o}" for o in _NATIVE]
    return tuple(names)


_GROUPS = {
    "default": lambda: DEFAULT_METHODS,
    "all": all_method_names,
    "builtins": lambda: tuple(
        f"{prefix}:{o}" for prefix, engine in (("lgb", "lightgbm"), ("xgb", "xgboost")) for o in _BUILTINS[engine]
    ),
}


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
        Arguments of the gbrank factory (or of the native estimator).
    """

    name: str
    engine: str
    objective: str
    builtin: bool
    kwargs: dict = field(default_factory=dict)

    def factory(self):
        """The gbrank factory or estimator class; raises ImportError when unavailable."""
        package = importlib.import_module("gbrank")
        name = "NDCGBoost" if self.engine == "native" else self.objective
        try:
            return getattr(package, name)
        except (AttributeError, ImportError) as exc:
            raise ImportError(f"gbrank.{name} is not available: {exc}") from exc

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
        except ImportError as exc:
            return str(exc)
        return None

    def build(self, seed: int = 0) -> Any:
        """A fresh objective (or native estimator) for one run; a string for built-ins.

        ``seed`` goes to factories that take one (tie breaking, sampling) unless the method
        name sets it.
        """
        if self.builtin:
            return self.objective
        factory = self.factory()
        kwargs = dict(self.kwargs)
        if self.engine == "native":
            kwargs.setdefault("random_state", seed)
        elif _accepts(factory, "seed"):
            kwargs.setdefault("seed", seed)
        return factory(**kwargs)


def _accepts(func, name: str) -> bool:
    params = inspect.signature(func).parameters
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


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
        For an unknown engine or objective, or malformed arguments; the message lists the
        known names.
    """
    text = spec.strip()
    arguments = ""
    if text.endswith(")"):
        if "(" not in text:
            raise ValueError(f"method {spec!r}: unbalanced parentheses")
        text, arguments = text[: text.index("(")], text[text.index("(") + 1 : -1]
    prefix, sep, objective = text.partition(":")
    if not sep or prefix not in ENGINES:
        raise ValueError(
            f"unknown method {spec!r}: a method is <engine>:<objective> with engine one of "
            f"{', '.join(ENGINES)}; known methods: {', '.join(all_method_names())}"
        )
    engine = ENGINES[prefix]
    kwargs = _parse_arguments(arguments, spec) if arguments.strip() else {}
    if engine == "native":
        if objective not in _NATIVE:
            raise ValueError(f"unknown method {spec!r}: the native engine has {', '.join(_NATIVE)}")
        builtin = False
    elif objective in _SHADOWED and kwargs:
        builtin = False
    elif objective in _BUILTINS[engine]:
        if kwargs:
            raise ValueError(f"method {spec!r}: built-in objectives take no arguments here")
        builtin = True
    elif objective in _GBRANK + _NEEDS_ARGUMENTS:
        builtin = False
    else:
        known = _BUILTINS[engine] + _GBRANK + _NEEDS_ARGUMENTS
        raise ValueError(
            f"unknown method {spec!r}: {prefix} objectives are {', '.join(known)}"
        )
    name = f"{prefix}:{objective}"
    if kwargs:
        name += "(" + ", ".join(f"{k}={_format_value(v)}" for k, v in kwargs.items()) + ")"
    return Method(name=name, engine=engine, objective=objective, builtin=builtin, kwargs=kwargs)


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
    to their members. Duplicates are dropped, the first occurrence keeps its place.
    """
    if isinstance(specs, str):
        specs = _split_top_level(specs)
    out: list[Method] = []
    for spec in specs:
        if isinstance(spec, Method):
            expanded = [spec]
        elif spec in _GROUPS:
            expanded = [parse_method(s) for s in _GROUPS[spec]()]
        else:
            expanded = [parse_method(spec)]
        for method in expanded:
            if method.name not in {m.name for m in out}:
                out.append(method)
    if not out:
        raise ValueError("no methods given")
    return out
