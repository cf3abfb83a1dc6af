"""Ranking data: LETOR/SVMlight readers, a synthetic generator and query-wise splits.

Every loader and generator returns a `RankingData` (``X``, ``y``, ``group``, ``qid``).
"""

from .._lazy import lazy_exports as _lazy_exports

_EXPORTS = {
    "ClickLog": "gbrank.datasets.clicks:ClickLog",
    "LetorFold": "gbrank.datasets.letor:LetorFold",
    "RankingData": "gbrank.datasets._container:RankingData",
    "click_probability": "gbrank.datasets.clicks:click_probability",
    "kfold_queries": "gbrank.datasets.split:kfold_queries",
    "load_letor": "gbrank.datasets.letor:load_letor",
    "load_letor_fold": "gbrank.datasets.letor:load_letor_fold",
    "make_ranking": "gbrank.datasets.synthetic:make_ranking",
    "simulate_clicks": "gbrank.datasets.clicks:simulate_clicks",
    "split_queries": "gbrank.datasets.split:split_queries",
}

__getattr__, __dir__ = _lazy_exports(__name__, lambda: _EXPORTS)
__all__ = sorted(_EXPORTS)
