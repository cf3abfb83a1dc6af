r"""The Plackett–Luce family: ListMLE, top-k ListMLE, W-ListMLE and user position weights.

For one query with scores :math:`s` and labels :math:`l`, let :math:`y` be a permutation
consistent with the labels (labels descending). The position-weighted Plackett–Luce negative
log-likelihood is

.. math::

    L(s) = \sum_{i=1}^{n} w_i \Big( \log \sum_{t \ge i} e^{s_{y(t)}} - s_{y(i)} \Big).

With :math:`p_i(d) = e^{s_d} / \sum_{t \ge i} e^{s_{y(t)}}` the softmax of document :math:`d`
among positions :math:`i..n` and :math:`r(d)` its position in :math:`y`,

.. math::

    g_d = \sum_{i \le r(d)} w_i\, p_i(d) - w_{r(d)}, \qquad
    h_d = \sum_{i \le r(d)} w_i\, p_i(d) \big(1 - p_i(d)\big).

:math:`h_d` is the exact diagonal of the hessian, which is positive semi-definite. One kernel
serves every member of the family; they differ only in the weights :math:`w_i`:

* ListMLE (Xia et al. 2008): :math:`w_i = 1`;
* top-k ListMLE (Xia et al. 2009, eq. 10): :math:`w_i = [i \le k]`;
* W-ListMLE (Chen et al. 2009, section 4): :math:`w_i = G(l_{y(i)}) D(i)`;
* any user-supplied position weights.

The kernel sorts nothing per iteration: the label order is computed once per dataset, and
suffix log-sum-exps and prefix sums of :math:`w_i e^{-\mathrm{lse}_i}` (kept in log space)
give every gradient in O(n) per query, for scores of any magnitude.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, Literal, NamedTuple, Union

import numpy as np
from numba import njit

from .._deprecation import legacy_arguments
from .._docstrings import fill_doc, objective_example
from .._parallel import over_queries
from .._sort import order_desc
from .._validation import check_choice, check_int
from ..gains import Discount, Gain, discount_values, gain_values
from ..groups import varies_per_query
from ._base import RankingObjective
from ._label_order import label_order, ndcg_weights
from ._logspace import logaddexp as _logaddexp
from ._random import next_uniform, query_keys, query_stream

__all__ = ["listmle", "listmle_topk", "plackett_luce", "pl_query", "wlistmle", "PlackettLuce", "PLState"]

Ties = Literal["random", "score", "input"]
_TIE_MODES = ("input", "random", "score")
PositionWeights = Union[np.ndarray, list, Callable[[np.ndarray], np.ndarray]]


@njit(cache=True, inline="always")
def _permutation(scores, order, tie_end, start, end, head, key, shuffle):
    """Rows of one query in a label-consistent order: ``order``'s, with the tied blocks that
    begin within the first ``head`` positions shuffled when ``shuffle`` is set.

    Past the last positive weight the loss depends on which documents remain, not on their
    order, so later blocks are left as they are.
    """
    if not shuffle:
        return order[start:end]
    perm = order[start:end].copy()
    state = query_stream(key, scores, start, end)
    b = start
    while b < start + head:
        e = tie_end[b]
        for i in range(e - 1, b, -1):
            state, u = next_uniform(state)
            j = b + int(u * (i - b + 1))
            perm[i - start], perm[j - start] = perm[j - start], perm[i - start]
        b = e
    return perm


@njit(cache=True)
def _score_query_order(scores, order, tie_end, head, offsets, q, out):
    start = offsets[q]
    b = start
    while b < start + head[q]:
        e = tie_end[b]
        if e - b > 1:
            values = np.empty(e - b)
            for i in range(e - b):
                values[i] = scores[order[b + i]]
            idx = order_desc(values)
            for i in range(e - b):
                out[b + i] = order[b + idx[i]]
        b = e


# ties="score" is its own kernel, run before the loss kernels, so that the default random
# tie-breaking compiles no sort.
@njit(cache=True, nogil=True)
def _score_order_block(q0, q1, scores, order, tie_end, head, offsets, out):
    for q in range(q0, q1):
        _score_query_order(scores, order, tie_end, head, offsets, q, out)


def score_order(scores, order, tie_end, head, offsets):
    """``order`` with each tied block that begins within a query's first ``head`` positions
    sorted by current score, descending (stable): the most likely consistent permutation."""
    out = order.copy()
    over_queries(_score_order_block, offsets, scores, order, tie_end, head, offsets, out)
    return out


# Below this spread of scores within a query, exp(s - max) and its square neither underflow
# nor make 1/Z^2 overflow, so the kernel can work in linear space with one exp per document.
_LINEAR_SPAN = 300.0


@njit(cache=True, inline="always")
def _grad_hess_linear(scores, perm, weights, wstart, head, smax, scale, grad, hess):
    m = perm.shape[0]
    e = np.empty(m)
    for i in range(m):
        e[i] = np.exp(scores[perm[i]] - smax)
    z = np.empty(head)
    acc = 0.0
    for i in range(m - 1, head - 1, -1):
        acc += e[i]
    for i in range(head - 1, -1, -1):
        acc += e[i]
        z[i] = acc
    a = 0.0
    b = 0.0
    for i in range(m):
        w = 0.0
        if i < head:
            w = weights[wstart + i]
            if w > 0.0:
                inv = 1.0 / z[i]
                a += w * inv
                b += w * inv * inv
        d = perm[i]
        first = e[i] * a
        grad[d] += scale * (first - w)
        h = first - e[i] * e[i] * b
        hess[d] += scale * (h if h > 0.0 else 0.0)


@njit(cache=True, inline="always")
def _log_space(scores, perm, weights, wstart, head, scale, grad, hess, want_grad):
    m = perm.shape[0]
    # lse_i = top[i] + logz[i], with top[i] the largest score among positions i..m-1: scores
    # are only ever subtracted from a score, never added to a log-normaliser, so that no
    # digit of log z is lost against scores of 1e30
    top = np.empty(m)
    logz = np.empty(head)
    mx = -np.inf
    z = 0.0
    loss = 0.0
    for i in range(m - 1, -1, -1):
        s = scores[perm[i]]
        if s > mx:
            z = z * np.exp(mx - s) + 1.0
            mx = s
        else:
            z += np.exp(s - mx)
        top[i] = mx
        if i < head:
            logz[i] = np.log(z)
            w = weights[wstart + i]
            if w > 0.0:
                loss += w * ((mx - s) + logz[i])
    if not want_grad:
        return scale * loss
    # ca = log sum_{i<=r} w_i exp(top[r] - lse_i), cb = log sum_{i<=r} w_i exp(2 (top[r] - lse_i))
    ca = -np.inf
    cb = -np.inf
    for i in range(m):
        if i > 0:
            drop = top[i - 1] - top[i]
            ca -= drop
            cb -= 2.0 * drop
        w = 0.0
        if i < head:
            w = weights[wstart + i]
            if w > 0.0:
                lw = np.log(w)
                ca = _logaddexp(ca, lw - logz[i])
                cb = _logaddexp(cb, lw - 2.0 * logz[i])
        d = perm[i]
        x = scores[d] - top[i]
        first = np.exp(x + ca)
        grad[d] += scale * (first - w)
        h = first - np.exp(2.0 * x + cb)
        hess[d] += scale * (h if h > 0.0 else 0.0)
    return scale * loss


@njit(cache=True)
def pl_query(scores, perm, weights, wstart, head, scale, grad, hess, want_grad, want_loss):
    """The position-weighted PL loss of one permutation, and its gradient and hessian.

    ``perm`` lists the query's rows in the target order, position ``i`` weighted
    ``weights[wstart + i]`` for ``i < head`` and 0 from ``head`` on. With ``want_grad``,
    ``scale`` times the gradient and the exact diagonal hessian are added to ``grad`` and
    ``hess`` at the rows of ``perm``; with ``want_loss`` the loss is computed (in log space)
    and ``scale`` times it returned, else 0.
    """
    if want_grad and not want_loss:
        smax = -np.inf
        smin = np.inf
        for i in range(perm.shape[0]):
            smax = max(smax, scores[perm[i]])
            smin = min(smin, scores[perm[i]])
        if smax - smin < _LINEAR_SPAN:
            _grad_hess_linear(scores, perm, weights, wstart, head, smax, scale, grad, hess)
            return 0.0
    return _log_space(scores, perm, weights, wstart, head, scale, grad, hess, want_grad)


@njit(cache=True, inline="always")
def _query_perm(scores, order, tie_end, head, offsets, active, shuffle, keys, q):
    """The query's rows in a label-consistent order, or an empty array for a query that
    carries no loss (inactive, a single document, no positive weight)."""
    start = offsets[q]
    end = offsets[q + 1]
    if not active[q] or end - start < 2 or head[q] == 0:
        return order[start:start]
    return _permutation(scores, order, tie_end, start, end, head[q], keys[q], shuffle)


@njit(cache=True, nogil=True)
def pl_grad_hess(q0, q1, scores, order, tie_end, weights, head, offsets, active, shuffle, keys, grad, hess):
    """Gradient and exact diagonal hessian of the position-weighted PL loss of queries
    ``q0 <= q < q1`` (run over all queries by :func:`gbrank._parallel.over_queries`).

    ``order`` lists each query's rows by label (descending; ties in input order, or by score
    from :func:`score_order`), ``tie_end[j]`` is the end of the tied block holding sorted
    position ``j``, ``weights[j]`` is the weight of sorted position ``j`` and ``head[q]`` is
    one past the last positive weight of query ``q``. With ``shuffle``, tied blocks are
    shuffled by draws hashed from the query's key ``keys[q]`` (its seed and labels) and its
    scores (:mod:`gbrank.objectives._random`). Queries with
    ``active[q] == 0`` are left at zero; ``grad`` and ``hess`` must be zero on entry.
    """
    for q in range(q0, q1):
        perm = _query_perm(scores, order, tie_end, head, offsets, active, shuffle, keys, q)
        if perm.shape[0]:
            pl_query(scores, perm, weights, offsets[q], head[q], 1.0, grad, hess, True, False)


@njit(cache=True, nogil=True)
def pl_loss(q0, q1, scores, order, tie_end, weights, head, offsets, active, shuffle, keys, out):
    """Per-query position-weighted PL negative log-likelihood of queries ``q0 <= q < q1``
    into ``out`` (0 for inactive queries)."""
    no_grad = np.empty(0)
    for q in range(q0, q1):
        perm = _query_perm(scores, order, tie_end, head, offsets, active, shuffle, keys, q)
        out[q] = 0.0
        if perm.shape[0]:
            out[q] = pl_query(scores, perm, weights, offsets[q], head[q], 1.0, no_grad, no_grad, False, True)


class PLState(NamedTuple):
    """Per-dataset arrays of :class:`PlackettLuce` (see ``pl_grad_hess``)."""

    order: np.ndarray
    tie_end: np.ndarray
    weights: np.ndarray
    head: np.ndarray
    offsets: np.ndarray
    active: np.ndarray
    keys: np.ndarray


class PlackettLuce(RankingObjective):
    """Position-weighted Plackett–Luce objective; build it with the factory functions.

    See :func:`plackett_luce` for the parameters.
    """

    def __init__(
        self,
        weight_fn: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray],
        params: dict[str, Any],
        factory: str,
        *,
        ties: Ties = "random",
        seed: int = 0,
        ignore_all_equal: bool = True,
        label_gain: Gain | None = None,
        hess_floor: float = 1e-6,
        hess_scale: float = 1.0,
    ) -> None:
        super().__init__(hess_floor=hess_floor, hess_scale=hess_scale)
        self.factory = factory
        self.ties = check_choice("ties", ties, _TIE_MODES)
        self.seed = check_int("seed", seed, min=0)
        self.ignore_all_equal = bool(ignore_all_equal)
        self._weight_fn = weight_fn
        self._factory_params = params
        self._label_gain = label_gain

    def _params(self) -> dict[str, Any]:
        return {
            **{key: list(value) if isinstance(value, tuple) else value for key, value in self._factory_params.items()},
            "ties": self.ties,
            "seed": self.seed,
            "ignore_all_equal": self.ignore_all_equal,
            **super()._params(),
        }

    def _label_check(self, y_true, offsets):
        if self._label_gain is not None:
            gain_values(y_true, self._label_gain, offsets=offsets)
        return super()._label_check(y_true, offsets)

    def _prepare(self, labels, offsets, statistics):
        n = labels.shape[0]
        sizes = np.diff(offsets)
        blocks = label_order(labels, offsets)
        weights = np.ascontiguousarray(
            self._weight_fn(blocks.sorted_labels, blocks.position, blocks.best_rank, offsets), dtype=np.float64
        )
        if weights.shape != (n,) or not np.isfinite(weights).all() or weights.min(initial=0.0) < 0:
            raise ValueError("position weights must be finite and non-negative")
        if self.ignore_all_equal and n:
            active = varies_per_query(labels, offsets).astype(np.uint8)
        else:
            active = np.ones(sizes.size, dtype=np.uint8)
        last_positive = np.where(weights > 0, blocks.position, 0)
        head = np.maximum.reduceat(last_positive, offsets[:-1]) if sizes.size else np.zeros(0, np.int64)
        # the draws key on each row's rank among its query's distinct labels, not on the label
        # values: the loss depends on their order only, and so do its random tie-breaks
        first_of_block = np.ones(n, dtype=bool)
        first_of_block[1:] = blocks.block_start[1:] != blocks.block_start[:-1]
        block_number = np.cumsum(first_of_block)
        ranks = np.empty(n, dtype=np.float64)
        if n:  # an empty query's start is read by none of its (no) rows
            ranks[blocks.order] = block_number - block_number[np.minimum(offsets[:-1], n - 1)][blocks.qid]
        return PLState(blocks.order, blocks.block_end, weights, head.astype(np.int64), offsets, active,
                       query_keys(self.seed, ranks, offsets))

    def _kernel_args(self, state: PLState, scores):
        order = state.order
        if self.ties == "score":
            order = score_order(scores, order, state.tie_end, state.head, state.offsets)
        return (
            scores, order, state.tie_end, state.weights, state.head, state.offsets, state.active,
            self.ties == "random", state.keys,
        )

    def _grad_hess(self, state, scores, grad, hess):
        over_queries(pl_grad_hess, state.offsets, *self._kernel_args(state, scores), grad, hess)

    def _loss(self, state, scores):
        out = np.empty(state.offsets.size - 1)
        over_queries(pl_loss, state.offsets, *self._kernel_args(state, scores), out)
        return out


_COMMON_DOC = """
    ties : {"random", "score", "input"}, default="random"
        How documents with equal labels are ordered in the target permutation :math:`y`.
        ``"random"``: a fresh consistent permutation at every iteration, drawn from a hash of
        ``seed``, the query's labels and its current scores (reproducible run to run,
        thread-safe, and the same on one machine and on any number of Dask workers);
        ``"score"``: by current score within each label (the most likely consistent
        permutation); ``"input"``: input row order (deterministic).
    seed : int, default=0
        Seed of the random tie-breaking.
    ignore_all_equal : bool, default=True
        Give zero gradient to queries whose labels are all equal: every consistent
        permutation is then equally right, so they carry no ranking information.
    hess_floor : float, default=1e-6
        Lower bound on every row's hessian.
    hess_scale : float, default=1.0
        Factor on every row's hessian. Plackett–Luce hessians are small (about
        :math:`1/n` for a query of :math:`n` documents), so with XGBoost set
        ``min_child_weight`` to about 1e-3 (its default of 1 stops trees from growing on
        long lists) or raise ``hess_scale``. LightGBM's default ``min_sum_hessian_in_leaf``
        of 1e-3 suits them.

    Notes
    -----
    Sample weights multiply each row's gradient and hessian. Single-document queries have
    zero loss and zero gradient. The hessian returned is the exact diagonal, floored at
    ``hess_floor``.
"""


def _uniform_weights(sorted_labels, position, best_rank, offsets):
    return np.ones(sorted_labels.shape[0])


def _topk_weights(k, sorted_labels, position, best_rank, offsets):
    return (position <= k).astype(np.float64)


def _table_weights(table, sorted_labels, position, best_rank, offsets):
    padded = np.concatenate((table, [0.0]))
    return padded[np.minimum(position, table.size + 1) - 1]


def _callable_weights(func, sorted_labels, position, best_rank, offsets):
    out = np.empty(sorted_labels.shape[0])
    for start, end in zip(offsets[:-1], offsets[1:]):
        w = np.asarray(func(sorted_labels[start:end]), dtype=np.float64)
        if w.shape != (end - start,):
            raise ValueError(f"position_weights returned shape {w.shape} for a query of {end - start} documents")
        out[start:end] = w
    return out


def _ndcg_weights(gain, discount, cutoff, discount_at, sorted_labels, position, best_rank, offsets):
    return ndcg_weights(sorted_labels, position if discount_at == "rank" else best_rank, gain, discount, cutoff)


def _common(settings: dict[str, Any]) -> dict[str, Any]:
    return {key: settings[key] for key in ("ties", "seed", "ignore_all_equal", "hess_floor", "hess_scale")}


@fill_doc(common=_COMMON_DOC, example=objective_example(
    "gbrank.plackett_luce([1.0, 0.5])", loss=2.3309, gradient=[-0.7339, 0.7378, -0.3354, 0.3315],
))
def plackett_luce(
    position_weights: PositionWeights, *, ties: Ties = "random", seed: int = 0, ignore_all_equal: bool = True,
    hess_floor: float = 1e-6, hess_scale: float = 1.0,
) -> PlackettLuce:
    r"""Plackett–Luce loss with user-supplied position weights.

    .. math::

        L(s) = \sum_i w_i \Big( \log \sum_{t \ge i} e^{s_{y(t)}} - s_{y(i)} \Big)

    Parameters
    ----------
    position_weights : array-like or callable
        An array ``w`` gives weight ``w[i - 1]`` to position ``i`` of the label-sorted list
        (positions past its end get 0), or a callable receiving one query's labels sorted in
        descending order and returning one non-negative weight per position.
    %(common)s

    %(example)s
    """
    if callable(position_weights):
        weight_fn = partial(_callable_weights, position_weights)
    else:
        table = np.array(position_weights, dtype=np.float64)
        if table.ndim != 1 or not np.isfinite(table).all() or table.min(initial=0.0) < 0:
            raise ValueError("position_weights must be a 1-D array of finite, non-negative values")
        table.setflags(write=False)
        weight_fn = partial(_table_weights, table)
        # kept as a tuple, shown as a list: nothing changes it through the caller's list or a copy
        position_weights = tuple(table.tolist())
    return PlackettLuce(weight_fn, {"position_weights": position_weights}, "plackett_luce", **_common(locals()))


@fill_doc(common=_COMMON_DOC, example=objective_example(
    "gbrank.listmle()", loss=4.5091, gradient=[-0.7339, 1.7267, -0.7687, -0.2241],
))
def listmle(
    *, ties: Ties = "random", seed: int = 0, ignore_all_equal: bool = True, hess_floor: float = 1e-6,
    hess_scale: float = 1.0,
) -> PlackettLuce:
    r"""ListMLE (Xia et al., 2008): the Plackett–Luce likelihood of a label-consistent order.

    .. math::

        L(s) = \sum_{i=1}^{n} \Big( \log \sum_{t \ge i} e^{s_{y(t)}} - s_{y(i)} \Big)

    Parameters
    ----------
    %(common)s

    %(example)s
    """
    return PlackettLuce(_uniform_weights, {}, "listmle", **_common(locals()))


@legacy_arguments(positional=("k",))
@fill_doc(common=_COMMON_DOC, example=objective_example(
    "gbrank.listmle_topk(k=2)", loss=3.338, gradient=[-0.7339, 1.0367, -0.7687, 0.4658],
))
def listmle_topk(
    *, k: int = 10, ties: Ties = "random", seed: int = 0, ignore_all_equal: bool = True, hess_floor: float = 1e-6,
    hess_scale: float = 1.0,
) -> PlackettLuce:
    r"""Top-k ListMLE (Xia et al., 2009, eq. 10): the likelihood of the top k positions only.

    .. math::

        L(s) = \sum_{i=1}^{\min(k, n)} \Big( \log \sum_{t \ge i} e^{s_{y(t)}} - s_{y(i)} \Big)

    The normalisers still run over every remaining document, so documents below position k
    are pushed down, but their order among themselves is not learned.

    Parameters
    ----------
    k : int, default=10
        Number of top positions in the likelihood.
    %(common)s

    %(example)s
    """
    k = check_int("k", k, min=1)
    return PlackettLuce(partial(_topk_weights, k), {"k": k}, "listmle_topk", **_common(locals()))


@legacy_arguments(positional=("gain", "discount", "k", "discount_at"), renamed={"cutoff": "k"})
@fill_doc(common=_COMMON_DOC, example=objective_example(
    "gbrank.wlistmle()", loss=5.2421, gradient=[-2.2016, 1.6936, -0.253, 0.761],
))
def wlistmle(
    *, gain: Gain = "exp2", discount: Discount = "log2", k: int | None = None,
    discount_at: Literal["rank", "best_rank"] = "rank", ties: Ties = "random", seed: int = 0,
    ignore_all_equal: bool = True, hess_floor: float = 1e-6, hess_scale: float = 1.0,
) -> PlackettLuce:
    r"""W-ListMLE (Chen et al., 2009, section 4): ListMLE weighted towards NDCG.

    .. math::

        L(s) = \sum_{i=1}^{n-1} G(l_{y(i)})\, D(i)
               \Big( \log \sum_{t \ge i} e^{s_{y(t)}} - s_{y(i)} \Big)

    with :math:`G(z) = 2^z - 1` and :math:`D(r) = 1/\log_2(1 + r)` by default, and
    :math:`D(r) = 0` for :math:`r` past the cut-off :math:`C`. Weighted so, the loss is an
    upper bound of :math:`1 - \mathrm{NDCG}` tighter than ListMLE's.

    Parameters
    ----------
    gain : {"exp2", "linear"} or array, default="exp2"
        The gain :math:`G`, as in :mod:`gbrank.gains`.
    discount : {"log2", "zipf"}, float, array or callable, default="log2"
        The discount :math:`D`, as in :mod:`gbrank.gains`.
    k : int, optional
        The paper's cut-off :math:`C`: positions past it get zero discount (NDCG@k), so
        with ``discount_at="rank"`` only the top ``k`` positions enter the likelihood, as in
        :func:`listmle_topk`. None keeps all. (Called ``cutoff`` before gbrank 0.2.)
    discount_at : {"rank", "best_rank"}, default="rank"
        ``"rank"`` discounts position :math:`i` by :math:`D(i)` (the paper's W-ListMLE);
        ``"best_rank"`` by :math:`D(1 + \sum_{k > l} n_k)`, the best position a document
        of label :math:`l` can hold (the weight of the paper's W-RankNet).
    %(common)s

    %(example)s
    """
    k = check_int("k", k, min=1, optional=True)
    discount_at = check_choice("discount_at", discount_at, ("rank", "best_rank"))
    discount_values(1, discount)

    weight_fn = partial(_ndcg_weights, gain, discount, k, discount_at)
    params = {"gain": gain, "discount": discount, "k": k, "discount_at": discount_at}
    return PlackettLuce(weight_fn, params, "wlistmle", label_gain=gain, **_common(locals()))
