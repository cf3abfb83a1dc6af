"""Ranking objectives: one module per loss, all sharing the protocol in ``_base``."""

from ._base import RankingObjective
from .clicks import ips_listnet
from .cosine import cosine
from .listnet import listnet
from .ndcg_boost import ndcg_boost
from .plackett_luce import listmle, listmle_topk, plackett_luce, wlistmle
from .ranknet import ranknet, wranknet

__all__ = [
    "RankingObjective",
    "cosine",
    "ips_listnet",
    "listmle",
    "listmle_topk",
    "listnet",
    "ndcg_boost",
    "plackett_luce",
    "ranknet",
    "wlistmle",
    "wranknet",
]
