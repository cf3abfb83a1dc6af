"""Independent references of the ranking metrics, for the metric tests.

Each reference is written from the metric's formula in plain Python, over one query and one
explicit ranking (a list of row indices); :func:`all_rankings` enumerates every order of the
tied blocks, so that tie policies are checked against every order. :data:`TIE_CASES` pairs
each gbrank metric setting with its reference.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from gbrank.metrics import err, mean_average_precision, mean_reciprocal_rank, ndcg, precision_at_k



def exp2_gain(label):
    return 2.0**label - 1.0


def linear_gain(label):
    return float(label)


def log2_disc(r):
    return 1.0 / math.log2(1.0 + r)


def zipf_disc(r):
    return 1.0 / r


def poly_disc(beta):
    return lambda r: r**-beta


def cut(k, n):
    return n if k is None else min(k, n)


def ref_ndcg(labels, ranking, k, gain=exp2_gain, disc=log2_disc, no_relevant=1.0):
    kk = cut(k, len(labels))
    gains = [gain(labels[i]) for i in ranking]
    dcg = sum(g * disc(r) for r, g in enumerate(gains[:kk], start=1))
    best = sorted(gains, reverse=True)
    ideal = sum(g * disc(r) for r, g in enumerate(best[:kk], start=1))
    return no_relevant if ideal == 0 else dcg / ideal


def ref_ap(labels, ranking, k, threshold=0.0, no_relevant=1.0, denominator="min_rk"):
    rel = [labels[i] > threshold for i in ranking]
    n_rel = sum(rel)
    if n_rel == 0:
        return no_relevant
    kk = cut(k, len(labels))
    total = 0.0
    for r in range(1, kk + 1):
        if rel[r - 1]:
            total += sum(rel[:r]) / r
    return total / (min(n_rel, kk) if denominator == "min_rk" else n_rel)


def ref_rr(labels, ranking, k, threshold=0.0, no_relevant=1.0):
    rel = [labels[i] > threshold for i in ranking]
    if not any(rel):
        return no_relevant
    for r in range(1, cut(k, len(labels)) + 1):
        if rel[r - 1]:
            return 1.0 / r
    return 0.0


def ref_precision(labels, ranking, k, threshold=0.0, no_relevant=1.0, divide_by="k"):
    rel = [labels[i] > threshold for i in ranking]
    if not any(rel):
        return no_relevant
    n = len(labels)
    kk = cut(k, n)
    if k is None:
        denom = n
    else:
        denom = k if divide_by == "k" else kk
    return sum(rel[:kk]) / denom


def ref_err(labels, ranking, k, max_label=None, no_relevant=1.0):
    if max(labels) == 0:
        return no_relevant
    top = max(labels) if max_label is None else max_label
    value, reach = 0.0, 1.0
    for r, i in enumerate(ranking[: cut(k, len(labels))], start=1):
        stop = (2.0 ** labels[i] - 1.0) / 2.0**top
        value += reach * stop / r
        reach *= 1.0 - stop
    return value


def stable_ranking(scores):
    return sorted(range(len(scores)), key=lambda i: -scores[i])


def all_rankings(scores):
    """Every ranking by descending score: each tied block in every order."""
    blocks = [
        [i for i in range(len(scores)) if scores[i] == s] for s in sorted(set(scores), reverse=True)
    ]
    for parts in itertools.product(*(itertools.permutations(b) for b in blocks)):
        yield [i for part in parts for i in part]


def split(values, group):
    offsets = np.concatenate(([0], np.cumsum(group)))
    return [list(values[offsets[q] : offsets[q + 1]]) for q in range(len(group))]


def tiny_tied_data(seed, n_queries=4, max_size=6, n_levels=4):
    """Small queries with many tied scores and graded labels."""
    rng = np.random.default_rng(seed)
    group = rng.integers(1, max_size + 1, n_queries)
    n = int(group.sum())
    scores = rng.integers(0, 3, n).astype(np.float64)
    labels = rng.integers(0, n_levels, n).astype(np.float64)
    # A relevant query everywhere but one, so that both branches are exercised.
    labels[: group[0]] = 0.0
    return labels, scores, group


# (gbrank function, reference, gbrank kwargs, reference kwargs)
TIE_CASES = [
    ("ndcg exp2 log2", ndcg, ref_ndcg, {}, {}),
    ("ndcg linear", ndcg, ref_ndcg, {"gain": "linear"}, {"gain": linear_gain}),
    ("ndcg zipf", ndcg, ref_ndcg, {"discount": "zipf"}, {"disc": zipf_disc}),
    (
        "ndcg poly",
        ndcg,
        ref_ndcg,
        {"discount": 0.5, "gain": "linear"},
        {"disc": poly_disc(0.5), "gain": linear_gain},
    ),
    ("map min_rk", mean_average_precision, ref_ap, {}, {}),
    ("map R", mean_average_precision, ref_ap, {"denominator": "R"}, {"denominator": "R"}),
    (
        "map threshold",
        mean_average_precision,
        ref_ap,
        {"relevance_threshold": 1.0},
        {"threshold": 1.0},
    ),
    ("mrr", mean_reciprocal_rank, ref_rr, {}, {}),
    ("precision k", precision_at_k, ref_precision, {}, {}),
    (
        "precision min_kn",
        precision_at_k,
        ref_precision,
        {"divide_by": "min_kn"},
        {"divide_by": "min_kn"},
    ),
    ("err", err, ref_err, {"max_label": 3}, {"max_label": 3}),
]
TIE_IDS = [case[0] for case in TIE_CASES]


def per_query_reference(ref, labels, scores, group, k, rankings, **kwargs):
    """For each query, [reference value for each ranking in rankings(scores)]."""
    out = []
    for lab, sco in zip(split(labels, group), split(scores, group)):
        out.append([ref(lab, ranking, k, **kwargs) for ranking in rankings(sco)])
    return out
