"""gbrank: listwise and pairwise learning-to-rank losses for gradient-boosting engines.

Every export is imported on first use (numba, scikit-learn and pandas load with the first
objective, metric or estimator that needs them), so ``import gbrank`` is quick.
"""

from ._lazy import lazy_exports as _lazy_exports
from ._numba_cache import ensure_cache as _ensure_cache
from ._version import __version__
from .objectives import registry as _registry

# before any kernel is defined (none is above): a read-only install needs another cache folder
_ensure_cache()

_FIXED = {
    "NDCGBoost": "gbrank.ndcg_boost_learner:NDCGBoost",
    "Ranker": "gbrank.ranker:Ranker",
    "RankingObjective": "gbrank.objectives._base:RankingObjective",
    "dask": "gbrank.dask",
    "datasets": "gbrank.datasets",
    "affine_targets": "gbrank.objectives.affine:affine_targets",
    "cascade_targets": "gbrank.objectives.cascade:cascade_targets",
    "engines": "gbrank.engines",
    "fit_clicks": "gbrank.click_training:fit_clicks",
    "fit_propensity": "gbrank.click_training:fit_propensity",
    "harvest_propensity": "gbrank.objectives.interventions:harvest_propensity",
    "metrics": "gbrank.metrics",
    "multi_label": "gbrank.objectives.multi_label:multi_label",
    "objectives": "gbrank.objectives",
}


def _exports() -> dict[str, str]:
    return {**_FIXED, **_registry.exports()}


__getattr__, __dir__ = _lazy_exports(__name__, _exports)

# gbrank.dask needs the dask extra: it is an attribute, not part of ``from gbrank import *``.
__all__ = sorted(["__version__", *(name for name in _exports() if name != "dask")])
