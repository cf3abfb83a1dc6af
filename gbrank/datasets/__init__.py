"""Ranking data: LETOR/SVMlight readers, a synthetic generator and query-wise splits.

Every loader and generator returns a `RankingData` (``X``, ``y``, ``group``, ``qid``).
"""

from ._container import RankingData
from .clicks import ClickLog, click_probability, simulate_clicks
from .letor import LetorFold, load_letor, load_letor_fold
from .split import kfold_queries, split_queries
from .synthetic import make_ranking

__all__ = [
    "ClickLog",
    "LetorFold",
    "RankingData",
    "click_probability",
    "kfold_queries",
    "load_letor",
    "load_letor_fold",
    "make_ranking",
    "simulate_clicks",
    "split_queries",
]
