r"""One pairwise kernel with pluggable pair weights: RankNet, W-RankNet, LambdaRank, LambdaLoss.

Every pairwise loss of gbrank is, for one query with scores :math:`s`,

.. math::

    L(s) = c \sum_{(i, j) \in P} a_i\, b_j\, w_{ij}\, \log\big(1 + e^{-\sigma (s_i - s_j)}\big),

summed over the pairs :math:`P` in which :math:`i` should rank above :math:`j`, with a
constant :math:`c` (:math:`1/\ln 2` for the papers' base-2 logarithm, 1 for LightGBM's
natural one), a pair weight :math:`w_{ij}` chosen by the ``weighting`` and optional per-row
factors :math:`a_i` (on the preferred document) and :math:`b_j` (on the other one).

The weights
-----------
Ranks :math:`r = 1, 2, \dots` are the current ranking by score, tied scores in input row
order (a stable sort, as LightGBM's). :math:`v` is a per-row value (a gain, a 0/1
relevance, a stop probability), :math:`D` a discount table and :math:`Z^{-1}` a per-query
normaliser, all fixed per dataset.

* ``"constant"``: :math:`w = 1` (RankNet; W-RankNet puts its weights in :math:`a`).
* ``"ndcg"``: :math:`|v_i - v_j|\,|D(r_i) - D(r_j)|\,Z^{-1}`, the change of NDCG when the two
  documents swap places (LambdaRank).
* ``"map"``, ``"mrr"``, ``"err"``: the absolute change of AP, RR or ERR when the two swap
  places, computed in :math:`O(1)` per pair from prefix sums (AP, RR) or from running
  products along the inner loop (ERR, without any division).
* ``"ndcg_loss2"``: :math:`|v_i - v_j|\,\delta_{ij}\,Z^{-1}` with
  :math:`\delta_{ij} = |D(|r_i - r_j|) - D(|r_i - r_j| + 1)|` (LambdaLoss, NDCG-Loss2).
* ``"ndcg_loss2pp"``: :math:`|v_i - v_j|\,(|D(r_i) - D(r_j)| + \mu\,\delta_{ij})\,Z^{-1}`.
* ``"ndcg_loss1"``: every ordered pair :math:`(i, j)`, :math:`i \ne j`, whatever the labels,
  weighted :math:`v_i\, D(r_i)\, Z^{-1}`.

Except for NDCG-Loss1, :math:`P` holds the pairs with :math:`v_i > v_j` (equal values make
no pair). The weights depend on the current ranks, so they are computed from the scores at
every call and **held fixed within an iteration**, as LambdaMART does: the gradient and
hessian returned are those of :math:`L` with the weights (and the normalisation below)
frozen at the current scores.

``norm=True`` applies LightGBM's ``lambdarank_norm``: each pair weight is divided by
:math:`0.01 + |s_i - s_j|` (unless all scores of the query are equal) and the query's
gradients and hessians are multiplied by :math:`\log_2(1 + S)/S`, with :math:`S` the sum of
twice the absolute pair gradients; both factors are frozen like the weights.

Truncation
----------
With ``truncation=T``, only the pairs with a member among the first :math:`T` positions of
the current ranking count (LightGBM's ``lambdarank_truncation_level``); with
``top_ties=True`` the documents tied with the :math:`T`-th score are all among them, so the
pair set does not depend on the row order (RankNet's rule). The outer loop runs over those
top positions and the inner one over every later position: :math:`O(n T)` per query after an
:math:`O(n \log n)` sort.

Gradient and hessian
--------------------
With :math:`z = \sigma (s_i - s_j)`, :math:`\rho = 1 / (1 + e^{z})` and :math:`W = c\, a_i
b_j w_{ij}`, each pair adds :math:`-\sigma W \rho` to :math:`g_i`, :math:`+\sigma W \rho` to
:math:`g_j`, and :math:`\sigma^2 W \rho (1 - \rho)` to both hessians: the exact diagonal
for fixed weights. :math:`\rho_{ij} = E_j / (E_i + E_j)` with :math:`E_t = e^{\sigma (s_t -
\max s)}`, one exponential per document (in a query whose scores span more than
:math:`700/\sigma`, where :math:`E_t` would lose precision, :math:`e^{-|z|}` per pair); the
loss uses :math:`e^{-|z|}` only.

Use from other objectives
-------------------------
::

    from gbrank.objectives._pairwise import PairSettings

    pairs = PairSettings(weighting="ndcg", truncation=30, natural_log=True).prepare(
        values=gains, offsets=offsets, discount=disc, inv_norm=inv_z)
    grad, hess = pairs.grad_hess(scores, high=a, low=b)     # a_i, b_j: per-row factors
    loss, as_high, as_low = pairs.loss(scores, high=a, low=b, shares=True)

``values``, ``offsets`` (int64 group offsets), ``high`` and ``low`` are flat per-row
arrays. ``shares=True`` also returns, per row, its loss as the preferred member with its
own factor left out (:math:`\sum_j b_j w_{ij} \phi_{ij}`) and as the other member
(:math:`\sum_i a_i w_{ij} \phi_{ij}`): what inverse-propensity estimators (Unbiased
LambdaMART, :math:`a_i = 1/t^+_i`, :math:`b_j = 1/t^-_j`) need to update the propensities.
:func:`swap_deltas` returns the weight matrix of one query, for checks and plots.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .._parallel import over_queries
from .._sort import sort_desc
from .._validation import check_scores
from ._base import RankingObjective

__all__ = ["PairSettings", "Pairs", "PairwiseObjective", "WEIGHTINGS", "swap_deltas"]

CONSTANT, NDCG, MAP, MRR, ERR, LOSS1, LOSS2, LOSS2PP = range(8)
WEIGHTINGS = {
    "constant": CONSTANT,
    "ndcg": NDCG,
    "map": MAP,
    "mrr": MRR,
    "err": ERR,
    "ndcg_loss1": LOSS1,
    "ndcg_loss2": LOSS2,
    "ndcg_loss2pp": LOSS2PP,
}
# LightGBM adds the float literal 0.01f to |s_i - s_j|
NORM_EPS = float(np.float32(0.01))
_EMPTY = np.zeros(0)
# rows per thread of gbrank._parallel: a row costs about 100 ns here (30 pairs of a top
# position), ten times a listwise kernel's, so 512 rows are worth a thread's hand-over
_MIN_ROWS_PER_THREAD = 512

# integer settings of a call, in this order, in one int64 array
MODE, KCUT, TRUNC, TOP_TIES, NORM, SAME, WANT_LOSS = range(7)
# float settings: mu, sigma, c
MU, SIGMA, C = range(3)
# rows of a query's float scratch: sorted scores, sorted reference scores (two rows, the
# sort's buffers), values, factors a and b, gradient and hessian sums, the weights of the
# current row i's pairs as preferred (i over j) and as other (j over i), indexed by j, and
# the exponentials of the scores (see _options)
_S, _R, _R2, _V, _A, _B, _G, _H, _WF, _WB, _E = range(11)
# widest score range (times sigma) of a query whose exponentials _options takes: e^-700
# is still a normal float, with its full precision
_WIDEST = 700.0


@njit(cache=True, inline="always")
def _rank_order(ref, lo, n, scratch, iscratch):
    """Sort rows ``lo:lo+n`` by descending ``ref``, ties in row order: returns the sorted
    values and the local indices (rows of ``scratch`` and ``iscratch``, the sort's buffers)."""
    return sort_desc(ref, lo, n, scratch[_R], iscratch[0], scratch[_R2], iscratch[1])


@njit(cache=True, inline="always")
def _gather(scores, ref, values, high, low, lo, n, isettings):
    """The query sorted by ``ref``: its float ``scratch`` (rows ``_S`` ...), the sorted
    reference scores ``ranked``, local indices ``order``, a buffer ``later`` for the pair lists, and
    ``tops``, the number of top positions whose pairs count (the outer loop's range)."""
    scratch = np.empty((11, n))
    iscratch = np.empty((3, n), dtype=np.int64)
    ranked, order = _rank_order(ref, lo, n, scratch, iscratch)
    s = scratch[_S]
    v = scratch[_V]
    a = scratch[_A]
    b = scratch[_B]
    for t in range(n):
        row = lo + order[t]
        s[t] = scores[row]
        v[t] = values[row]
        a[t] = high[row] if high.size else 1.0
        b[t] = low[row] if low.size else 1.0
        scratch[_G, t] = 0.0
        scratch[_H, t] = 0.0
    trunc = isettings[TRUNC]
    tops = n - 1
    if 0 < trunc < n:
        tops = trunc
        if isettings[TOP_TIES]:
            while tops < n and ranked[tops] == ranked[trunc - 1]:
                tops += 1
        tops = min(tops, n - 1)
    return scratch, ranked, order, iscratch[2], tops


@njit(cache=True, inline="always")
def _options(scratch, ranked, isettings, fsettings):
    """The per-query constants of :func:`_row`, read once (not per pair) from the settings;
    ``gap``: divide by the score gap (LightGBM's norm, unless all scores are equal).

    Also the exponentials :math:`E_t = e^{\\sigma (s_t - \\max s)}` of the query's scores,
    unless its range is ``wide`` (past ``_WIDEST``, where the smallest would lose precision
    or vanish): the logistic of a pair is then a ratio of two of them, one exponential per
    document instead of one per pair.
    """
    s = scratch[_S]
    sigma = fsettings[SIGMA]
    top = s[0]
    bottom = s[0]
    for t in range(s.size):
        top = max(top, s[t])
        bottom = min(bottom, s[t])
    wide = not sigma * (top - bottom) <= _WIDEST
    if not wide:
        for t in range(s.size):
            scratch[_E, t] = math.exp(sigma * (s[t] - top))
    norm = isettings[NORM] != 0
    gap = norm and ranked[0] != ranked[ranked.size - 1]
    return gap, norm, isettings[SAME] != 0, isettings[WANT_LOSS] != 0, sigma, fsettings[C], wide


@njit(cache=True, inline="always")
def _row_view(i, scratch, ranked):
    """The rows of the scratch a pair loop reads, and position ``i``'s own values."""
    s = scratch[_S]
    a = scratch[_A]
    b = scratch[_B]
    return s, a, b, scratch[_WF], scratch[_WB], s[i], ranked[i], a[i], b[i]


@njit(cache=True, inline="always")
def _row(i, cnt, later, scratch, ranked, consts):
    """Add the pairs of sorted position ``i`` with the ``cnt`` later positions listed in
    ``later``, weighted ``scratch[_WF, j]`` (i preferred) and ``scratch[_WB, j]`` (j preferred), to the
    gradient and hessian sums; return the row's share of the norm's sum of lambdas.

    Both directions share one division: :math:`\\rho_{ij} = 1/(1 + e^{z})` with :math:`z =
    \\sigma (s_i - s_j)` and :math:`\\rho_{ji} = 1 - \\rho_{ij}` are :math:`E_j/(E_i + E_j)`
    and :math:`E_i/(E_i + E_j)` with the exponentials of :func:`_options`; in a ``wide``
    query, with :math:`e = e^{-|z|}` computed per pair, :math:`1/(1 + e)` and :math:`e/(1 + e)`
    in the order the sign of z says. No branch depends on the pair, so the loop runs without
    mispredictions.
    """
    gap, norm, same, want_loss, sigma, c, wide = consts
    s, a, b, wf, wb, si, ri, ai, bi = _row_view(i, scratch, ranked)
    g = scratch[_G]
    h = scratch[_H]
    ex = scratch[_E]
    ei = ex[i]
    gsum = 0.0
    hsum = 0.0
    lam = 0.0
    for k in range(cnt):
        j = later[k]
        wij = c * wf[j] * ai * b[j]
        wji = c * wb[j] * a[j] * bi
        if wide:
            z = sigma * (si - s[j])
            e = math.exp(-abs(z))
            up = 1.0 if z <= 0.0 else e
            down = e if z <= 0.0 else 1.0
        else:
            up = ex[j]
            down = ei
        # one division for the norm's 1 / (0.01 + |r_i - r_j|) and the logistic's; a gap
        # past 1e300 (beyond the floats for extreme scores) weighs as 1e300, not 0 * inf
        spread = min(NORM_EPS + abs(ri - ranked[j]), 1e300) if gap else 1.0
        inv = 1.0 / (spread * (up + down))
        rij = up * inv
        rji = down * inv
        gr = sigma * (wji * rji - wij * rij)
        cv = sigma * sigma * (wij + wji) * rij * rji * spread
        gsum += gr
        g[j] -= gr
        hsum += cv
        h[j] += cv
        lam += sigma * (wij * rij + wji * rji)
    g[i] += gsum
    h[i] += hsum
    return 2.0 * lam


@njit(cache=True, inline="always")
def _row_extra(i, cnt, later, scratch, ranked, shares, consts, lam):
    """What only a loss call or a call with reference scores needs of the row: the norm's
    lambdas at the reference scores (replacing ``lam``), the loss and its shares."""
    gap, norm, same, want_loss, sigma, c, wide = consts
    s, a, b, wf, wb, si, ri, ai, bi = _row_view(i, scratch, ranked)
    if norm and not same:
        # the norm's lambdas are frozen at the reference scores
        lam = 0.0
        for k in range(cnt):
            j = later[k]
            sc = c / (NORM_EPS + abs(ri - ranked[j])) if gap else c
            z = sigma * (ri - ranked[j])
            e = math.exp(-abs(z))
            inv = 1.0 / (1.0 + e)
            lam += 2.0 * sigma * sc * (wf[j] * ai * b[j] * (inv if z <= 0.0 else e * inv)
                                       + wb[j] * a[j] * bi * (e * inv if z <= 0.0 else inv))
    loss = 0.0
    if want_loss:
        for k in range(cnt):
            j = later[k]
            sc = c / (NORM_EPS + abs(ri - ranked[j])) if gap else c
            z = sigma * (si - s[j])
            soft = math.log1p(math.exp(-abs(z)))
            # a direction of zero weight is no pair: its softplus may overflow (0 * inf)
            if sc * wf[j] * ai * b[j] != 0.0:
                up = sc * wf[j] * (max(-z, 0.0) + soft)
                loss += up * ai * b[j]
                if shares.shape[1] > 1:
                    shares[0, i] += up * b[j]
                    shares[1, j] += up * ai
            if sc * wb[j] * a[j] * bi != 0.0:
                down = sc * wb[j] * (max(z, 0.0) + soft)
                loss += down * a[j] * bi
                if shares.shape[1] > 1:
                    shares[0, j] += down * bi
                    shares[1, i] += down * a[j]
    return lam, loss


@njit(cache=True, inline="always")
def _keep(j, w, up, wf, wb, later, cnt):
    """List later position ``j`` for the current row when its pair weighs ``w != 0``
    (without a branch), ``up`` when the current row is the preferred one."""
    wf[j] = w if up else 0.0
    wb[j] = 0.0 if up else w
    later[cnt] = j
    return cnt + (w != 0.0)


@njit(cache=True, inline="always")
def _finish(order, lo, scratch, shares, total, loss, isettings, grad, hess, share_high, share_low):
    """Scatter one query's sums back to its rows (LightGBM's norm factor applied); its loss."""
    factor = 1.0
    if isettings[NORM] and total > 0.0:
        # np.log2: numba 0.59 cannot type math.log2
        factor = np.log2(1.0 + total) / total
    for t in range(order.size):
        row = lo + order[t]
        grad[row] = scratch[_G, t] * factor
        hess[row] = scratch[_H, t] * factor
        if share_high.size:
            share_high[row] = shares[0, t] * factor
            share_low[row] = shares[1, t] * factor
    return loss * factor


@njit(cache=True, inline="always")
def _shares(n, share_high):
    # np.empty and a loop: every other numpy constructor is one more implementation to compile
    shares = np.empty((2, n if share_high.size else 1))
    for k in range(2):
        for t in range(shares.shape[1]):
            shares[k, t] = 0.0
    return shares


# The kernels, one per family of weightings, so that a call compiles only the family it
# uses: numba links and re-optimises a callee into every caller, so one function for all
# weightings took three times as long to compile as the constant weights alone. The helpers
# above are inlined in numba's IR for the same reason (compiled apart, each was optimised
# again at every level above it).
CONSTANT_FAMILY, DISCOUNT_FAMILY, LOSS1_FAMILY, MEASURE_FAMILY = range(4)


@njit(cache=True, inline="always")
def _measure_tables(v, n, kcut):
    """Rank weights 1/r within the cut-off; AP's hits and prefix sums of rel/r; ERR's
    probability of reaching each rank; RR's first two relevant positions."""
    rw = np.empty(n + 1)
    for t in range(n + 1):
        rw[t] = 1.0 / (t + 1) if t < min(n, kcut) else 0.0
    hits = np.empty(n)
    prefix = np.empty(n)
    reach = np.empty(n)
    count = 0.0
    acc = 0.0
    p = 1.0
    f1 = n
    f2 = n
    for t in range(n):
        if v[t] > 0.0:
            count += 1.0
            acc += rw[t]
            if f1 == n:
                f1 = t
            elif f2 == n:
                f2 = t
        hits[t] = count
        prefix[t] = acc
        reach[t] = p
        p *= 1.0 - v[t]
    return rw, hits, prefix, reach, f1, f2


def _make_kernel(family):
    """The kernel of one ``family``: the queries ``[q0, q1)`` of a block (run on threads by
    gbrank._parallel), one after the other.

    For each query it lists, for every top position i, the later positions j whose pair weighs
    something (a branch-free compaction) and their weights, by the family's rule, then hands
    them to _row; and to _row_extra unless ``extra`` is None. ``family`` is a constant of the
    closure and ``extra is None`` a test of an argument's type: numba prunes the branches of
    the other families and of ``extra`` before typing, so each family compiles its own code
    alone, under a name of its own (below). Measured on 40k
    rows: the pair loops written in the branches run as fast as four functions written out
    (0.96-1.01 times), in an inlined lister per family 40% slower (8% with the listers
    compiled apart); a per-query function in the closure made a cached first call 0.3 s
    longer (numba pickles a closure's dispatcher to key its cache); and a loop taking the
    per-query function as an argument would never be loaded from numba's disk cache (a
    dispatcher-typed argument makes every process compile it again).

    Names: ``isettings``/``fsettings`` the integer and float settings (MODE ..., MU ...);
    ``scratch`` the query's float rows (_S ...) in ranked order; ``ranked`` its reference
    scores in ranked order and ``order`` the local row of each ranked position; ``later`` the
    listed later positions of the current top position; ``tops`` the number of top positions
    whose pairs count; ``shares`` the loss shares being summed.
    """

    def kernel(q0, q1, scores, ref, values, high, low, offsets, inv_norms, discount, isettings, fsettings,
               grad, hess, share_high, share_low, extra, loss):
        mode = isettings[MODE]
        for q in range(q0, q1):
            lo = offsets[q]
            n = offsets[q + 1] - lo
            loss[q] = 0.0
            if n < 2:
                continue
            inv_norm = inv_norms[q]
            scratch, ranked, order, later, tops = _gather(scores, ref, values, high, low, lo, n, isettings)
            shares = _shares(n, share_high)
            consts = _options(scratch, ranked, isettings, fsettings)
            v = scratch[_V]
            wf = scratch[_WF]
            wb = scratch[_WB]
            if family == DISCOUNT_FAMILY:
                # w = gap * (on_swap * swap + on_delta * delta): exactly gap * swap, gap * delta
                # or gap * (swap + mu * delta), without a branch in the loop
                on_swap = 0.0 if mode == LOSS2 else 1.0
                on_delta = 0.0 if mode == NDCG else (1.0 if mode == LOSS2 else fsettings[MU])
            if family == MEASURE_FAMILY:
                rw, hits, prefix, reach, f1, f2 = _measure_tables(v, n, isettings[KCUT])
            total = 0.0
            part_sum = 0.0
            for i in range(tops):
                cnt = 0
                if family == CONSTANT_FAMILY:
                    # RankNet, W-RankNet: constant weights (times the factors)
                    for j in range(i + 1, n):
                        cnt = _keep(j, inv_norm if v[i] != v[j] else 0.0, v[i] > v[j], wf, wb, later, cnt)
                elif family == DISCOUNT_FAMILY:
                    # LambdaRank's NDCG, NDCG-Loss2, -Loss2++: from the discounts of the two ranks
                    vi = v[i]
                    di = discount[i]
                    for j in range(i + 1, n):
                        gap = abs(vi - v[j]) * inv_norm
                        w = gap * (on_swap * abs(di - discount[j])
                                   + on_delta * abs(discount[j - i - 1] - discount[j - i]))
                        cnt = _keep(j, w, vi > v[j], wf, wb, later, cnt)
                elif family == LOSS1_FAMILY:
                    # NDCG-Loss1: every ordered pair, weighted by the preferred one's gain times discount
                    wi = v[i] * discount[i] * inv_norm
                    for j in range(i + 1, n):
                        wj = v[j] * discount[j] * inv_norm
                        wf[j] = wi
                        wb[j] = wj
                        later[cnt] = j
                        cnt += (wi != 0.0) | (wj != 0.0)
                else:
                    # |change of AP, RR or ERR| when the pair swaps, O(1) per pair (module notes);
                    # ERR: running sum over i < t < j of rw_t R_t prod_{i<u<t} (1 - R_u), and that product
                    err_acc = 0.0
                    err_prod = 1.0
                    for j in range(i + 1, n):
                        w = 0.0
                        if v[i] != v[j]:
                            if mode == MAP:
                                middle = prefix[j - 1] - prefix[i]
                                if v[i] > v[j]:
                                    w = hits[j] * rw[j] - hits[i] * rw[i] - middle
                                else:
                                    w = (hits[i] + 1.0) * rw[i] + middle - hits[j] * rw[j]
                            elif mode == MRR:
                                if v[i] > v[j] and i == f1:
                                    w = rw[i] - rw[min(f2, j)]
                                elif v[i] < v[j] and i < f1:
                                    w = rw[i] - rw[f1]
                            else:
                                w = (v[i] - v[j]) * reach[i] * (err_acc + rw[j] * err_prod - rw[i])
                            w = abs(w) * inv_norm
                        if mode == ERR:
                            err_acc += rw[j] * v[j] * err_prod
                            err_prod *= 1.0 - v[j]
                        cnt = _keep(j, w, v[i] > v[j], wf, wb, later, cnt)
                lam = _row(i, cnt, later, scratch, ranked, consts)
                if extra is not None:
                    lam, part = _row_extra(i, cnt, later, scratch, ranked, shares, consts, lam)
                    part_sum += part
                total += lam
            loss[q] = _finish(order, lo, scratch, shares, total, part_sum, isettings, grad, hess, share_high,
                              share_low)

    # A name per family: numba names compiled code by the function's qualified name and a
    # count of the compiling process, so two families compiled first in two processes would
    # share a symbol, and code that calls one (the engine team's entries) could link to the
    # other once both are read from the disk cache into one process.
    kernel.__qualname__ = f"{kernel.__qualname__}_family{family}"
    return njit(cache=True, nogil=True)(kernel)


_FAMILIES = {CONSTANT: CONSTANT_FAMILY, NDCG: DISCOUNT_FAMILY, LOSS2: DISCOUNT_FAMILY, LOSS2PP: DISCOUNT_FAMILY,
             LOSS1: LOSS1_FAMILY, MAP: MEASURE_FAMILY, MRR: MEASURE_FAMILY, ERR: MEASURE_FAMILY}
_KERNELS = {family: _make_kernel(family) for family in range(4)}


@dataclass(frozen=True)
class PairSettings:
    """How the pairs of a loss are chosen and weighted (see the module notes).

    Attributes
    ----------
    weighting : str
        A key of ``WEIGHTINGS``.
    mu : float
        NDCG-Loss2++'s :math:`\\mu`.
    k : int or None
        Cut-off of MAP, MRR and ERR (NDCG's is in the discount table, zero past it).
    sigma : float
        Slope of the logistic.
    natural_log : bool
        :math:`c = 1` (LightGBM) instead of :math:`1/\\ln 2` (the papers' base 2).
    truncation : int or None
        Keep the pairs with a member among the first ``truncation`` positions.
    top_ties : bool
        Count the documents tied with the ``truncation``-th score as in the top.
    norm : bool
        LightGBM's ``lambdarank_norm``.
    """

    weighting: str = "constant"
    mu: float = 0.0
    k: int | None = None
    sigma: float = 1.0
    natural_log: bool = False
    truncation: int | None = None
    top_ties: bool = False
    norm: bool = False

    def prepare(self, values, offsets, discount=None, inv_norm=None) -> Pairs:
        """Bind per-dataset arrays: per-row ``values``, int64 ``offsets``, a ``discount``
        table (positions 1, 2, ...; at least as long as the longest query, needed by the NDCG
        weightings) and a per-query ``inv_norm`` (default 1)."""
        if self.weighting not in WEIGHTINGS:
            raise ValueError(f"weighting must be one of {', '.join(WEIGHTINGS)}, got {self.weighting!r}")
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        longest = int(np.diff(offsets).max(initial=1))
        table = np.zeros(max(longest, 1))
        if discount is not None:
            given = np.asarray(discount, dtype=np.float64)[:longest]
            table[: given.size] = given
        norm = np.ones(offsets.size - 1) if inv_norm is None else np.asarray(inv_norm, dtype=np.float64)
        return Pairs(self, np.ascontiguousarray(values, dtype=np.float64), offsets, table, np.ascontiguousarray(norm))


@dataclass(frozen=True)
class Pairs:
    """:class:`PairSettings` bound to one dataset; read-only, so it serves concurrent calls."""

    settings: PairSettings
    values: np.ndarray
    offsets: np.ndarray
    discount: np.ndarray
    inv_norm: np.ndarray

    def run(self, scores, grad, hess, *, at=None, high=None, low=None, want_loss=False,
            share_high=None, share_low=None) -> np.ndarray:
        """Fill ``grad`` and ``hess`` (float64, per row) and return the per-query loss.

        ``at``: the scores that fix the ranking and the weights (default ``scores``).
        ``high``/``low``: per-row factors :math:`a`, :math:`b` (default 1).
        ``share_high``/``share_low``: per-row arrays to receive the loss shares.
        """
        cfg = self.settings
        mode = WEIGHTINGS[cfg.weighting]
        ref = scores if at is None else np.ascontiguousarray(at, dtype=np.float64)
        n_max = int(self.offsets[-1]) + 1
        ip = np.array([mode, n_max if cfg.k is None else min(int(cfg.k), n_max), cfg.truncation or 0,
                       cfg.top_ties, cfg.norm, at is None, want_loss], dtype=np.int64)
        fp = np.array([cfg.mu, cfg.sigma, 1.0 if cfg.natural_log else 1.0 / math.log(2.0)])
        # None compiles (and runs) the kernels without the loss and the norm at the reference
        # scores: numba prunes the branch on the argument's type
        extra = _EMPTY if want_loss or (cfg.norm and at is not None) else None
        loss = np.empty(self.offsets.size - 1)
        over_queries(
            _KERNELS[_FAMILIES[mode]], self.offsets,
            scores, ref, self.values,
            _EMPTY if high is None else np.ascontiguousarray(high, dtype=np.float64),
            _EMPTY if low is None else np.ascontiguousarray(low, dtype=np.float64),
            self.offsets, self.inv_norm, self.discount, ip, fp, grad, hess,
            _EMPTY if share_high is None else share_high, _EMPTY if share_low is None else share_low, extra, loss,
            min_rows=_MIN_ROWS_PER_THREAD,
        )
        return loss

    def grad_hess(self, scores, *, high=None, low=None, at=None):
        """Per-row gradient and hessian, float64."""
        scores = np.ascontiguousarray(scores, dtype=np.float64)
        grad = np.zeros(scores.size)
        hess = np.zeros(scores.size)
        self.run(scores, grad, hess, at=at, high=high, low=low)
        return grad, hess

    def loss(self, scores, *, high=None, low=None, at=None, shares=False):
        """Per-query loss; with ``shares=True`` also the per-row shares (as preferred, as other)."""
        scores = np.ascontiguousarray(scores, dtype=np.float64)
        n = scores.size
        as_high = np.zeros(n) if shares else None
        as_low = np.zeros(n) if shares else None
        loss = self.run(scores, np.zeros(n), np.zeros(n), at=at, high=high, low=low, want_loss=True,
                        share_high=as_high, share_low=as_low)
        return (loss, as_high, as_low) if shares else loss


def swap_deltas(pairs: Pairs, scores, query: int = 0) -> np.ndarray:
    """The matrix of pair weights :math:`w_{ij}` (normaliser included, ``norm`` and factors
    left out) of one query at ``scores``, indexed by the query's rows; zero where no pair."""
    lo, hi = int(pairs.offsets[query]), int(pairs.offsets[query + 1])
    n = hi - lo
    out = np.zeros((n, n))
    settings = PairSettings(**{**pairs.settings.__dict__, "norm": False, "natural_log": True, "sigma": 1.0})
    one = Pairs(settings, pairs.values[lo:hi], np.array([0, n], dtype=np.int64), pairs.discount,
                pairs.inv_norm[query : query + 1])
    s = np.ascontiguousarray(scores[lo:hi], dtype=np.float64)
    # the weight of a pair is the loss of the query with only that pair's factors switched on
    for x in range(n):
        for y in range(n):
            if x == y:
                continue
            a = np.zeros(n)
            b = np.zeros(n)
            a[x] = 1.0
            b[y] = 1.0
            phi = math.log1p(math.exp(-(s[x] - s[y])))
            out[x, y] = one.loss(s, high=a, low=b)[0] / phi
    return out


class PairwiseObjective(RankingObjective):
    """A :class:`~gbrank.objectives._base.RankingObjective` over :class:`Pairs`.

    Subclasses give ``self.pairs`` (a :class:`PairSettings`) and ``_inputs(labels, offsets,
    statistics)``,
    returning ``(values, discount, inv_norm, high)`` for :meth:`PairSettings.prepare`
    (``high`` the per-row factors, or None).
    """

    pairs: PairSettings

    def _inputs(self, labels, offsets, statistics):
        raise NotImplementedError

    def _prepare(self, labels, offsets, statistics):
        values, discount, inv_norm, high = self._inputs(labels, offsets, statistics)
        return self.pairs.prepare(values, offsets, discount, inv_norm), high

    def _grad_hess(self, state, scores, grad, hess):
        pairs, high = state
        pairs.run(scores, grad, hess, high=high)

    def _loss(self, state, scores):
        pairs, high = state
        return pairs.loss(scores, high=high)

    def fixed_weight_loss(self, y_true, y_pred, group, at) -> float:
        """The loss at ``y_pred`` with the ranks, pair weights and normalisation frozen at the
        scores ``at``: the function whose exact gradient and hessian
        :meth:`~gbrank.objectives._base.RankingObjective.grad_hess`
        returns at ``y_pred == at``."""
        binding = self.bind(y_true, group)
        pairs, high = binding.state
        scores = check_scores(y_pred, binding.n_rows, binding.offsets)
        ref = check_scores(at, binding.n_rows, binding.offsets)
        return float(np.sum(pairs.loss(scores, high=high, at=ref)))
