"""Lazy package exports (PEP 562): an exported name's module is imported on first access.

``import gbrank`` then costs almost nothing: the numba kernels, scikit-learn and pandas are
imported by the first use of what needs them, not by the package import.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Callable, Mapping


class _PicklableModule(types.ModuleType):
    """A module that pickles by name, with the standard pickle too.

    cloudpickle pickles a plain module by name but looks its reducers up by exact type, so a
    subclass of ``ModuleType`` needs its own; the standard pickle refuses modules. Without
    this, a function that refers to ``gbrank`` (a scorer, a Dask task) cannot reach a process
    pool or a Dask worker.
    """

    def __reduce__(self):
        return importlib.import_module, (self.__name__,)


class _ExportingModule(_PicklableModule):
    """A package whose exported functions keep their name when a submodule of that name loads.

    Importing ``pkg.ndcg`` makes Python bind the submodule to the package attribute ``ndcg``;
    where ``ndcg`` is an exported function of that submodule, the function is bound instead,
    as an eager ``from .ndcg import ndcg`` in the package would have left it. Submodules
    bound as modules pickle by name (:class:`_PicklableModule`), as the package does.
    """

    def __setattr__(self, name: str, value) -> None:
        if isinstance(value, types.ModuleType) and value.__name__ == f"{self.__name__}.{name}":
            if self._gbrank_exports().get(name) == f"{value.__name__}:{name}":
                value = getattr(value, name)
            elif type(value) is types.ModuleType:
                value.__class__ = _PicklableModule
        super().__setattr__(name, value)


def lazy_exports(
    package: str, exports: Callable[[], Mapping[str, str]]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """Return ``(__getattr__, __dir__)`` for ``package``.

    ``exports()`` maps every exported name to ``"module:attribute"`` (absolute module names),
    or to a bare module name to export the module itself (``"datasets": "gbrank.datasets"``).
    It is a callable so that exports read from a registry stay current.
    """
    module = sys.modules[package]
    module.__class__ = _ExportingModule
    module._gbrank_exports = exports

    def __getattr__(name: str):
        target = exports().get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module_name, _, attribute = target.partition(":")
        imported = importlib.import_module(module_name)
        value = getattr(imported, attribute) if attribute else imported
        setattr(module, name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(module)) | set(exports()))

    return __getattr__, __dir__


def exports_by_module(package: str, names: Mapping[str, list[str]]) -> dict[str, str]:
    """The ``exports`` mapping of :func:`lazy_exports` from the names each submodule of
    ``package`` exports: ``{"letor": ["load_letor"]}`` gives
    ``{"load_letor": "<package>.letor:load_letor"}``."""
    return {name: f"{package}.{module}:{name}" for module, exported in names.items() for name in exported}
