"""Docstring sections written once and shared by several public functions.

A line holding only ``%(name)s`` in a docstring stands for the section ``name``, indented as
the placeholder is. The metrics share their score, group and return sections this way, the
objective factories of one module their common parameters and notes, and every factory and
metric the shape of its example: the same small data, with the values it prints given where
the function is defined (the doctests check them).
"""

from __future__ import annotations

import re
import textwrap
from typing import Callable, TypeVar

__all__ = ["fill_doc", "metric_example", "objective_example"]

F = TypeVar("F", bound=Callable)
_PLACEHOLDER = re.compile(r"^( *)%\((\w+)\)s$", flags=re.M)


def fill_doc(**sections: str) -> Callable[[F], F]:
    """A decorator that fills the ``%(name)s`` lines of a docstring from ``sections``.

    Each section is dedented, then indented as its placeholder. A placeholder without a
    section is an error when the module is imported, not a hole in the docs.

    Examples
    --------
    >>> from gbrank._docstrings import fill_doc
    >>> @fill_doc(seed="seed : int\\n    The seed.")
    ... def f(seed):
    ...     '''Parameters
    ...     ----------
    ...     %(seed)s
    ...     '''
    >>> print(f.__doc__.strip())
    Parameters
        ----------
        seed : int
            The seed.
    """
    texts = {name: textwrap.dedent(text).strip("\n") for name, text in sections.items()}

    def fill(match: re.Match) -> str:
        indent, name = match.groups()
        if name not in texts:
            raise KeyError(f"docstring placeholder %({name})s has no section; sections: {sorted(texts)}")
        return "\n".join(indent + line if line else "" for line in texts[name].splitlines())

    def decorate(func: F) -> F:
        func.__doc__ = _PLACEHOLDER.sub(fill, func.__doc__ or "")
        return func

    return decorate


def objective_example(call: str, *, loss: float, gradient: list[float]) -> str:
    """The Examples section of an objective factory: the objective ``call`` builds, on one
    query of four documents, prints ``loss`` and ``gradient`` (rounded to 4 decimals)."""
    return f"""
        Examples
        --------
        >>> import numpy as np, gbrank
        >>> y, s = np.array([2.0, 0.0, 1.0, 0.0]), np.array([0.5, 1.0, -0.5, 0.2])  # one query
        >>> objective = {call}
        >>> round(objective.loss(y, s, group=[4]), 4)
        {loss!r}
        >>> objective.grad_hess(y, s, group=[4])[0].round(4).tolist()  # the gradient
        {gradient!r}
    """


def metric_example(name: str, *, mean: float, per_query: list[float]) -> str:
    """The Examples section of a metric: on two queries at ``k=3``, it prints ``mean`` and the
    ``per_query`` values (rounded to 4 decimals)."""
    return f"""
        Examples
        --------
        >>> from gbrank.metrics import {name}
        >>> y, s = [2, 0, 1, 0, 1, 0], [0.5, 1.0, -0.5, 0.2, 0.3, 0.1]  # queries of 4 and 2 rows
        >>> round({name}(y, s, group=[4, 2], k=3), 4)
        {mean!r}
        >>> {name}(y, s, group=[4, 2], k=3, per_query=True).round(4).tolist()
        {per_query!r}
    """
