"""Ranking data: LETOR/SVMlight readers, a synthetic generator and query-wise splits.

Every loader and generator returns a `RankingData` (``X``, ``y``, ``group``, ``qid``).
"""

from .._lazy import exports_by_module as _exports_by_module
from .._lazy import lazy_exports as _lazy_exports

_EXPORTS = _exports_by_module(
    __name__,
    {
        "_container": ["RankingData"],
        "clicks": ["ClickLog", "click_probability", "simulate_clicks"],
        "letor": ["LetorFold", "load_letor", "load_letor_fold"],
        "split": ["kfold_queries", "split_queries"],
        "synthetic": ["make_ranking"],
    },
)

__getattr__, __dir__ = _lazy_exports(__name__, lambda: _EXPORTS)
__all__ = sorted(_EXPORTS)
