"""The registry of gbrank objectives: one entry per factory, read by everything that lists them.

The package exports, the benchmark harness and its command line, the test catalogues and the
documentation (the losses table, the guide's table of contents and the API page) all read
this table, so a new objective is one module, one :func:`register` call below and one docs
page. Entries name their module as a string: reading the registry imports no kernel.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Callable, Literal

__all__ = ["Guide", "Knob", "ObjectiveSpec", "exports", "get", "names", "register", "specs"]


@dataclass(frozen=True)
class Guide:
    """Where the documentation explains an objective, and its row in the table of losses.

    Attributes
    ----------
    page : str
        The guide page, relative to ``docs/`` and without its suffix
        (``"objectives/plackett-luce"``). Pages under ``objectives/`` join that section's
        table of contents.
    title : str
        The loss's name in the table (``"top-k ListMLE"``).
    paper : str
        Who introduced it (``"Xia et al. 2009"``), or ``"—"``.
    kind : str
        What it optimises, in a few words.
    hessian : str
        What the hessian is: ``"exact diagonal"``, or the surrogate and its bound.
    cost : str
        The work per query in :math:`n` documents, as MyST Markdown (``"$O(n)$"``).
    """

    page: str
    title: str
    paper: str
    kind: str
    hessian: str
    cost: str


@dataclass(frozen=True)
class Knob:
    """One setting a tuner searches: a keyword argument of a factory or an engine parameter.

    Attributes
    ----------
    name : str
        The keyword argument (or engine parameter) it sets.
    low, high : float, optional
        Range of a numeric knob, both ends included.
    log : bool
        Search the range on a log scale.
    integer : bool
        Integer values only.
    choices : tuple, optional
        The values of a categorical knob (numbers, strings, booleans or None), instead of a range.
    """

    name: str
    low: float | None = None
    high: float | None = None
    log: bool = False
    integer: bool = False
    choices: tuple | None = None

    def __post_init__(self):
        if (self.choices is None) == (self.low is None or self.high is None):
            raise ValueError(f"knob {self.name!r}: give either low and high, or choices")
        if self.choices is None and not self.low < self.high:
            raise ValueError(f"knob {self.name!r}: low must be below high, got {self.low} and {self.high}")
        if self.choices is not None and len(self.choices) < 2:
            raise ValueError(f"knob {self.name!r}: choices needs at least two values")


@dataclass(frozen=True)
class ObjectiveSpec:
    """What the rest of gbrank needs to know about one objective factory.

    Attributes
    ----------
    name : str
        The factory's name, as exported by ``gbrank`` (``gbrank.<name>``) and used in
        method names (``lgb:<name>``).
    module : str
        The module that defines the factory under ``name``.
    family : str
        The loss family, for grouping in reports and plots (``"plackett-luce"``,
        ``"pairwise"``, ``"listnet"``, ``"cosine"``, ``"ndcg-boost"``, ...).
    summary : str
        One line for ``--list-methods`` and the docs.
    labels : {"order", "exp2", "any", "binary"}
        What the objective reads from the labels: only their order (any finite values),
        ``2**l - 1`` of integer labels 0..31, any finite values through a user gain, or
        0/1 only (a click in any session; other values are refused).
    examples : tuple of dict
        Keyword arguments of settings the test catalogues build and check, the first being
        the one the harness uses when a method names no arguments. An objective whose
        factory needs arguments gives them here.
    in_default_bench : bool
        Whether ``python -m gbrank.bench`` runs it in LightGBM by default.
    hessian_bound : float or None
        ``None`` when the hessian is the exact diagonal of the loss's (for pair weights frozen
        within an iteration, of the frozen loss's); a number ``c`` when it is a positive
        surrogate with ``|d2L/ds_i2| <= c h_i``, which the property tests check.
    guide : Guide or None
        Its documentation: the page and the row of the table of losses. Every objective
        gbrank ships has one (the docs tests check that the page shows the factory).
    search_space : tuple of Knob
        The objective's own settings ``python -m gbrank.bench --tune`` searches, next to the
        engine's tree parameters (see :mod:`gbrank.bench.tune`); empty: none.
    """

    name: str
    module: str
    family: str
    summary: str
    labels: Literal["order", "exp2", "any", "binary"] = "order"
    examples: tuple[dict[str, Any], ...] = field(default_factory=lambda: ({},))
    in_default_bench: bool = True
    hessian_bound: float | None = None
    guide: Guide | None = None
    search_space: tuple[Knob, ...] = ()

    def factory(self) -> Callable[..., Any]:
        """The factory function (imports its module on first use)."""
        return getattr(importlib.import_module(self.module), self.name)

    def build(self, **overrides: Any) -> Any:
        """The objective of the first example, with ``overrides`` applied."""
        return self.factory()(**{**self.examples[0], **overrides})


_REGISTRY: dict[str, ObjectiveSpec] = {}


def register(spec: ObjectiveSpec) -> ObjectiveSpec:
    """Add an objective; its name must be new."""
    if spec.name in _REGISTRY:
        raise ValueError(f"an objective named {spec.name!r} is registered already")
    if not spec.examples:
        raise ValueError(f"objective {spec.name!r}: examples needs at least one settings dict")
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove an objective (for tests that register a toy one)."""
    _REGISTRY.pop(name, None)


def get(name: str) -> ObjectiveSpec:
    """The entry of ``name``; the error lists the registered names."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no objective named {name!r}; registered: {', '.join(_REGISTRY)}") from None


def names() -> tuple[str, ...]:
    """Registered factory names, in registration order."""
    return tuple(_REGISTRY)


def exports() -> dict[str, str]:
    """Factory name -> ``"module:name"``, the lazy exports of ``gbrank`` and ``gbrank.objectives``."""
    return {name: f"{spec.module}:{name}" for name, spec in _REGISTRY.items()}


def specs() -> MappingProxyType:
    """A read-only view of the registry, name -> :class:`ObjectiveSpec`."""
    return MappingProxyType(_REGISTRY)


# The docs entry of each objective listed below: its guide page and its row in the table of
# losses, kept in one table as the docs show them (an entry may pass guide= itself instead).
_PL_PAGE, _PAIRS_PAGE, _LAMBDA_PAGE = "objectives/plackett-luce", "objectives/ranknet", "objectives/lambdarank"
_EXACT, _FROZEN = "exact diagonal", "exact diagonal, weights fixed per iteration"
_LINEAR, _QUADRATIC, _TRUNCATED = "$O(n)$", "$O(n^2)$", "$O(n^2)$, $O(Tn)$ truncated"
_GUIDES = {
    "listmle": Guide(_PL_PAGE, "ListMLE", "Xia et al. 2008", "listwise likelihood", _EXACT, _LINEAR),
    "listmle_topk": Guide(_PL_PAGE, "top-k ListMLE", "Xia et al. 2009", "listwise likelihood of the top $k$", _EXACT,
                          _LINEAR),
    "wlistmle": Guide(_PL_PAGE, "W-ListMLE", "Chen et al. 2009", "NDCG-weighted likelihood", _EXACT, _LINEAR),
    "plackett_luce": Guide(_PL_PAGE, "Plackett–Luce, your weights", "—", "position-weighted likelihood", _EXACT,
                           _LINEAR),
    "ranknet": Guide(_PAIRS_PAGE, "RankNet", "Burges et al. 2005; Chen et al. 2009", "pairwise logistic", _EXACT,
                     _TRUNCATED),
    "wranknet": Guide(_PAIRS_PAGE, "W-RankNet", "Chen et al. 2009", "NDCG-weighted pairs", _EXACT, _TRUNCATED),
    "listnet": Guide("objectives/listnet", "ListNet", "Cao et al. 2007", "top-$k$ cross-entropy",
                     "exact diagonal ($k \\le 2$ or enumerated), unbiased estimate (sampled)", "$O(n)$ for $k \\le 2$"),
    "cosine": Guide("objectives/rankcosine", "RankCosine", "Qin et al. 2008", "cosine to a target",
                    "positive surrogate $1/(2N^2)$", _LINEAR),
    "ndcg_boost": Guide("objectives/ndcg-boost", "NDCG_Boost", "Valizadegan et al. 2009", "relaxation of NDCG",
                        "positive surrogate (absolute bound)", _QUADRATIC),
    "lambdarank": Guide(_LAMBDA_PAGE, "LambdaRank", "Burges et al. 2006; LightGBM",
                        "pairs weighted by the swap change of NDCG, MAP, MRR or ERR", _FROZEN, "$O(Tn)$ (T = 30)"),
    "lambdaloss": Guide(_LAMBDA_PAGE, "LambdaLoss", "Wang et al. 2018", "NDCG-Loss2++, -Loss2, -Loss1", _FROZEN,
                        _TRUNCATED),
    "ips_listnet": Guide("clicks", "IPS softmax", "Ai et al. 2018", "inverse-propensity weighted softmax on clicks",
                         _EXACT, _LINEAR),
    "ips_ranknet": Guide("clicks", "IPS RankNet", "Joachims et al. 2017", "inverse-propensity weighted pairs on clicks",
                         _FROZEN, _QUADRATIC),
    "rcr": Guide("objectives/calibrated", "RCR", "Bai et al. 2023",
                 "calibrated: sigmoid cross-entropy plus softmax over the same probabilities",
                 "positive surrogate $1$", _LINEAR),
    "weighted_logistic_softmax": Guide("objectives/calibrated", "logistic + softmax", "Bai et al. 2023 (baseline)",
                                       "weighted sum of pointwise logistic and listwise softmax", _EXACT, _LINEAR),
    "pbm_listnet": Guide("objectives/pbm-listnet", "PBM softmax", "Guo et al. 2019; Wang et al. 2018",
                         "position-based model likelihood on clicks (propensities as score offsets)", _EXACT, _LINEAR),
    "pbm_cloglog": Guide("objectives/pbm-cloglog", "PBM cloglog", "—",
                         "position-based model likelihood of binary clicks (complementary log-log link)", _EXACT,
                         "$O(n)$ per Newton step of the query's factor"),
}

_PL = "gbrank.objectives.plackett_luce"
# search spaces: ranges around each paper's and each factory's default
_SIGMA = Knob("sigma", 0.25, 4.0, log=True)
_CUTOFF = Knob("k", choices=(None, 5, 10, 20))
_TRUNCATION = Knob("truncation", choices=(None, 5, 10, 20, 30))
for _spec in (
    ObjectiveSpec("listmle", _PL, "plackett-luce", "ListMLE: Plackett-Luce likelihood of the label order (Xia et al. 2008)",
                  examples=({}, {"ties": "score"})),
    ObjectiveSpec("listmle_topk", _PL, "plackett-luce", "top-k ListMLE: likelihood of the top k positions (Xia et al. 2009)",
                  examples=({"k": 10}, {"k": 3}), search_space=(Knob("k", 1, 20, integer=True, log=True),)),
    ObjectiveSpec("wlistmle", _PL, "plackett-luce", "W-ListMLE: ListMLE weighted by NDCG gain and discount (Chen et al. 2009)",
                  labels="exp2", search_space=(_CUTOFF,)),
    ObjectiveSpec("plackett_luce", _PL, "plackett-luce", "Plackett-Luce loss with user position weights",
                  examples=({"position_weights": [1.0, 0.5, 0.25]},), in_default_bench=False),
    ObjectiveSpec("ranknet", "gbrank.objectives.ranknet", "pairwise", "RankNet: logistic loss over label-ordered pairs",
                  examples=({}, {"truncation": 3}), search_space=(_SIGMA,)),
    ObjectiveSpec("wranknet", "gbrank.objectives.ranknet", "pairwise", "W-RankNet: RankNet with NDCG pair weights (Chen et al. 2009)",
                  labels="exp2", search_space=(_SIGMA,)),
    ObjectiveSpec("listnet", "gbrank.objectives.listnet", "listnet", "ListNet: cross-entropy of top-k Plackett-Luce distributions",
                  labels="exp2", examples=({}, {"k": 2}, {"k": 3}, {"k": 3, "exact_limit": 0}),
                  search_space=(Knob("k", choices=(1, 2)),)),
    ObjectiveSpec("cosine", "gbrank.objectives.cosine", "cosine", "RankCosine: cosine between target scores and scores",
                  labels="exp2", hessian_bound=6.0),
    ObjectiveSpec("ndcg_boost", "gbrank.objectives.ndcg_boost", "ndcg-boost", "NDCG_Boost relaxation (Valizadegan et al. 2009)",
                  labels="exp2", hessian_bound=1.0),
    # LightGBM's built-in lambdarank is the benchmark's anchor already: the reproduction is
    # for tests and for the measures and gains the built-in lacks
    ObjectiveSpec("lambdarank", "gbrank.objectives.lambdarank", "pairwise",
                  "LambdaRank for NDCG/MAP/MRR/ERR; LightGBM's lambdarank by default", labels="exp2",
                  examples=({}, {"measure": "map"}, {"measure": "mrr", "k": 5}, {"measure": "err", "truncation": None},
                            {"gain": "linear", "discount": "zipf", "k": 10}),
                  in_default_bench=False,
                  search_space=(_TRUNCATION, _SIGMA, Knob("norm", choices=(True, False)))),
    ObjectiveSpec("lambdaloss", "gbrank.objectives.lambdarank", "pairwise",
                  "LambdaLoss: NDCG-Loss2++ and the other weightings (Wang et al. 2018)", labels="exp2",
                  examples=({}, {"weighting": "ndcg_loss2"}, {"weighting": "ndcg_loss1", "truncation": 10},
                            {"weighting": "lambdarank", "norm": True}),
                  in_default_bench=False,
                  search_space=(Knob("weighting", choices=("ndcg_loss2pp", "ndcg_loss2", "ndcg_loss1", "lambdarank")),
                                Knob("mu", 1.0, 100.0, log=True), _SIGMA, _TRUNCATION)),
    ObjectiveSpec("ips_listnet", "gbrank.objectives.clicks", "clicks",
                  "IPS softmax on clicks with known or jointly estimated propensities (Ai et al. 2018)",
                  labels="any", examples=({"propensity": None},),
                  in_default_bench=False),
    ObjectiveSpec("ips_ranknet", "gbrank.objectives.clicks_pairwise", "clicks",
                  "IPS pairwise RankNet/DCG loss on clicks with known or jointly estimated propensities (Joachims et al. 2017)",
                  labels="any", examples=({"propensity": None}, {"propensity": None, "weighting": "dcg"}),
                  in_default_bench=False),
    ObjectiveSpec("pbm_listnet", "gbrank.objectives.clicks_pbm", "clicks",
                  "Position-based model likelihood on clicks: softmax over scores offset by log propensity, "
                  "known or jointly estimated (Guo et al. 2019)",
                  labels="any", examples=({"propensity": None},),
                  in_default_bench=False),
    ObjectiveSpec("pbm_cloglog", "gbrank.objectives.clicks_cloglog", "clicks",
                  "Position-based model likelihood of binary clicks (clicked in any session): complementary "
                  "log-log link, propensities known or jointly estimated",
                  labels="binary", examples=({"propensity": None},),
                  in_default_bench=False),
    ObjectiveSpec("rcr", "gbrank.objectives.calibrated", "calibrated",
                  "RCR: sigmoid cross-entropy plus a softmax over the same sigmoids; calibrated scores (Bai et al. 2023)",
                  labels="any", examples=({}, {"alpha": 0.1, "max_label": 40}), in_default_bench=False,
                  hessian_bound=1.0, search_space=(Knob("alpha", 0.01, 0.99),)),
    ObjectiveSpec("weighted_logistic_softmax", "gbrank.objectives.calibrated", "calibrated",
                  "alpha * pointwise logistic + (1 - alpha) * listwise softmax on raw scores (RCR's baseline)",
                  labels="any", examples=({}, {"alpha": 0.9}), in_default_bench=False,
                  search_space=(Knob("alpha", 0.01, 0.99),)),
):
    register(_spec if _spec.guide is not None else replace(_spec, guide=_GUIDES.get(_spec.name)))
del _spec
