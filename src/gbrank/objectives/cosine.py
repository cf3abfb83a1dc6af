r"""RankCosine (Qin et al. 2008; Xia et al. 2008, eq. 10; Xia et al. 2009, section 4.3.2).

The loss
--------
For one query of :math:`n` documents with target scores :math:`\psi` (:mod:`._targets`) and
scores :math:`s`, the paper's cosine loss is

.. math::

    \frac{1}{2} \Big( 1 - \frac{\langle \psi, s \rangle}{\lVert \psi \rVert \, \lVert s \rVert} \Big).

It is undefined at :math:`s = 0`, where every booster starts. gbrank smooths the norm of
the scores,

.. math::

    L(s) = \frac{1}{2} \Big( 1 - \frac{\langle u, s \rangle}{N} \Big), \qquad
    u = \frac{\psi}{\lVert \psi \rVert}, \qquad N = \sqrt{\lVert s \rVert^2 + n \varepsilon^2},

i.e. every document adds :math:`\varepsilon^2` under the square root, so :math:`\varepsilon`
is a per-document score scale and queries of any length are smoothed alike. The smoothed
loss is defined and differentiable everywhere, equals :math:`1/2` at :math:`s = 0`, tends
to the paper's loss when the scores are large against :math:`\varepsilon`, and for a given
:math:`\lVert s \rVert` is smallest at :math:`s \propto \psi`, as the paper's loss is.
Training from zero, the first gradient is :math:`-u / (2N)`: the first tree moves the scores
towards the target direction. (Because the loss is scale-free, a booster started at zero
keeps its scores of the order of :math:`\varepsilon`; :math:`\varepsilon` sets that scale and
nothing else.)

Gradient
--------
The exact gradient of the smoothed loss, with :math:`c = \langle u, s \rangle`:

.. math::

    g_i = -\frac{1}{2N} \Big( u_i - \frac{c\, s_i}{N^2} \Big).

It does not sum to zero: the cosine is not invariant to a shift of the scores.

Hessian (a positive surrogate)
------------------------------
The exact diagonal,

.. math::

    \partial^2_{s_i} L = \frac{1}{2N^3} \Big( 2 u_i s_i + c - \frac{3 c\, s_i^2}{N^2} \Big),

has both signs (the loss is not convex). gbrank returns the constant

.. math::

    h_i = \frac{1}{2N^2},

the curvature of the loss at its minimum (:math:`s \propto u`, large against
:math:`\varepsilon`) in every direction orthogonal to :math:`s`; along :math:`s` the loss is
flat. It is positive, and bounds the exact diagonal within a factor six:
:math:`|\partial^2_{s_i} L| \le 3/N^2 = 6 h_i` (from :math:`|u_i| \le 1`,
:math:`|s_i| \le N` and :math:`|c| \le N`). The Newton step :math:`-g_i / h_i = N u_i - c s_i / N`
is scale-covariant, as the loss is: near the optimum it turns :math:`s` onto the direction of
:math:`\psi` while keeping its length.

Numerics
--------
Norms are computed after dividing by the largest magnitude, so neither scores of any size
nor targets up to :math:`e^{700}` overflow. Queries whose targets are all equal (including
a zero target, where the cosine is undefined, and single documents) have zero loss and
gradient by default; with ``ignore_all_equal=False`` only zero targets are skipped.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .._deprecation import legacy_arguments
from .._docstrings import fill_doc, objective_example
from .._parallel import MIN_ROWS_PER_THREAD_LIGHT, over_queries
from .._validation import check_float
from ._base import RankingObjective
from ._targets import Target, check_target, check_target_labels, target_scores

__all__ = ["Cosine", "CosineState", "cosine"]


# Once per dataset and linear in its size: serial, which compiles faster than a parallel loop.
@njit(cache=True)
def unit_targets(psi, offsets):
    """psi / |psi| per query (0 for a zero target), computed without overflow."""
    u = np.zeros(psi.shape[0])
    for q in range(offsets.shape[0] - 1):
        start = offsets[q]
        end = offsets[q + 1]
        scale = 0.0
        for i in range(start, end):
            scale = max(scale, abs(psi[i]))
        if scale == 0.0:
            continue
        norm2 = 0.0
        for i in range(start, end):
            x = psi[i] / scale
            norm2 += x * x
        norm = math.sqrt(norm2)
        for i in range(start, end):
            u[i] = psi[i] / scale / norm
    return u


@njit(cache=True, nogil=True)
def cosine_kernel(q0, q1, scores, u, offsets, active, eps, grad, hess, want_loss, loss):
    """Fill grad and hess (raw) and ``loss`` (the smoothed cosine loss) of the queries
    ``q0 <= q < q1`` (run over all queries by :func:`gbrank._parallel.over_queries`)."""
    for q in range(q0, q1):
        loss[q] = 0.0
        start = offsets[q]
        end = offsets[q + 1]
        if not active[q]:
            continue
        # N and c in units of `scale`, so that squares cannot overflow
        scale = eps
        for i in range(start, end):
            scale = max(scale, abs(scores[i]))
        e = eps / scale
        norm2 = (end - start) * e * e
        c = 0.0
        for i in range(start, end):
            x = scores[i] / scale
            norm2 += x * x
            c += u[i] * x
        norm = math.sqrt(norm2)  # N / scale
        cos = c / norm  # c / N
        inv_n = 1.0 / (norm * scale)  # 1 / N
        h = 0.5 * inv_n * inv_n
        for i in range(start, end):
            x = scores[i] / scale
            grad[i] = -0.5 * inv_n * (u[i] - cos * x / norm)
            hess[i] = h
        if want_loss:
            loss[q] = 0.5 * (1.0 - cos)


class CosineState(NamedTuple):
    """Per-dataset arrays of :class:`Cosine`: the unit targets and the queries that count."""

    u: np.ndarray
    offsets: np.ndarray
    active: np.ndarray


class Cosine(RankingObjective):
    """RankCosine with a smoothed score norm; build it with :func:`cosine`."""

    factory = "cosine"
    shift_invariant = False
    _setting_names = ("target", "target_k", "eps", "ignore_all_equal")

    def __init__(self, *, target, target_k, eps, ignore_all_equal, hess_floor, hess_scale) -> None:
        super().__init__(hess_floor=hess_floor, hess_scale=hess_scale)
        self.target_k = check_target(target, target_k)
        self.target = target
        self.eps = check_float("eps", eps, min=0.0, strict=True)
        self.ignore_all_equal = bool(ignore_all_equal)

    def _label_check(self, y_true, offsets):
        return check_target_labels(y_true, offsets, self.target)

    def _prepare(self, labels, offsets, statistics):
        psi, informative = target_scores(labels, offsets, self.target, self.target_k)
        u = unit_targets(psi, offsets)
        if self.ignore_all_equal:
            active = informative
        else:
            sizes = np.diff(offsets)
            nonzero = np.add.reduceat(np.abs(u), offsets[:-1]) > 0 if sizes.size else np.zeros(0, dtype=bool)
            active = nonzero.astype(np.uint8)
        return CosineState(u, offsets, active)

    def _run(self, state: CosineState, scores, grad, hess, want_loss):
        loss = np.empty(state.offsets.size - 1)
        over_queries(cosine_kernel, state.offsets, scores, state.u, state.offsets, state.active, self.eps, grad,
                     hess, want_loss, loss, min_rows=MIN_ROWS_PER_THREAD_LIGHT)
        return loss


@legacy_arguments(positional=("target_k", "target"), renamed={"k": "target_k"})
@fill_doc(example=objective_example("gbrank.cosine()", loss=0.4328, gradient=[-0.1955, 0.0121, -0.0732, 0.0024]))
def cosine(
    *, target: Target = "exp2", target_k: int | None = None, eps: float = 1.0, ignore_all_equal: bool = True,
    hess_floor: float = 1e-6, hess_scale: float = 1.0,
) -> Cosine:
    r"""RankCosine: one minus the cosine between the target scores and the scores, halved.

    .. math::

        L(s) = \frac{1}{2} \Big( 1 - \frac{\langle \psi, s \rangle}
               {\lVert \psi \rVert \sqrt{\lVert s \rVert^2 + n \varepsilon^2}} \Big)

    per query of :math:`n` documents (Xia et al. 2008, eq. 10, with the score norm smoothed
    so that training can start from :math:`s = 0`; see the module documentation).

    Parameters
    ----------
    target : str or callable, default="exp2"
        The target scores :math:`\psi`: ``"exp2"`` (:math:`2^l - 1`), ``"linear"``
        (:math:`l`), the position mappings ``"rank_log"``, ``"rank_sqrt"``,
        ``"rank_linear"``, ``"rank_quadratic"``, ``"rank_exp"`` of Xia et al. (2008), or a
        callable on one query's labels. See :mod:`gbrank.objectives._targets`.
    target_k : int, optional
        The top-k mapping of Xia et al. (2009, section 4.3.2): keep the target order in the
        top ``target_k`` positions and give every document below a common small value. None
        uses the plain mapping. The same setting as ListNet's ``target_k``; called ``k``
        before gbrank 0.2.
    eps : float, default=1.0
        Per-document smoothing of the score norm, :math:`N^2 = \lVert s \rVert^2 + n\varepsilon^2`.
    ignore_all_equal : bool, default=True
        Zero loss and gradient for queries whose targets are all equal.
    hess_floor : float, default=1e-6
        Lower bound on every row's hessian.
    hess_scale : float, default=1.0
        Factor on every row's hessian. The surrogate hessian :math:`1/(2N^2)` is about
        :math:`1/(2n(\mathrm{rms}(s)^2 + \varepsilon^2))`: with XGBoost set
        ``min_child_weight`` to about 1e-3, or raise ``hess_scale``.

    Returns
    -------
    Cosine

    Notes
    -----
    The gradient is exact; the hessian is the positive surrogate :math:`1/(2N^2)`, which
    bounds the exact diagonal's magnitude within a factor of six. The loss is not invariant
    to shifting a query's scores. Sample weights multiply each row's gradient and hessian.

    %(example)s
    """
    return Cosine(**locals())
