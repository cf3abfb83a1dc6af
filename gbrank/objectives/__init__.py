"""Ranking objectives: one module per loss, all sharing the protocol in ``_base``."""

from __future__ import annotations

import importlib

from ._base import RankingObjective
from .plackett_luce import listmle, listmle_topk, plackett_luce, wlistmle

_FACTORIES = {
    "ranknet": "ranknet",
    "wranknet": "ranknet",
    "listnet": "listnet",
    "cosine": "cosine",
    "ndcg_boost": "ndcg_boost",
}

__all__ = ["RankingObjective", "listmle", "listmle_topk", "plackett_luce", "wlistmle", *_FACTORIES]


def __getattr__(name: str):
    if name in _FACTORIES:
        module = importlib.import_module(f".{_FACTORIES[name]}", __name__)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
