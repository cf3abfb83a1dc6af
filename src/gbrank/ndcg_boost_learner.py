"""NDCG_Boost (Valizadegan, Jin, Zhang and Mao, NIPS 2009, Algorithm 1) as a native learner.

The paper boosts binary weak rankers ``f(x) in {0, 1}`` to minimise the relaxation ``M`` of
NDCG (eq. 11; formulas in :mod:`gbrank.objectives.ndcg_boost`). One iteration, with the
current ensemble ``F_i = sum_t alpha_t f_t(x_i)``:

1. pair weights ``theta_ij = gamma_ij = exp(F_i - F_j) / (1 + exp(F_i - F_j))**2`` (eq. 14)
   and document weights ``w_i = sum_j (2**r_i - 2**r_j) / Z_q * theta_ij`` (eq. 16), which
   equal ``-dM/dF_i``;
2. the weak ranker maximising ``eta = sum_i |w_i| f(x_i) y_i = sum_i w_i f(x_i)`` with
   ``y_i = sign(w_i)`` (eq. 17);
3. the step (eq. 15)::

       alpha = 1/2 * log( sum_q sum_{i,j} c_ij I(f_j < f_i) / sum_q sum_{i,j} c_ij I(f_j > f_i) ),
       c_ij = (2**r_i - 1) / Z_q * theta_ij,

   the minimiser over ``alpha`` of the upper bound of appendix B::

       M(F + alpha f) <= U(alpha) = M(F) + sum_q sum_{i,j} c_ij (exp(alpha (f_j - f_i)) - 1),

   which follows from Proposition 2 (eq. 13), the convexity bound
   ``1 / (1 + exp(F_i - F_j + alpha (f_i - f_j))) <= 1 / (1 + exp(F_i - F_j))
   + gamma_ij (exp(alpha (f_j - f_i)) - 1)``, summed with the weights of eq. (11);
4. ``F <- F + alpha f``.

Since ``U(0) = M(F)`` and ``U`` is convex in ``alpha``, every step with ``alpha`` between 0 and
the minimiser lowers the bound, so ``M`` never increases. The two sums of eq. (15) differ by
``sum_i w_i f(x_i)``, so the stump that maximises eq. (17) gets ``alpha >= 0``. (The 1/n of the
paper's ``M`` cancels in the ratio.)
"""

from __future__ import annotations

import json
import numbers
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
from numba import njit
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_array, check_is_fitted

from ._parallel import over_queries
from ._sklearn_compat import validate_data
from .gains import gain_values
from .groups import check_group, group_offsets
from .objectives.ndcg_boost import prepare_queries, run_pass, step_sums

__all__ = ["NDCGBoost", "best_stump", "step_size"]

_FORMAT = "gbrank.NDCGBoost"
_FORMAT_VERSION = 1


# --------------------------------------------------------------------------- weak learner
@njit(cache=True, nogil=True)
def _scan_features(f0, f1, sorted_rows, splits, weight, total, best_eta, best_pos, best_pol):
    """Best split of the features ``f0 <= f < f1`` for ``sum_i weight_i f(x_i)``, in one pass
    over each one's order.

    Walking a feature's values upwards, ``below = sum of weights with x <= t``; the stump
    ``[x <= t]`` scores ``below`` and ``[x > t]`` scores ``total - below``. Only thresholds
    between two distinct values are candidates (``splits[d, k]``: the ``k``-th and
    ``k+1``-th smallest values differ); the others do not split the documents.
    """
    n = sorted_rows.shape[1]
    for f in range(f0, f1):
        below = 0.0
        eta = -np.inf
        pos = -1
        pol = 0
        for k in range(n - 1):
            below += weight[sorted_rows[f, k]]
            if splits[f, k]:
                above = total - below
                if above > eta:
                    eta = above
                    pos = k
                    pol = 1
                if below > eta:
                    eta = below
                    pos = k
                    pol = -1
        best_eta[f] = eta
        best_pos[f] = pos
        best_pol[f] = pol


class _PresortedFeatures:
    """Each feature's row order computed once, so that every stump search is one linear pass."""

    def __init__(self, X: np.ndarray) -> None:
        self.X = X
        rows = np.argsort(X, axis=0, kind="stable")
        values = np.take_along_axis(X, rows, axis=0)
        self.sorted_rows = np.ascontiguousarray(rows.T, dtype=np.int32 if X.shape[0] < 2**31 else np.int64)
        splits = np.zeros(self.sorted_rows.shape, dtype=np.bool_)
        splits[:, :-1] = (values[:-1] < values[1:]).T
        self.splits = splits
        # each feature's scan is a "query" of n rows, so that gbrank._parallel splits the
        # features into blocks of about equal work
        self.feature_offsets = np.arange(X.shape[1] + 1, dtype=np.int64) * X.shape[0]

    def best(self, weight: np.ndarray) -> tuple[int, float, int, float]:
        n_features = self.sorted_rows.shape[0]
        eta = np.empty(n_features)
        pos = np.empty(n_features, dtype=np.int64)
        pol = np.empty(n_features, dtype=np.int64)
        over_queries(_scan_features, self.feature_offsets, self.sorted_rows, self.splits, weight, float(weight.sum()),
                     eta, pos, pol)
        feature = int(np.argmax(eta))
        if pos[feature] < 0:
            return -1, 0.0, 0, -np.inf
        k = int(pos[feature])
        lo = self.X[self.sorted_rows[feature, k], feature]
        hi = self.X[self.sorted_rows[feature, k + 1], feature]
        threshold = 0.5 * lo + 0.5 * hi
        if not lo <= threshold < hi:
            threshold = lo
        return feature, float(threshold), int(pol[feature]), float(eta[feature])


def best_stump(X, weight) -> tuple[int, float, int, float]:
    """The decision stump maximising ``sum_i weight_i f(x_i)`` exactly (eq. 17).

    Candidates are every feature ``d``, every threshold ``t`` halfway between two distinct
    consecutive values of ``X[:, d]``, and both polarities ``f = [x_d > t]`` and
    ``f = [x_d <= t]``.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_features)
    weight : array-like of shape (n_rows,)
        Signed document weights (``w_i`` of eq. 16 for NDCG_Boost).

    Returns
    -------
    feature, threshold, polarity, eta
        ``polarity`` is +1 for ``[x > t]`` and -1 for ``[x <= t]``; ``eta`` the maximum.
        ``feature`` is -1 when every feature is constant (no stump splits the rows).
        Ties go to the lowest feature, then the lowest threshold, then ``[x > t]``.
    """
    X = check_array(X, dtype=np.float64)
    weight = np.ascontiguousarray(weight, dtype=np.float64)
    if weight.shape != (X.shape[0],):
        raise ValueError(f"weight has shape {weight.shape} but X has {X.shape[0]} rows")
    return _PresortedFeatures(X).best(weight)


def step_size(lower: float, upper: float, max_alpha: float) -> float:
    """``alpha = 1/2 log(lower / upper)`` of eq. (15), guarded and clipped to ``+-max_alpha``.

    ``lower = sum c_ij I(f_j < f_i)`` and ``upper = sum c_ij I(f_j > f_i)``. When ``upper``
    is 0 the bound keeps falling as ``alpha`` grows and the step is ``max_alpha`` (and
    ``-max_alpha`` for ``lower = 0``); when both are 0 the weak ranker separates no weighted
    pair and the step is 0. Clipping keeps the monotone decrease of ``M``: the bound is convex
    in ``alpha`` with value ``M`` at 0, so it is below ``M`` anywhere between 0 and its minimiser.
    """
    if lower <= 0.0 and upper <= 0.0:
        return 0.0
    if upper <= 0.0:
        return float(max_alpha)
    if lower <= 0.0:
        return -float(max_alpha)
    return float(np.clip(0.5 * np.log(lower / upper), -max_alpha, max_alpha))


def _stump_output(X: np.ndarray, feature: int, threshold: float, polarity: int) -> np.ndarray:
    column = X[:, feature]
    return (column > threshold if polarity > 0 else column <= threshold).astype(np.float64)


# --------------------------------------------------------------------------- estimator
class NDCGBoost(BaseEstimator):
    """NDCG_Boost: boosting decision stumps on the NDCG relaxation (Valizadegan et al. 2009).

    Algorithm 1 of the paper with decision stumps ``f(x) = [x_d > t]`` or ``[x_d <= t]`` as
    weak rankers. Each iteration computes the document weights ``w_i`` (eq. 16), takes the
    stump maximising ``eta = sum_i w_i f(x_i)`` (eq. 17) exactly over all features and
    thresholds, and the step ``alpha`` of eq. (15); see :mod:`gbrank.ndcg_boost_learner` for
    the formulas. The model's score is ``F(x) = sum_t alpha_t f_t(x)``, the paper's ``F``,
    which is twice the score ``s`` of the :func:`gbrank.ndcg_boost` objective (``F = 2 s``);
    the ranking is the same.

    Instead of the paper's sampling of documents in proportion to ``|w_i|`` (used there
    because most classifiers take no weights), the stump search weights the documents
    directly, which maximises eq. (17) exactly and is deterministic. ``sample=True``
    reproduces the paper's scheme.

    Parameters
    ----------
    n_estimators : int, default=100
        Number of boosting iterations (the paper uses 100).
    sample : bool, default=False
        Choose each stump on a sample of ``n_rows`` documents drawn with replacement with
        probabilities ``|w_i| / sum |w|`` and labelled ``sign(w_i)`` (the paper's scheme)
        instead of the exact weights. ``alpha`` (eq. 15) is still exact.
    max_alpha : float, default=10.0
        Bound on ``|alpha|``, used when a denominator of eq. (15) is 0 (the stump orders
        every weighted pair it separates correctly and the bound decreases without limit).
    gain : {"exp2", "linear"} or array, default="exp2"
        Gain of a label: the paper's ``2**r - 1`` (integer labels <= 31), the label itself,
        or ``gain[label]``. Used in ``w_i``, ``Z_q`` and the recorded NDCG.
    random_state : int, numpy Generator or None, default=None
        Seed of the sampling (``sample=True`` only).

    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        The column names of a DataFrame given to :meth:`fit` (only then); :meth:`predict`
        refuses a DataFrame whose columns differ.
    n_estimators_ : int
        Number of stumps kept (fewer than ``n_estimators`` after early stopping, or when no
        stump separates any weighted pair).
    stump_features_, stump_thresholds_, stump_polarities_, alphas_ : ndarray
        The stumps: ``f_t(x) = [x[feature] > threshold]`` for polarity +1 and
        ``[x[feature] <= threshold]`` for -1, and their weights.
    initial_M_ : float
        The relaxation ``M = 1/n_queries * sum_q M_q`` at ``F = 0``.
    history_ : dict of lists
        Per iteration: ``"M"`` (after the step), ``"alpha"``, ``"eta"`` (``sum_i w_i f(x_i)``
        before the step), ``"train_ndcg@k"`` and ``"valid_<i>_ndcg@k"`` for each ``k`` in
        ``eval_at``. NDCG uses the model's gain, the ``log2`` discount, ties in input order
        and 1 for a query without relevant documents (:func:`gbrank.metrics.ndcg`).
    best_iteration_ : int or None
        With early stopping, the iteration (from 1) of the best validation score; the model
        keeps the stumps up to it. None otherwise.

    Examples
    --------
    >>> from gbrank import NDCGBoost
    >>> from gbrank.datasets import make_ranking
    >>> from gbrank.metrics import ndcg
    >>> data = make_ranking(n_queries=30, docs_per_query=10, n_features=5, seed=0)
    >>> model = NDCGBoost(n_estimators=20).fit(data.X, data.y, group=data.group)
    >>> round(ndcg(data.y, model.predict(data.X), data.group, k=5), 4)  # on the training queries
    0.7493
    """

    def __init__(
        self,
        n_estimators: int = 100,
        *,
        sample: bool = False,
        max_alpha: float = 10.0,
        gain="exp2",
        random_state=None,
    ) -> None:
        self.n_estimators = n_estimators
        self.sample = sample
        self.max_alpha = max_alpha
        self.gain = gain
        self.random_state = random_state

    # ------------------------------------------------------------------ fitting
    def _check_params(self) -> None:
        if not isinstance(self.n_estimators, numbers.Integral) or isinstance(self.n_estimators, bool) or self.n_estimators < 1:
            raise ValueError(f"n_estimators must be an int in the range [1, inf), got {self.n_estimators!r}")
        if not isinstance(self.max_alpha, numbers.Real) or not (np.isfinite(self.max_alpha) and self.max_alpha > 0):
            raise ValueError(f"max_alpha must be a finite number > 0, got {self.max_alpha!r}")
        if not isinstance(self.sample, (bool, np.bool_)):
            raise ValueError(f"sample must be True or False, got {self.sample!r}")

    def _check_X(self, X, *, reset: bool) -> np.ndarray:
        # as Ranker: a DataFrame's column names are kept at fit and checked at predict
        return validate_data(self, X, reset=reset, dtype=np.float64, order="C")

    def fit(
        self,
        X,
        y,
        *,
        group=None,
        qid=None,
        eval_set: Sequence[tuple] | None = None,
        eval_at: Sequence[int] = (10,),
        early_stopping_rounds: int | None = None,
    ) -> "NDCGBoost":
        """Run Algorithm 1 for ``n_estimators`` iterations.

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features)
            Features; finite values. The rows of each query are contiguous.
        y : array-like of shape (n_rows,)
            Relevance labels (integers <= 31 with ``gain="exp2"``).
        group : array-like of shape (n_queries,), optional
            Query sizes. Exactly one of ``group`` and ``qid``.
        qid : array-like of shape (n_rows,), optional
            Query id of each row.
        eval_set : list of (X, y, group) tuples, optional
            Validation data (``group`` as sizes); NDCG@k is recorded per iteration as
            ``history_["valid_<i>_ndcg@k"]``.
        eval_at : sequence of int, default=(10,)
            Cut-offs of the recorded NDCG; ``()`` records none (M and alpha only).
        early_stopping_rounds : int, optional
            gbrank's early-stopping rule (:func:`gbrank.engines.watched`): stop when
            NDCG@``eval_at[0]`` on the last evaluation set has not improved for this many
            iterations, and keep the stumps up to the best iteration.

        Returns
        -------
        self
        """
        self._check_params()
        X = self._check_X(X, reset=True)
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"y must be one-dimensional with {X.shape[0]} entries, got shape {y.shape}")
        offsets = group_offsets(X.shape[0], group=group, qid=qid)
        gains = gain_values(y, self.gain, offsets=offsets)
        labels = np.ascontiguousarray(y, dtype=np.float64)
        eval_at = self._check_eval_at(eval_at)
        evals = self._check_eval_set(eval_set)
        if early_stopping_rounds is not None:
            if not evals or not eval_at:
                raise ValueError("early_stopping_rounds needs an eval_set and at least one cut-off in eval_at")
            if not isinstance(early_stopping_rounds, numbers.Integral) or early_stopping_rounds < 1:
                raise ValueError(f"early_stopping_rounds must be an int >= 1, got {early_stopping_rounds!r}")

        state = prepare_queries(gains, offsets)
        sizes = np.diff(offsets)
        n_queries = sizes.size
        features = _PresortedFeatures(X)
        rng = np.random.default_rng(self.random_state) if self.sample else None

        history: dict[str, list] = {"M": [], "alpha": [], "eta": []}
        for k in eval_at:
            history[f"train_ndcg@{k}"] = []
            for e in range(len(evals)):
                history[f"valid_{e}_ndcg@{k}"] = []
        eval_scores = [np.zeros(Xe.shape[0]) for Xe, _, _ in evals]
        stumps: list[tuple[int, float, int, float]] = []
        if early_stopping_rounds is not None:
            from .engines import BestRound, watched

            watched_name, watched_metric = watched([f"valid_{e}" for e in range(len(evals))], [f"ndcg@{eval_at[0]}"])
            best = BestRound(early_stopping_rounds)

        F = np.zeros(X.shape[0])
        w, _, m = run_pass(state, F)
        self.initial_M_ = float(m.sum() / n_queries)
        pair_sums = np.empty((n_queries, 2))
        for _ in range(self.n_estimators):
            target = w if rng is None else self._sampled_weights(w, rng)
            feature, threshold, polarity, _ = features.best(target)
            if feature < 0:
                break
            f = _stump_output(X, feature, threshold, polarity)
            step_sums(F, f, state.offsets, state.order, state.sorted_gain, state.inv_z, pair_sums)
            lower, upper = pair_sums.sum(axis=0)
            alpha = step_size(lower, upper, self.max_alpha)
            if alpha == 0.0:
                break
            eta = float(w @ f)
            F += alpha * f
            w, _, m = run_pass(state, F)
            stumps.append((feature, threshold, polarity, alpha))
            history["M"].append(float(m.sum() / n_queries))
            history["alpha"].append(alpha)
            history["eta"].append(eta)
            if eval_at:
                self._record_ndcg(history, "train", labels, F, sizes, eval_at)
                for e, (Xe, ye, ge) in enumerate(evals):
                    eval_scores[e] += alpha * _stump_output(Xe, feature, threshold, polarity)
                    self._record_ndcg(history, f"valid_{e}", ye, eval_scores[e], ge, eval_at)
            if early_stopping_rounds is not None and best.update(history[f"{watched_name}_{watched_metric}"][-1]):
                break

        if early_stopping_rounds is not None:
            stumps = stumps[: best.best_round]
            self.best_iteration_ = best.best_round
        else:
            self.best_iteration_ = None
        self._set_stumps(stumps)
        self.history_ = history
        return self

    def _record_ndcg(self, history, name, labels, scores, sizes, eval_at) -> None:
        from .metrics import ndcg

        for k in eval_at:
            history[f"{name}_ndcg@{k}"].append(float(ndcg(labels, scores, sizes, k=k, gain=self.gain)))

    @staticmethod
    def _sampled_weights(w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        magnitude = np.abs(w)
        total = magnitude.sum()
        if total == 0.0:
            return w
        counts = rng.multinomial(w.shape[0], magnitude / total)
        return np.sign(w) * counts

    @staticmethod
    def _check_eval_at(eval_at) -> tuple[int, ...]:
        if isinstance(eval_at, numbers.Integral):
            eval_at = (eval_at,)
        cutoffs = tuple(eval_at)
        if any(not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 1 for k in cutoffs):
            raise ValueError(f"eval_at must hold integers >= 1, got {eval_at!r}")
        return tuple(int(k) for k in cutoffs)

    def _check_eval_set(self, eval_set) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        if eval_set is None:
            return []
        out = []
        for e, item in enumerate(eval_set):
            if not isinstance(item, (tuple, list)) or len(item) != 3:
                raise ValueError(f"eval_set[{e}] must be a tuple (X, y, group), got {type(item).__name__}")
            Xe, ye, ge = item
            Xe = self._check_X(Xe, reset=False)
            ye = np.asarray(ye)
            if ye.ndim != 1 or ye.shape[0] != Xe.shape[0]:
                raise ValueError(f"eval_set[{e}]: y must be one-dimensional with {Xe.shape[0]} entries")
            offsets = check_group(ge, Xe.shape[0])
            gain_values(ye, self.gain, offsets=offsets, name=f"eval_set[{e}] y")
            out.append((Xe, ye.astype(np.float64), np.diff(offsets)))
        return out

    def _set_stumps(self, stumps) -> None:
        self.stump_features_ = np.array([s[0] for s in stumps], dtype=np.int64)
        self.stump_thresholds_ = np.array([s[1] for s in stumps], dtype=np.float64)
        self.stump_polarities_ = np.array([s[2] for s in stumps], dtype=np.int64)
        self.alphas_ = np.array([s[3] for s in stumps], dtype=np.float64)
        self.n_estimators_ = len(stumps)

    # ------------------------------------------------------------------ prediction
    def predict(self, X) -> np.ndarray:
        """Scores ``F(x) = sum_t alpha_t f_t(x)``; higher ranks first."""
        scores = None
        for scores in self.staged_predict(X):
            pass
        if scores is None:
            return np.zeros(self._check_X(X, reset=False).shape[0])
        return scores

    def staged_predict(self, X) -> Iterator[np.ndarray]:
        """Scores after each iteration ``1 .. n_estimators_`` (one new array per stage)."""
        check_is_fitted(self, "alphas_")
        X = self._check_X(X, reset=False)
        scores = np.zeros(X.shape[0])
        for t in range(self.n_estimators_):
            f = _stump_output(X, self.stump_features_[t], self.stump_thresholds_[t], self.stump_polarities_[t])
            scores = scores + self.alphas_[t] * f
            yield scores

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict:
        """The fitted model as a JSON-ready dict (format ``gbrank.NDCGBoost``, version 1)."""
        check_is_fitted(self, "alphas_")
        params = self.get_params()
        if not isinstance(params["gain"], str):
            params["gain"] = np.asarray(params["gain"], dtype=np.float64).tolist()
        if not (params["random_state"] is None or isinstance(params["random_state"], numbers.Integral)):
            params["random_state"] = None
        elif params["random_state"] is not None:
            params["random_state"] = int(params["random_state"])
        return {
            "format": _FORMAT,
            "version": _FORMAT_VERSION,
            "params": params,
            "n_features_in": int(self.n_features_in_),
            **({"feature_names_in": [str(c) for c in self.feature_names_in_]}
               if hasattr(self, "feature_names_in_") else {}),
            "initial_M": self.initial_M_,
            "best_iteration": self.best_iteration_,
            "stumps": [
                {
                    "feature": int(self.stump_features_[t]),
                    "threshold": float(self.stump_thresholds_[t]),
                    "polarity": ">" if self.stump_polarities_[t] > 0 else "<=",
                    "alpha": float(self.alphas_[t]),
                }
                for t in range(self.n_estimators_)
            ],
        }

    @classmethod
    def from_dict(cls, doc: dict) -> "NDCGBoost":
        """Rebuild a fitted model from :meth:`to_dict` output (``history_`` is not stored)."""
        if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
            raise ValueError(f"not a {_FORMAT} model document")
        if doc.get("version") != _FORMAT_VERSION:
            raise ValueError(f"unsupported {_FORMAT} model version {doc.get('version')!r} (this gbrank reads {_FORMAT_VERSION})")
        model = cls(**doc["params"])
        model.n_features_in_ = int(doc["n_features_in"])
        if "feature_names_in" in doc:
            model.feature_names_in_ = np.asarray(doc["feature_names_in"], dtype=object)
        model.initial_M_ = float(doc["initial_M"])
        model.best_iteration_ = doc["best_iteration"]
        stumps = []
        for t, s in enumerate(doc["stumps"]):
            if s["polarity"] not in (">", "<="):
                raise ValueError(f"stump {t}: polarity must be '>' or '<=', got {s['polarity']!r}")
            feature = int(s["feature"])
            if not 0 <= feature < model.n_features_in_:
                raise ValueError(f"stump {t}: feature {feature} out of range for {model.n_features_in_} features")
            stumps.append((feature, float(s["threshold"]), 1 if s["polarity"] == ">" else -1, float(s["alpha"])))
        model._set_stumps(stumps)
        return model

    def save_model(self, path) -> None:
        """Write the model as a small JSON document (stumps and alphas); see :meth:`to_dict`."""
        Path(path).write_text(json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load_model(cls, path) -> "NDCGBoost":
        """Read a model written by :meth:`save_model`."""
        return cls.from_dict(json.loads(Path(path).read_text()))
