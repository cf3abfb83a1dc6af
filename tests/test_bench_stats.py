"""The harness's statistics: Holm's adjustment against the step-down procedure it stands for,
the seed averaging of the paired tests, and the verdict's sentences."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("scipy")

from scipy import stats  # noqa: E402

from gbrank.bench.report import verdict  # noqa: E402
from gbrank.bench.stats import difference_curves, holm, significance  # noqa: E402


def _holm_rejects(p: np.ndarray, alpha: float) -> np.ndarray:
    """Holm's step-down procedure as written: reject the sorted hypotheses up to the first
    p_(i) > alpha / (m - i + 1)."""
    order = np.argsort(p)
    reject = np.zeros(p.size, dtype=bool)
    for i, index in enumerate(order):
        if p[index] > alpha / (p.size - i):
            break
        reject[index] = True
    return reject


@pytest.mark.parametrize("seed", range(20))
def test_holm_adjusted_p_rejects_as_the_step_down_procedure(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 15))
    p = rng.uniform(0, 0.2, m) ** rng.uniform(1, 3)
    adjusted = holm(p)
    assert np.all(adjusted >= p) and np.all(adjusted <= 1)
    for alpha in (0.001, 0.01, 0.05, 0.1, 0.2):
        np.testing.assert_array_equal(adjusted <= alpha, _holm_rejects(p, alpha))


def test_holm_known_values_and_nan():
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])
    np.testing.assert_allclose(holm([0.5, 0.9]), [1.0, 1.0])
    out = holm([0.01, np.nan, 0.02])
    assert np.isnan(out[1])
    np.testing.assert_allclose(out[[0, 2]], [0.02, 0.02])
    assert holm([]).size == 0


def _per_query(values: dict[str, np.ndarray], seeds=(0,)) -> pd.DataFrame:
    """A per-query frame with one fold; ``values[method]`` has shape (n_seeds, n_queries)."""
    frames = []
    for method, table in values.items():
        table = np.atleast_2d(table)
        for s, seed in enumerate(seeds):
            n = table.shape[1]
            frame = pd.DataFrame({"dataset": "d", "fold": "fold1", "seed": seed, "method": method,
                                  "query": np.arange(n), "qid": np.arange(n), "n_docs": 5})
            for k in range(1, 11):
                frame[f"ndcg@{k}"] = table[s]
            frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def test_seeds_are_averaged_before_pairing():
    rng = np.random.default_rng(0)
    base = rng.uniform(0.3, 0.9, 40)
    other = np.clip(base + rng.normal(0.02, 0.05, (3, 40)), 0, 1)
    frame = _per_query({"base": np.tile(base, (3, 1)), "other": other}, seeds=(0, 1, 2))
    row = significance(frame, "base").iloc[0]
    d = other.mean(axis=0) - base
    assert row["n_queries"] == 40
    assert row["t_pvalue"] == pytest.approx(stats.ttest_1samp(d, 0).pvalue, rel=1e-10)
    half = stats.t.ppf(0.975, 39) * d.std(ddof=1) / np.sqrt(40)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((d.mean() - half, d.mean() + half), abs=1e-12)
    curves = difference_curves(frame, "d", "base")
    last = curves[(curves["method"] == "other") & (curves["k"] == 10)].iloc[0]
    assert (last["ci_low"], last["ci_high"]) == pytest.approx((row["ci_low"], row["ci_high"]), abs=1e-12)


def _sig(rows) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    frame["dataset"], frame["baseline"], frame["n_queries"], frame["baseline_mean"] = "d", "base", 500, 0.70
    frame["method_mean"] = 0.70 + frame["mean_diff"]
    frame["t_pvalue_holm"] = holm(frame["t_pvalue"])
    frame["significant"] = frame["t_pvalue_holm"] < 0.05
    return frame


def test_verdict_significant_winner():
    sig = _sig([
        {"method": "a", "mean_diff": 0.012, "ci_low": 0.006, "ci_high": 0.018, "t_pvalue": 0.0001},
        {"method": "b", "mean_diff": -0.02, "ci_low": -0.03, "ci_high": -0.01, "t_pvalue": 0.0004},
        {"method": "c", "mean_diff": 0.004, "ci_low": -0.002, "ci_high": 0.010, "t_pvalue": 0.2},
    ])
    text = verdict(sig, "d", "base", n_seeds=3)
    assert text.startswith("**d**: the best method is **a**, test NDCG@10 0.7120, +0.0120 against the baseline base")
    assert "95% CI +0.0060 to +0.0180" in text and "Holm-adjusted p < 0.001: significant at the 5% level" in text
    assert "better than the baseline: a; worse: b." in text
    assert "averaged over the 3 seeds" in text and "over the 3 methods" in text


def test_verdict_winner_that_the_correction_leaves_undecided():
    rows = [{"method": "a", "mean_diff": 0.01, "ci_low": 0.003, "ci_high": 0.017, "t_pvalue": 0.005}]
    rows += [{"method": f"m{i}", "mean_diff": 0.0005 * i, "ci_low": -0.01, "ci_high": 0.01, "t_pvalue": 0.5}
             for i in range(12)]
    text = verdict(_sig(rows), "d", "base", n_seeds=1)
    assert "p = 0.005, Holm-adjusted p = 0.065: not significant at the 5% level" in text
    assert "no method is significantly better than the baseline; none is significantly worse." in text
    assert "seeds" not in text


def test_verdict_when_the_baseline_is_best():
    sig = _sig([{"method": "a", "mean_diff": -0.002, "ci_low": -0.01, "ci_high": 0.006, "t_pvalue": 0.6}])
    text = verdict(sig, "d", "base", n_seeds=1)
    assert text.startswith("**d**: the baseline **base** has the best test NDCG@10 (0.7000); the runner-up a is -0.0020")
