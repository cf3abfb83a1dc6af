"""gbrank: listwise and pairwise learning-to-rank losses for gradient-boosting engines."""

from __future__ import annotations

from . import objectives
from ._version import __version__

__all__ = ["__version__", *objectives.__all__]


def __getattr__(name: str):
    if name in objectives.__all__:
        return getattr(objectives, name)
    raise AttributeError(f"module 'gbrank' has no attribute {name!r}")
