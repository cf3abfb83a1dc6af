r"""ListNet (Cao et al. 2007; Xia et al. 2008, section 4.3.3; Xia et al. 2009, section 4.3.3).

The loss
--------
For one query, let :math:`\psi` be the target scores (:mod:`._targets`) and :math:`s` the
model's scores. Both define Plackett–Luce distributions over the ordered top-:math:`k`
prefixes :math:`a = (a_1, \dots, a_k)` of distinct documents,

.. math::

    P_s(a) = \prod_{t=1}^{k} \frac{e^{s_{a_t}}}{\sum_{d \notin \{a_1..a_{t-1}\}} e^{s_d}},

and likewise :math:`Q(a) = P_\psi(a)`. ListNet's loss is their cross-entropy

.. math::

    L(s) = -\sum_{a} Q(a) \log P_s(a).

The papers write the Kullback–Leibler divergence :math:`D(Q \,\|\, P_s)`, which differs by
the target's entropy, a constant: same gradient, same minimiser. For a query of
:math:`n \le k` documents the top-:math:`k` distribution is the full permutation
distribution, whose last position is determined, so :math:`k = n - 1` is used (same loss).

Since :math:`-\log P_s(a)` is the top-:math:`k` ListMLE loss of the prefix :math:`a`, the
cross-entropy is its expectation over target prefixes, :math:`L = E_{a \sim Q}[\ell_k(s; a)]`,
and regrouping the steps by the prefix :math:`v` already drawn gives

.. math::

    L(s) = \sum_{|v| < k} Q(v) \sum_{d \notin v} Q(d \mid v)\, \big(-\log \pi_v(d)\big),

where :math:`\pi_v` and :math:`Q(\cdot \mid v)` are the softmaxes of :math:`s` and :math:`\psi`
over the documents not in :math:`v`. Each term is a convex log-sum-exp, so :math:`L` is
convex, and

.. math::

    g_d = \sum_{|v| < k,\, d \notin v} Q(v) \big(\pi_v(d) - Q(d \mid v)\big), \qquad
    h_d = \sum_{|v| < k,\, d \notin v} Q(v)\, \pi_v(d) \big(1 - \pi_v(d)\big)

is the gradient and the exact diagonal of the (positive semi-definite) hessian.

k = 1 (the original ListNet)
    One prefix, the empty one: with :math:`p = \mathrm{softmax}(s)`,
    :math:`q = \mathrm{softmax}(\psi)`: :math:`L = -\sum_d q_d \log p_d`, :math:`g = p - q`,
    :math:`h = p(1 - p)`. O(n).

k = 2, exactly in O(n)
    With :math:`Q(a, b) = q_a q_b / (1 - q_a)` and
    :math:`\log P_s(a, b) = \log p_a + \log p_b - \log(1 - p_a)`, summing over :math:`b` and
    :math:`a` separately gives

    .. math::

        L = -\sum_d m_d \log p_d + \sum_a q_a \log(1 - p_a),

    with :math:`m_d = q_d + Q_2(d)` the target's probability that :math:`d` is in the top
    two, :math:`Q_2(d) = q_d \sum_{a \ne d} q_a / (1 - q_a)` its second-position marginal.
    With :math:`\pi_a(d) = p_d / (1 - p_a)` (the softmax without :math:`a`),

    .. math::

        g_d = p_d - m_d + \sum_{a \ne d} q_a \pi_a(d), \qquad
        h_d = p_d (1 - p_d) + \sum_{a \ne d} q_a \pi_a(d) \big(1 - \pi_a(d)\big),

    and the sums over :math:`a` are O(1) per document after the query-wide sums
    :math:`\sum_a q_a / (1 - p_a)` and :math:`\sum_a q_a / (1 - p_a)^2`. The one document
    that can hold :math:`p_a \to 1` (the largest score) is handled on its own, with the
    softmax of the others computed directly, so nothing overflows for scores of +-1e4; the
    target's marginals are computed the same way, once per dataset.

k >= 3
    A query whose prefix tree (the prefixes :math:`v` with :math:`|v| < k`, there are
    :math:`\sum_{t<k} n!/(n-t)!`) has at most ``exact_limit`` nodes is enumerated exactly
    with the formulas above, skipping the branches of zero target probability. Longer
    queries use an unbiased Monte Carlo estimate: ``n_samples`` prefixes are drawn from
    :math:`Q` by the Gumbel top-k trick (the top :math:`k` of :math:`\psi_d + G_d`,
    :math:`G_d` standard Gumbel, is an exact Plackett–Luce draw) and the loss, gradient and
    exact diagonal hessian of the top-:math:`k` ListMLE loss are averaged over them, each
    computed by the Plackett–Luce kernel (``pl_query`` of :mod:`gbrank.objectives.plackett_luce`,
    the drawn prefix weighted 1 and the rest 0). Each sample costs O(n), so a query costs
    O(``n_samples`` n). The hessian estimate is an unbiased estimate of the exact diagonal
    and is non-negative. The draws come from a hash of ``seed``, the query's labels and its
    current scores: fresh at every boosting iteration, identical when a training is
    repeated, independent of threads and of where the query is (one machine or a Dask
    worker), and the same for ``loss`` and ``grad_hess`` at the same scores (they depend on
    the row order within the query, so permuting its rows changes the draws, not their law).

Queries whose targets are all equal (all labels equal, a single document) carry no ranking
information: zero loss and zero gradient by default (``ignore_all_equal``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .._deprecation import legacy_arguments
from .._docstrings import fill_doc, objective_example
from .._parallel import MIN_ROWS_PER_THREAD_LIGHT, over_queries
from .._validation import check_int
from ._base import RankingObjective
from ._random import next_uniform, query_keys, query_stream
from ._targets import Target, check_target, check_target_labels, target_scores
from .plackett_luce import pl_query

__all__ = ["ListNet", "ListNetState", "listnet"]

# Replaces a uniform draw of exactly 0, so that the Gumbel transform stays finite.
_TINY_UNIFORM = 2.0**-54


@njit(cache=True)
def _argmax(x, start, end):
    best = start
    for i in range(start + 1, end):
        if x[i] > x[best]:
            best = i
    return best


@njit(cache=True)
def _softmax_stats(x, start, end, skip):
    """Max and sum of exp(x - max) over rows start..end except ``skip`` (``end``: none)."""
    m = -np.inf
    for i in range(start, end):
        if i != skip and x[i] > m:
            m = x[i]
    z = 0.0
    for i in range(start, end):
        if i != skip:
            z += math.exp(x[i] - m)
    return m, z


# Once per dataset and linear in its size: serial, which compiles faster than a parallel loop.
@njit(cache=True)
def top2_marginals(psi, offsets):
    """Target top-1 probabilities ``top1`` (:math:`q` of the notes) and top-2 inclusion
    probabilities ``top2`` (:math:`m = q + Q_2`), per row."""
    n = psi.shape[0]
    top1 = np.zeros(n)
    top2 = np.zeros(n)
    for query in range(offsets.shape[0] - 1):
        start = offsets[query]
        end = offsets[query + 1]
        if end - start < 2:
            for i in range(start, end):
                top1[i] = 1.0
                top2[i] = 1.0
            continue
        top = _argmax(psi, start, end)
        mx, z = _softmax_stats(psi, start, end, end)
        mx2, z2 = _softmax_stats(psi, start, end, top)
        r = 0.0
        for i in range(start, end):
            e = math.exp(psi[i] - mx)
            top1[i] = e / z
            if i != top:
                r += top1[i] * z / (z - e)
        for i in range(start, end):
            if i == top:
                top2[i] = top1[i] + top1[i] * r
            else:
                e = math.exp(psi[i] - mx)
                top2[i] = top1[i] + top1[i] * (r - top1[i] * z / (z - e)) + top1[top] * math.exp(psi[i] - mx2) / z2
    return top1, top2


@njit(cache=True)
def _top1(s, top1, start, end, grad, hess, want_loss):
    mx = -np.inf
    for i in range(start, end):
        mx = max(mx, s[i])
    # grad holds exp(s - max) until the normaliser is known
    z = 0.0
    for i in range(start, end):
        e = math.exp(s[i] - mx)
        grad[i] = e
        z += e
    lse = mx + math.log(z)
    loss = 0.0
    for i in range(start, end):
        p = grad[i] / z
        grad[i] = p - top1[i]
        hess[i] = p * (1.0 - p)
        if want_loss and top1[i] > 0.0:
            loss += top1[i] * (lse - s[i])
    return loss


def weighted_top1(scores, weight, offsets, grad, hess, want_loss):
    """The top-one loss with unnormalised targets ``weight`` (the click losses' softmax):
    g = W pi - w, h = W pi (1 - pi) per query, W its weights' sum; returns the per-query loss."""
    loss = np.empty(offsets.size - 1)
    target = np.empty(scores.shape[0])
    over_queries(weighted_top1_kernel, offsets, scores, weight, target, offsets, grad, hess, want_loss, loss,
                 min_rows=MIN_ROWS_PER_THREAD_LIGHT)
    return loss


@njit(cache=True, nogil=True)
def weighted_top1_kernel(q0, q1, scores, weight, target, offsets, grad, hess, want_loss, loss):
    """:func:`weighted_top1` of the queries ``q0 <= q < q1`` (``target``: scratch rows)."""
    for q in range(q0, q1):
        loss[q] = _weighted_top1_query(scores, weight, target, offsets[q], offsets[q + 1], grad, hess, want_loss)


@njit(cache=True)
def _weighted_top1_query(scores, weight, target, start, end, grad, hess, want_loss):
    total = 0.0
    for i in range(start, end):
        total += weight[i]
    if total == 0.0 or end - start < 2:
        return 0.0
    # ListNet's top-one loss with the normalised target w / W, scaled back by W
    for i in range(start, end):
        target[i] = weight[i] / total
    loss = _top1(scores, target, start, end, grad, hess, want_loss)
    for i in range(start, end):
        grad[i] *= total
        hess[i] *= total
    return loss * total


@njit(cache=True)
def _top2(s, top1, top2, start, end, grad, hess, want_loss):
    top = _argmax(s, start, end)
    mx = s[top]
    # grad holds exp(s - max) until the sums are known
    z = 0.0
    for i in range(start, end):
        e = math.exp(s[i] - mx)
        grad[i] = e
        z += e
    mx2, z2 = _softmax_stats(s, start, end, top)
    lse = mx + math.log(z)
    # a = sum_{a != top} q_a / (1 - p_a), c = sum_{a != top} q_a / (1 - p_a)**2
    a = 0.0
    c = 0.0
    loss = 0.0
    for i in range(start, end):
        if i != top:
            rho = z / (z - grad[i])
            a += top1[i] * rho
            c += top1[i] * rho * rho
            if want_loss and top1[i] > 0.0:
                loss += top1[i] * math.log((z - grad[i]) / z)
    top1_top = top1[top]
    if want_loss:
        if top1_top > 0.0:
            loss += top1_top * (mx2 + math.log(z2) - lse)
        for i in range(start, end):
            if top2[i] > 0.0:
                loss += top2[i] * (lse - s[i])
    for i in range(start, end):
        e = grad[i]
        p = e / z
        if i == top:
            t1 = p * a
            t2 = p * p * c
        else:
            rho = z / (z - e)
            pi_top = math.exp(s[i] - mx2) / z2
            t1 = p * (a - top1[i] * rho) + top1_top * pi_top
            t2 = p * p * (c - top1[i] * rho * rho) + top1_top * pi_top * pi_top
        grad[i] = p - top2[i] + t1
        h = p * (1.0 - p) + t1 - t2
        hess[i] = h if h > 0.0 else 0.0
    return loss


@njit(cache=True)
def _tree_size(n, k, limit):
    """Number of prefixes shorter than k of n documents, or limit + 1 if it exceeds limit."""
    total = 1
    term = 1
    for t in range(1, k):
        term *= n - t + 1
        total += term
        if total > limit:
            return limit + 1
    return total


@njit(cache=True)
def _exact(s, psi, start, end, k, grad, hess, want_loss):
    """Enumerate the prefixes shorter than k depth first, accumulating g, h and the loss."""
    n = end - start
    cond = np.zeros((k, n))  # Q(. | v) at each depth of the current path
    weight = np.empty(k)  # Q(v) of the current path's prefixes
    nxt = np.zeros(k, dtype=np.int64)
    chosen = np.empty(k, dtype=np.int64)
    used = np.zeros(n, dtype=np.bool_)
    loss = 0.0
    depth = 0
    weight[0] = 1.0
    visit = True
    while depth >= 0:
        if visit:
            visit = False
            w = weight[depth]
            ms = -np.inf
            mp = -np.inf
            for i in range(n):
                if not used[i]:
                    ms = max(ms, s[start + i])
                    mp = max(mp, psi[start + i])
            zs = 0.0
            zp = 0.0
            for i in range(n):
                if not used[i]:
                    zs += math.exp(s[start + i] - ms)
                    zp += math.exp(psi[start + i] - mp)
            lse = ms + math.log(zs)
            for i in range(n):
                if used[i]:
                    cond[depth, i] = 0.0
                    continue
                pi = math.exp(s[start + i] - ms) / zs
                c = math.exp(psi[start + i] - mp) / zp
                cond[depth, i] = c
                grad[start + i] += w * (pi - c)
                hess[start + i] += w * pi * (1.0 - pi)
                if want_loss and c > 0.0:
                    loss += w * c * (lse - s[start + i])
            nxt[depth] = 0
        if depth == k - 1 or nxt[depth] >= n:
            depth -= 1
            if depth >= 0:
                used[chosen[depth]] = False
            continue
        i = nxt[depth]
        nxt[depth] += 1
        c = cond[depth, i]
        if c == 0.0:
            continue
        chosen[depth] = i
        used[i] = True
        weight[depth + 1] = weight[depth] * c
        depth += 1
        visit = True
    return loss


@njit(cache=True)
def _sampled(s, psi, start, end, k, n_samples, key, grad, hess, want_loss):
    """Average the top-k ListMLE terms over n_samples Gumbel top-k draws from the target."""
    n = end - start
    state = query_stream(key, s, start, end)
    # a key psi + G is kept as the pair (psi, G) and keys are compared through
    # (psi_a - psi_b) + (G_a - G_b), so that the noise still orders tied targets when
    # psi is too large for psi + G to hold it (e**700 from "rank_exp")
    key_psi = np.empty(k)
    key_g = np.empty(k)
    prefix = np.empty(k, dtype=np.int64)
    in_prefix = np.zeros(n, dtype=np.bool_)
    # the drawn prefix, then the other rows: a permutation whose top k is ListMLE's
    perm = np.empty(n, dtype=np.int64)
    top_k = np.ones(k)
    weight = 1.0 / n_samples
    loss = 0.0
    for _ in range(n_samples):
        # the top k of psi + Gumbel noise, kept sorted in a small buffer
        filled = 0
        for i in range(n):
            state, u = next_uniform(state)
            p = psi[start + i]
            gumbel = -math.log(-math.log(u if u > 0.0 else _TINY_UNIFORM))
            if filled == k and (p - key_psi[k - 1]) + (gumbel - key_g[k - 1]) <= 0.0:
                continue
            j = filled if filled < k else k - 1
            while j > 0 and (p - key_psi[j - 1]) + (gumbel - key_g[j - 1]) > 0.0:
                key_psi[j] = key_psi[j - 1]
                key_g[j] = key_g[j - 1]
                prefix[j] = prefix[j - 1]
                j -= 1
            key_psi[j] = p
            key_g[j] = gumbel
            prefix[j] = i
            if filled < k:
                filled += 1
        for t in range(k):
            in_prefix[prefix[t]] = True
            perm[t] = start + prefix[t]
        r = k
        for i in range(n):
            if in_prefix[i]:
                in_prefix[i] = False
            else:
                perm[r] = start + i
                r += 1
        loss += pl_query(s, perm, top_k, 0, k, weight, grad, hess, True, want_loss)
    return loss


@njit(cache=True)
def _query_shallow(scores, top1, top2, start, end, k, grad, hess, want_loss):
    """One query of at least two documents for k <= 2."""
    if k == 1 or end - start == 2:
        return _top1(scores, top1, start, end, grad, hess, want_loss)
    return _top2(scores, top1, top2, start, end, grad, hess, want_loss)


@njit(cache=True)
def _query_deep(scores, psi, top1, top2, offsets, active, query, k, n_samples, keys, exact_limit, grad, hess,
                want_loss):
    """One query for k >= 3 (nothing for an inactive query or a single document)."""
    start = offsets[query]
    end = offsets[query + 1]
    n = end - start
    if not active[query] or n < 2:
        return 0.0
    kk = min(k, n - 1)
    if kk <= 2:
        return _query_shallow(scores, top1, top2, start, end, kk, grad, hess, want_loss)
    if _tree_size(n, kk, exact_limit) <= exact_limit:
        return _exact(scores, psi, start, end, kk, grad, hess, want_loss)
    return _sampled(scores, psi, start, end, kk, n_samples, keys[query], grad, hess, want_loss)


# Two kernels, so that the common k <= 2 compiles neither the enumeration nor the sampling;
# each runs a block of queries (gbrank._parallel).
@njit(cache=True, nogil=True)
def listnet_shallow_kernel(q0, q1, scores, top1, top2, offsets, active, k, grad, hess, want_loss, loss):
    """k <= 2: fill grad and hess (raw, zero-initialised) and the per-query cross-entropy
    ``loss`` of queries ``q0 <= query < q1``."""
    for query in range(q0, q1):
        start, end = offsets[query], offsets[query + 1]
        loss[query] = 0.0
        if active[query] and end - start >= 2:
            loss[query] = _query_shallow(scores, top1, top2, start, end, k, grad, hess, want_loss)


@njit(cache=True, nogil=True)
def listnet_kernel(q0, q1, scores, psi, top1, top2, offsets, active, k, n_samples, keys, exact_limit, grad, hess,
                   want_loss, loss):
    """Any k: fill grad and hess (raw, zero-initialised) and the per-query cross-entropy
    ``loss`` of queries ``q0 <= query < q1``."""
    for query in range(q0, q1):
        args = (scores, psi, top1, top2, offsets, active, query, k, n_samples, keys, exact_limit)
        loss[query] = _query_deep(*args, grad, hess, want_loss)


class ListNetState(NamedTuple):
    """Per-dataset arrays of :class:`ListNet`: targets, their top-1 and top-2 marginals."""

    psi: np.ndarray
    top1: np.ndarray
    top2: np.ndarray
    offsets: np.ndarray
    active: np.ndarray
    keys: np.ndarray


class ListNet(RankingObjective):
    """ListNet's top-k cross-entropy; build it with :func:`listnet`."""

    factory = "listnet"
    _setting_names = ("k", "target", "target_k", "n_samples", "seed", "exact_limit", "ignore_all_equal")

    def __init__(
        self, *, k, target, target_k, n_samples, seed, exact_limit, ignore_all_equal, hess_floor, hess_scale
    ) -> None:
        super().__init__(hess_floor=hess_floor, hess_scale=hess_scale)
        self.k = check_int("k", k, min=1)
        self.target_k = check_target(target, target_k)
        self.target = target
        self.n_samples = check_int("n_samples", n_samples, min=1)
        self.seed = check_int("seed", seed, min=0)
        self.exact_limit = check_int("exact_limit", exact_limit, min=0)
        self.ignore_all_equal = bool(ignore_all_equal)

    def _label_check(self, y_true, offsets):
        return check_target_labels(y_true, offsets, self.target)

    def _prepare(self, labels, offsets, statistics):
        psi, informative = target_scores(labels, offsets, self.target, self.target_k)
        active = informative if self.ignore_all_equal else np.ones_like(informative)
        top1, top2 = top2_marginals(psi, offsets)
        return ListNetState(psi, top1, top2, offsets, active, query_keys(self.seed, labels, offsets))

    def _run(self, state: ListNetState, scores, grad, hess, want_loss):
        loss = np.empty(state.offsets.size - 1)
        if self.k <= 2:
            over_queries(listnet_shallow_kernel, state.offsets, scores, state.top1, state.top2, state.offsets,
                         state.active, self.k, grad, hess, want_loss, loss)
        else:
            over_queries(listnet_kernel, state.offsets, scores, state.psi, state.top1, state.top2, state.offsets,
                         state.active, self.k, self.n_samples, state.keys, self.exact_limit, grad, hess, want_loss, loss)
        return loss


@legacy_arguments(positional=("k", "target"))
@fill_doc(example=objective_example("gbrank.listnet()", loss=1.4253, gradient=[-0.5436, 0.3985, -0.0117, 0.1568]))
def listnet(
    *,
    k: int = 1,
    target: Target = "exp2",
    target_k: int | None = None,
    n_samples: int = 16,
    seed: int = 0,
    exact_limit: int = 1000,
    ignore_all_equal: bool = True,
    hess_floor: float = 1e-6,
    hess_scale: float = 1.0,
) -> ListNet:
    r"""ListNet: cross-entropy between the top-k Plackett–Luce distributions of targets and scores.

    .. math::

        L(s) = -\sum_{a = (a_1..a_k)} P_\psi(a) \log P_s(a), \qquad
        P_s(a) = \prod_{t=1}^{k} \frac{e^{s_{a_t}}}{\sum_{d \notin \{a_1..a_{t-1}\}} e^{s_d}}

    (Cao et al. 2007; Xia et al. 2008, eq. 11). ``k=1`` is the original ListNet:
    :math:`L = -\sum_d q_d \log p_d` with :math:`p, q` the softmaxes of :math:`s, \psi`.
    See the module documentation for the derivations.

    Parameters
    ----------
    k : int, default=1
        Depth of the Plackett–Luce distributions. 1 and 2 are exact in O(n) per query;
        from 3, exact enumeration for short queries and a sampled estimate for long ones.
    target : str or callable, default="exp2"
        The target scores :math:`\psi`, which act as logits: ``"exp2"`` (:math:`2^l - 1`),
        ``"linear"`` (:math:`l`), the position mappings ``"rank_log"``, ``"rank_sqrt"``,
        ``"rank_linear"``, ``"rank_quadratic"``, ``"rank_exp"`` of Xia et al. (2008), or a
        callable on one query's labels. See :mod:`gbrank.objectives._targets`.
    target_k : int, optional
        The top-k mapping of Xia et al. (2009, section 4.3.3): keep the target order in the
        top ``target_k`` positions and give every document below a common small value.
    n_samples : int, default=16
        Prefixes drawn per query and call for the sampled estimate (``k >= 3``, long queries).
    seed : int, default=0
        Seed of the sampled estimate.
    exact_limit : int, default=1000
        Largest prefix tree enumerated exactly for ``k >= 3``; 0 always samples.
    ignore_all_equal : bool, default=True
        Zero loss and gradient for queries whose targets are all equal.
    hess_floor : float, default=1e-6
        Lower bound on every row's hessian.
    hess_scale : float, default=1.0
        Factor on every row's hessian. The hessians are small (about :math:`1/n` in a query
        of :math:`n` documents): with XGBoost set ``min_child_weight`` to about 1e-3, or
        raise ``hess_scale``.

    Returns
    -------
    ListNet

    Notes
    -----
    The hessian is the exact diagonal for ``k <= 2`` and for enumerated queries, and an
    unbiased, non-negative estimate of it for sampled ones. Sample weights multiply each
    row's gradient and hessian.

    %(example)s
    """
    return ListNet(**locals())
