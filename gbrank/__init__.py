"""gbrank: listwise and pairwise learning-to-rank losses for gradient-boosting engines."""

from . import datasets, metrics, objectives
from ._version import __version__
from .ndcg_boost_learner import NDCGBoost
from .ranker import Ranker
from .objectives import (
    RankingObjective,
    cosine,
    ips_listnet,
    listmle,
    listmle_topk,
    listnet,
    ndcg_boost,
    plackett_luce,
    ranknet,
    wlistmle,
    wranknet,
)

__all__ = [
    "NDCGBoost",
    "Ranker",
    "RankingObjective",
    "__version__",
    "cosine",
    "datasets",
    "ips_listnet",
    "listmle",
    "listmle_topk",
    "listnet",
    "metrics",
    "ndcg_boost",
    "objectives",
    "plackett_luce",
    "ranknet",
    "wlistmle",
    "wranknet",
]
