"""Shared test helpers: finite differences, random queries, engine parameters, small datasets.

Finite differences
------------------
One step policy for every check: central differences with an absolute step ``h`` and, as
divisor, the step actually taken in floating point. ``FD_STEP`` (1e-5) for first
differences, of a loss or of a gradient, ``FD_STEP_2`` (1e-4) for second differences, whose
rounding error grows as ``eps |f| / h**2``: a caller differencing a loss in the hundreds
passes a wider step and says so.

Tolerance convention: ``rtol`` per entry plus an absolute ``atol``; where the magnitude of
a derivative is not bounded (random inputs of any scale), pass ``atol=scaled_atol(values,
base)``, ``base * (1 + max |values|)``.
"""

from __future__ import annotations

import functools
import math
from typing import Callable

import numpy as np
import pytest

FD_STEP = 1e-5
FD_STEP_2 = 1e-4


def _shifted(x: np.ndarray, i: int, h: float) -> tuple[np.ndarray, np.ndarray, float]:
    up, down = x.copy(), x.copy()
    up[i] += h
    down[i] -= h
    return up, down, up[i] - down[i]


def fd_gradient(f: Callable[[np.ndarray], float], x, step: float = FD_STEP) -> np.ndarray:
    """d f / d x_i by central differences of the scalar function ``f``."""
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    for i in range(x.size):
        up, down, width = _shifted(x, i, step)
        out[i] = (f(up) - f(down)) / width
    return out


def fd_diagonal(g: Callable[[np.ndarray], np.ndarray], x, step: float = FD_STEP) -> np.ndarray:
    """d g_i / d x_i by central differences of the vector function ``g`` (a gradient)."""
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    for i in range(x.size):
        up, down, width = _shifted(x, i, step)
        out[i] = (g(up)[i] - g(down)[i]) / width
    return out


def fd_second(f: Callable[[np.ndarray], float], x, step: float = FD_STEP_2) -> np.ndarray:
    """d2 f / d x_i2 by second differences of the scalar function ``f``."""
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    f0 = f(x)
    for i in range(x.size):
        up, down, width = _shifted(x, i, step)
        out[i] = (f(up) - 2.0 * f0 + f(down)) / (width / 2.0) ** 2
    return out


def fd_gradient_by_query(query_loss: Callable[[np.ndarray, np.ndarray], float], scores, labels, sizes,
                         step: float = FD_STEP) -> np.ndarray:
    """Central differences of ``query_loss(scores, labels)`` query by query (a score moves its
    own query only), for direct implementations too slow to call on every query at once."""
    out, start = [], 0
    for size in np.asarray(sizes, dtype=int):
        lab = labels[start : start + size]
        out.append(fd_gradient(lambda s: query_loss(s, lab), scores[start : start + size], step))
        start += size
    return np.concatenate(out) if out else np.zeros(0)


def scaled_atol(values, base: float) -> float:
    """``base * (1 + max |values|)``: an absolute tolerance for derivatives of any scale."""
    values = np.asarray(values, dtype=float)
    return base * (1.0 + (np.abs(values).max() if values.size else 0.0))


# --------------------------------------------------------------------------- target scores
# The targets of ListNet and RankCosine as Xia et al. (2008, section 6.1; 2009) write them.
RANK_MAPS = {
    "rank_log": math.log,
    "rank_sqrt": math.sqrt,
    "rank_linear": lambda m: m,
    "rank_quadratic": lambda m: m * m,
    "rank_exp": math.exp,
}


def direct_psi(labels, target="exp2", k=None):
    """The mapping psi written out: values per label-sorted position r = 1..n (m = n + 1 - r),
    the top-k modification (a common smallest value below position k), and tied labels
    sharing the mean value of the positions they occupy."""
    n = len(labels)
    y = sorted(range(n), key=lambda i: -labels[i])
    values = []
    for r in range(1, n + 1):
        label = labels[y[r - 1]]
        if target == "exp2":
            values.append(2.0**label - 1.0)
        elif target == "linear":
            values.append(float(label))
        else:
            values.append(RANK_MAPS[target](float(n + 1 - r)))
    if k is not None:
        eps = min(values)
        values = [v if r < k else eps for r, v in enumerate(values)]
    by_label = {}
    for r in range(n):
        by_label.setdefault(labels[y[r]], []).append(values[r])
    mean = {label: sum(tied) / len(tied) for label, tied in by_label.items()}
    return np.array([mean[label] for label in labels])


# --------------------------------------------------------------------------- random queries
def random_queries(rng, n_queries: int = 1, *, min_docs: int = 1, max_docs: int = 50, n_levels: int = 4,
                   scale: float = 1.0, sizes=None, tied_scores: bool = False, all_equal=()):
    """``(labels, scores, sizes)`` of random queries: sizes uniform in ``min_docs..max_docs``
    (or ``sizes`` as given), integer labels ``0..n_levels-1``, normal scores of standard
    deviation ``scale``, drawn in that order from ``rng`` (a Generator or a seed).

    ``tied_scores`` rounds the scores to one decimal (ties among them); the queries whose
    indices are in ``all_equal`` get one label for all their documents.
    """
    rng = np.random.default_rng(rng)
    if sizes is None:
        sizes = rng.integers(min_docs, max_docs + 1, size=n_queries)
    sizes = np.asarray(sizes, dtype=np.int64)
    n = int(sizes.sum())
    labels = rng.integers(0, n_levels, size=n).astype(float)
    scores = rng.normal(scale=scale, size=n)
    if tied_scores:
        scores = np.round(scores, 1)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    for q in all_equal:
        labels[offsets[q] : offsets[q + 1]] = labels[offsets[q]]
    return labels, scores, sizes


def offsets_of(sizes) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)


def query_sums(x, sizes) -> np.ndarray:
    return np.add.reduceat(x, offsets_of(sizes)[:-1])


# --------------------------------------------------------------------------- engines
LGB_PARAMS = {"metric": "None", "verbose": -1, "num_threads": 2, "learning_rate": 0.1, "num_leaves": 15,
              "min_data_in_leaf": 10, "seed": 1, "deterministic": True}
XGB_PARAMS = {"eta": 0.1, "max_depth": 4, "min_child_weight": 1e-3, "nthread": 2, "seed": 1}


def lgb_params(**overrides) -> dict:
    """Quiet, deterministic LightGBM parameters (no built-in metric), with ``overrides``."""
    return {**LGB_PARAMS, **overrides}


def xgb_params(**overrides) -> dict:
    """Seeded XGBoost parameters, with ``overrides``."""
    return {**XGB_PARAMS, **overrides}


def train_both(make, train, test, rounds: int):
    """Held-out NDCG@10 of zero scores, of LightGBM and of XGBoost trained with ``make()``."""
    import lightgbm as lgb
    import xgboost as xgb

    from gbrank.metrics import ndcg

    X, y, sizes = train
    Xt, yt, st = test
    baseline = ndcg(yt, np.zeros(yt.size), st, k=10)
    booster = lgb.train(lgb_params(objective=make()), lgb.Dataset(X, y, group=sizes), num_boost_round=rounds)
    bst = xgb.train(XGB_PARAMS, xgb.DMatrix(X, y, group=sizes), num_boost_round=rounds, obj=make())
    return baseline, ndcg(yt, booster.predict(Xt), st, k=10), ndcg(yt, bst.predict(xgb.DMatrix(Xt)), st, k=10)


# --------------------------------------------------------------------------- datasets
def synthetic(seed: int, n_queries: int, *, min_docs: int = 5, max_docs: int = 24):
    """``(X, y, sizes)``: six features, graded labels 0..3 (60/25/10/5 %) from a nonlinear
    score of the first two; queries of ``min_docs..max_docs`` documents."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(min_docs, max_docs + 1, size=n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 6))
    latent = X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.normal(size=n)
    y = np.digitize(latent, np.quantile(latent, [0.6, 0.85, 0.95])).astype(float)
    return X, y, sizes


def small_data(seed: int = 0, n_queries: int = 6, n_features: int = 4, *, min_docs: int = 4, max_docs: int = 9,
               second: float = 0.0, noise: float = 0.5):
    """``(X, y, sizes)``: queries of ``min_docs..max_docs`` documents with many tied labels 0..3,
    ``y = clip(round(X0 + second * X1 + noise * N + 1), 0, 3)``."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(min_docs, max_docs + 1, size=n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, n_features))
    y = np.clip(np.round(X[:, 0] + second * X[:, 1] + noise * rng.normal(size=n) + 1.0), 0, 3)
    return X, y, sizes


@functools.lru_cache(maxsize=2)
def _letor_fold(path: str, fold: int):
    from gbrank.datasets import load_letor_fold

    return load_letor_fold(path, fold)


def letor_fold(relative: str, fold: int = 1):
    """Fold ``fold`` of the real LETOR copy under ``relative`` (cached); skips the test when
    the data is absent."""
    from gbrank._data_dir import data_dir

    root = data_dir()
    if root is None or not (root / relative / f"Fold{fold}").is_dir():
        pytest.skip(f"LETOR data {relative} not found (set GBRANK_DATA_DIR)")
    return _letor_fold(str(root / relative), fold)


def mq2008():
    """``((X, y, group) train, (X, y, group) test)`` of MQ2008 Fold1; skips when absent."""
    fold = letor_fold("letor4_mq2008")
    return (fold.train.X, fold.train.y, fold.train.group), (fold.test.X, fold.test.y, fold.test.group)


# --------------------------------------------------------------------------- the nine-row example
# Two queries (4 + 5 rows); row 6 is the third row of query 1: the bad-input catalogue puts
# its bad value there and expects errors to name that row and query.
Y = np.array([2, 1, 0, 1, 0, 3, 0, 2, 1], dtype=float)
S = np.linspace(-1.0, 1.0, 9)
G = [4, 5]


def at_row6(values, bad):
    out = np.array(values, dtype=float)
    out[6] = bad
    return out


def check_finite(objective, y, s, group, sums=True):
    """Finite gradient and hessian, hessian >= 0, and (``sums``) per-query gradient sums of
    zero for the shift-invariant losses: a lost digit shows there first."""
    grad, hess = objective.grad_hess(y, s, group)
    assert np.isfinite(grad).all() and np.isfinite(hess).all()
    assert (hess >= 0).all()
    if sums and objective.shift_invariant:
        offsets = offsets_of(group)
        total = np.add.reduceat(grad, offsets[:-1])
        scale = np.add.reduceat(np.abs(grad), offsets[:-1]) + 1e-300
        np.testing.assert_array_less(np.abs(total), 1e-9 * scale + 1e-12)
    return grad, hess


# Small trees on one thread, for trainings that check behaviour rather than quality.
TINY_LGB_PARAMS = lgb_params(num_threads=1, num_leaves=4, min_data_in_leaf=2)
TINY_XGB_PARAMS = xgb_params(max_depth=2, min_child_weight=0.0, eta=0.3, nthread=1)
ENGINES = ["lgb.train", "LGBMRanker", "xgb.train"]


def train_on(engine, objective, X, y, group, *, weight=None, init_score=None, rounds=2):
    """Train on one engine path with the tiny parameters; return (model bytes, raw
    predictions on X). XGBoost takes one weight per query: the first row's."""
    import lightgbm as lgb
    import xgboost as xgb

    if engine == "lgb.train":
        dtrain = lgb.Dataset(X, y, group=group, weight=weight, init_score=init_score)
        booster = lgb.train({**TINY_LGB_PARAMS, "objective": objective}, dtrain, num_boost_round=rounds)
        return booster.model_to_string(), booster.predict(X, raw_score=True)
    if engine == "LGBMRanker":
        ranker = lgb.LGBMRanker(objective=objective, n_estimators=rounds, num_leaves=4, min_child_samples=2,
                                n_jobs=1, verbose=-1, metric="None", deterministic=True, random_state=1)
        ranker.fit(X, y, group=group, sample_weight=weight, init_score=init_score)
        return ranker.booster_.model_to_string(), ranker.predict(X, raw_score=True)
    qweight = None
    if weight is not None:
        qweight = np.asarray(weight, dtype=float)[np.concatenate(([0], np.cumsum(group)[:-1]))]
    dtrain = xgb.DMatrix(X, y, group=group, weight=qweight, base_margin=init_score)
    booster = xgb.train(TINY_XGB_PARAMS, dtrain, num_boost_round=rounds, obj=objective)
    return bytes(booster.save_raw()), booster.predict(xgb.DMatrix(X), output_margin=True)


class Spy:
    """Passes engine calls through and keeps what the engine handed over and what it got
    back: ``(scores, labels, weights, grad, hess)`` per call.

    ``__deepcopy__`` returns self because lgb.train deep-copies its parameters.
    """

    def __init__(self, inner):
        self.inner = inner
        self.seen = []

    def __deepcopy__(self, memo):
        return self

    def __call__(self, preds, data):
        grad, hess = self.inner(preds, data)
        self.seen.append((np.array(preds, dtype=float), data.get_label().copy(), data.get_weight(), grad, hess))
        return grad, hess


def ohsumed_fold(fold: int = 1):
    """Fold ``fold`` of OHSUMED (QueryLevelNorm); skips when absent."""
    return letor_fold("letor3_ohsumed/QueryLevelNorm", fold)


def benchmark_script(name: str):
    """``benchmarks/<name>.py`` imported as a module (the scripts are not a package)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def installed_before(package: str, version: str) -> bool:
    """Whether ``package`` is installed in a version older than ``version`` (False if absent)."""
    from importlib import metadata

    from packaging.version import Version

    try:
        return Version(metadata.version(package)) < Version(version)
    except metadata.PackageNotFoundError:
        return False
