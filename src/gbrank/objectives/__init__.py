"""Ranking objectives: one module per loss, all sharing the protocol in ``_base``.

The factories are listed in :mod:`.registry` and imported on first use.
"""

from .._lazy import lazy_exports as _lazy_exports
from . import registry


def _exports() -> dict[str, str]:
    return {"RankingObjective": "gbrank.objectives._base:RankingObjective", **registry.exports()}


__getattr__, __dir__ = _lazy_exports(__name__, _exports)
__all__ = sorted(_exports())
