"""Old spellings of factory arguments, kept working for one release with a warning.

Factories take keyword-only arguments with one name per idea. A call written for an earlier
signature (arguments passed by position, or under a renamed keyword) still builds the same
objective, and says with a ``DeprecationWarning`` how to write it now.
"""

from __future__ import annotations

import functools
import warnings
from typing import Callable

#: The release in which the old spellings stop working.
REMOVED_IN = "0.3"


def legacy_arguments(*, positional: tuple[str, ...] = (), renamed: dict[str, str] | None = None) -> Callable:
    """Decorate a keyword-only factory so that its old call forms keep working.

    Parameters
    ----------
    positional : tuple of str
        The (current) names that the old signature accepted by position, in order.
    renamed : dict
        Old keyword -> current keyword.
    """
    renamed = dict(renamed or {})

    def decorate(func: Callable) -> Callable:
        name = func.__name__

        @functools.wraps(func)
        def factory(*args, **kwargs):
            if args:
                if len(args) > len(positional):
                    raise TypeError(
                        f"{name}() takes keyword arguments only ({len(args)} given by position); "
                        f"write {name}({', '.join(f'{p}=...' for p in positional) or '...'})"
                    )
                names = positional[: len(args)]
                for key, value in zip(names, args):
                    if key in kwargs:
                        raise TypeError(f"{name}() got multiple values for argument {key!r}")
                    kwargs[key] = value
                _warn(
                    f"passing {', '.join(names)} by position to {name}() is deprecated and stops working in "
                    f"gbrank {REMOVED_IN}: write {name}({', '.join(f'{key}={value!r}' for key, value in zip(names, args))})"
                )
            for old, new in renamed.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{name}() got both {old!r} (the deprecated name) and {new!r}; pass {new!r} only")
                    _warn(
                        f"{name}({old}=...) is renamed {name}({new}=...); the name {old!r} stops working in "
                        f"gbrank {REMOVED_IN}"
                    )
                    kwargs[new] = kwargs.pop(old)
            return func(**kwargs)

        return factory

    return decorate


def _warn(message: str) -> None:
    # stacklevel 3: the caller of the factory, not the wrapper
    warnings.warn(message, DeprecationWarning, stacklevel=3)
