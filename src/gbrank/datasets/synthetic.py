"""A generator of learning-to-rank data that looks like web-search LETOR sets."""

from __future__ import annotations

import numpy as np

from .._validation import check_float, check_int
from ._container import RankingData

__all__ = ["make_ranking"]

# Spread of the list lengths around ``docs_per_query``: gamma with shape 4, i.e. a
# coefficient of variation of 0.5, the order of MSLR-WEB and Yahoo! LTR list lengths.
_LENGTH_SHAPE = 4.0
# Geometric decay of the label frequencies: 56/25/11/5/2 % for five levels, close to
# MSLR-WEB30K's 52/32/13/2/1 %.
_LABEL_DECAY = 0.45
_HIDDEN_UNITS = 32


def _list_lengths(rng, n_queries: int, docs_per_query) -> np.ndarray:
    if np.ndim(docs_per_query) == 0:
        mean = float(docs_per_query)
        if not mean >= 1:
            raise ValueError(f"docs_per_query must be at least 1, got {docs_per_query!r}")
        draw = rng.gamma(_LENGTH_SHAPE, mean / _LENGTH_SHAPE, size=n_queries)
        return np.maximum(np.rint(draw), 1).astype(np.int64)
    low, high = (check_int("docs_per_query", v, min=1) for v in docs_per_query)
    if not low <= high:
        raise ValueError(f"docs_per_query=(low, high) needs 1 <= low <= high, got {(low, high)}")
    return rng.integers(low, high + 1, size=n_queries, dtype=np.int64)


def _label_cuts(label_probs, n_levels: int) -> np.ndarray:
    if label_probs is None:
        probs = _LABEL_DECAY ** np.arange(n_levels, dtype=np.float64)
    else:
        probs = np.asarray(label_probs, dtype=np.float64)
        if probs.shape != (n_levels,) or not np.isfinite(probs).all() or (probs < 0).any():
            raise ValueError(f"label_probs must be {n_levels} non-negative numbers, one per level")
        if probs.sum() <= 0:
            raise ValueError("label_probs must not all be zero")
    return np.cumsum(probs / probs.sum())[:-1]


def make_ranking(
    n_queries: int = 1000,
    docs_per_query: int | tuple[int, int] = 100,
    n_features: int = 136,
    *,
    n_levels: int = 5,
    n_informative: int | None = None,
    n_redundant: int | None = None,
    noise: float = 0.75,
    query_effect: float = 0.5,
    label_probs=None,
    seed: int | None = 0,
    dtype=np.float64,
) -> RankingData:
    r"""Generate graded-relevance ranking data with a nonlinear ground truth.

    Features are drawn uniform on [0, 1), like LETOR's query-level-normalised ones (and five
    times faster to draw than normals). The first ``n_informative`` columns :math:`x`,
    standardised to :math:`z = \sqrt{12}\,(x - 1/2)`, drive the relevance, a random
    monotone-plus-nonlinear function of them,

    .. math::

        r(z) = \frac{1}{\sqrt 2}\left(\frac{w^\top z}{\lVert w\rVert}
               + \frac{a^\top \tanh(Wz + b)}{\operatorname{sd}}\right),

    with random :math:`w, W, b, a` (32 hidden units) and each part scaled to unit variance.
    The label is :math:`r(z) + u_q + \varepsilon` cut into ``n_levels`` grades at the
    quantiles of ``label_probs``, where :math:`u_q \sim N(0, \text{query\_effect}^2)` shifts
    a whole query (so some queries have many relevant documents and some none) and
    :math:`\varepsilon \sim N(0, \text{noise}^2)` is label noise that no model can learn.
    The next ``n_redundant`` columns are noisy linear mixtures of :math:`z` (correlated, as
    real LETOR features are; not confined to [0, 1)) and the rest are pure noise.

    Parameters
    ----------
    n_queries : int, default=1000
        Number of queries.
    docs_per_query : int or (int, int), default=100
        An int is the mean list length: lengths are gamma-distributed around it with a
        coefficient of variation of 0.5 (at least 1). A pair ``(low, high)`` draws lengths
        uniformly from ``low..high`` inclusive.
    n_features : int, default=136
        Total number of feature columns (136 as MSLR-WEB).
    n_levels : int, default=5
        Number of relevance grades; labels are ``0 .. n_levels - 1``.
    n_informative : int, optional
        Features that drive relevance; default ``max(1, n_features // 5)``. They are the
        first columns.
    n_redundant : int, optional
        Noisy mixtures of the informative features that follow them; default as many as
        ``n_informative``, within ``n_features``.
    noise : float, default=0.75
        Standard deviation of the label noise, relative to the unit variance of the
        learnable relevance. 0 makes labels a deterministic function of the features. On
        1,000 queries of 100 documents with the other defaults, LightGBM's lambdarank
        reaches a held-out NDCG@10 of about 0.69 where random scores get about 0.15.
    query_effect : float, default=0.5
        Standard deviation of the per-query shift of relevance.
    label_probs : array-like of shape (n_levels,), optional
        Target frequency of each grade (normalised). Default: decaying geometrically by
        0.45 per grade, i.e. 56/25/11/5/2 % for five grades, most documents irrelevant.
    seed : int or None, default=0
        Seed of ``numpy.random.default_rng``; the same seed gives the same data.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        dtype of ``X``. Features are drawn in float32 either way, so both dtypes hold the
        same values and the same labels.

    Returns
    -------
    RankingData
        Queries in order, ``qid`` ``0 .. n_queries - 1``, float64 integer labels.
    """
    n_queries = check_int("n_queries", n_queries, min=1)
    n_features = check_int("n_features", n_features, min=1)
    n_levels = check_int("n_levels", n_levels, min=2)
    n_inf = max(1, n_features // 5) if n_informative is None else check_int(
        "n_informative", n_informative, min=1, max=n_features)
    n_red = min(n_inf, n_features - n_inf) if n_redundant is None else check_int(
        "n_redundant", n_redundant, min=0, max=n_features - n_inf)
    noise = check_float("noise", noise, min=0.0)
    query_effect = check_float("query_effect", query_effect, min=0.0)
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    cuts = _label_cuts(label_probs, n_levels)

    rng = np.random.default_rng(seed)
    sizes = _list_lengths(rng, n_queries, docs_per_query)
    n_rows = int(sizes.sum())

    X = np.empty((n_rows, n_features), dtype=np.float32)
    rng.random(dtype=np.float32, out=X)
    unit = np.float32(np.sqrt(12.0))
    z = (X[:, :n_inf] - np.float32(0.5)) * unit

    w = rng.standard_normal(n_inf).astype(np.float32)
    W = (rng.standard_normal((n_inf, _HIDDEN_UNITS)) / np.sqrt(n_inf)).astype(np.float32)
    b = rng.standard_normal(_HIDDEN_UNITS).astype(np.float32)
    a = rng.standard_normal(_HIDDEN_UNITS).astype(np.float32)
    linear = z @ (w / np.linalg.norm(w))
    hidden = np.tanh(z @ W + b) @ a
    hidden = (hidden - hidden.mean()) / max(float(hidden.std()), 1e-12)
    relevance = (linear.astype(np.float64) + hidden) / np.sqrt(2.0)
    relevance += np.repeat(query_effect * rng.standard_normal(n_queries), sizes)
    relevance += noise * rng.standard_normal(n_rows)

    if n_red:
        mix = (rng.standard_normal((n_inf, n_red)) / np.sqrt(n_inf)).astype(np.float32)
        redundant = X[:, n_inf : n_inf + n_red]
        redundant -= np.float32(0.5)
        redundant *= np.float32(0.5) * unit
        redundant += z @ mix

    thresholds = np.quantile(relevance, cuts)
    y = np.searchsorted(thresholds, relevance, side="right").astype(np.float64)
    if dtype != X.dtype:
        X = X.astype(dtype)
    return RankingData(X, y, group=sizes)
