"""Ranking objectives: one module per loss, all sharing the protocol in ``_base``."""

from ._base import RankingObjective
from .cosine import cosine
from .lambdarank import lambdaloss, lambdarank
from .listnet import listnet
from .ndcg_boost import ndcg_boost
from .plackett_luce import listmle, listmle_topk, plackett_luce, wlistmle
from .ranknet import ranknet, wranknet

__all__ = [
    "RankingObjective",
    "cosine",
    "lambdaloss",
    "lambdarank",
    "listmle",
    "listmle_topk",
    "listnet",
    "ndcg_boost",
    "plackett_luce",
    "ranknet",
    "wlistmle",
    "wranknet",
]
