"""The experiments of :mod:`.ranker_lab`, each a function of the cached candidates.

Each is scored by :func:`devtools.lab.evaluation.evaluate` (five ranker seeds, mean and spread).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from devtools.lab import adapter, dense_views
from devtools.lab import features as extra_columns
from devtools.lab.data import Lab, grouped, ndcg
from devtools.lab.evaluation import SEEDS, evaluate, summary, without
from devtools.lab.features import Extra
from services.retrieval.encoders.sparse import Bm25Params
from services.retrieval.indexing.training import train
from services.retrieval.query.bm25_table import SHORT_TEXTS
from services.retrieval.query.features import FEATURES


def seed_spread(lab: Lab) -> dict[str, Any]:
    """The served features, five seeds: the spread, and a five-seed ensemble."""
    return evaluate(lab)


def crossfit_dev(lab: Lab) -> dict[str, Any]:
    """Dev queries teach the ranker too: two folds, each scored by a model that learned the other.

    Compared on the same (all) dev queries with the model that learns from train only.
    """
    dev = lab["dev"]
    folds = [dev[0::2], dev[1::2]]
    with_dev, train_only = [], []
    for seed in SEEDS:
        scored: dict[str, npt.NDArray[np.float64]] = {}
        for held, other in ((folds[0], folds[1]), (folds[1], folds[0])):
            model = train(grouped(lab["train"] + other), seeds=(seed,))
            scored.update({q.query_id: model.score(q.rows) for q in held})
        with_dev.append(ndcg(dev, [scored[q.query_id] for q in dev]))
        base = train(grouped(lab["train"]), seeds=(seed,))
        train_only.append(ndcg(dev, [base.score(q.rows) for q in dev]))
    return {
        "dev, train only": {"ndcg@5": summary([a for a, _ in train_only]),
                            "ndcg@10": summary([b for _, b in train_only])},
        "dev, train + other dev fold": {"ndcg@5": summary([a for a, _ in with_dev]),
                                        "ndcg@10": summary([b for _, b in with_dev])},
    }  # fmt: skip


LEXICAL_VOTES = ("lex_vote", "lex_voters", "lex_top_score")
DOC_FIELDS = ("doc_length", "title_length", "title_bm25", "query_chars")


def with_judging_similarity(lab: Lab) -> dict[str, Any]:
    """+ similarity to the training queries that judged each candidate (all of them, not k)."""
    return evaluate(lab, extra_columns.judging_similarity(lab), extra_columns.JUDGING_SIMILARITY)


# The strongest served signals (the query side's votes, co-relevance, the retrievers' scores),
# for the per-query normalisation experiments.
STRONGEST = (
    "vote",
    "lex_vote",
    "co_score",
    "dense_score",
    "bm25_score",
    "rm3_score",
    "judged_bm25",
)
_STRONGEST_AT = [FEATURES.index(f) for f in STRONGEST]


def _normalised(names: Sequence[str]) -> tuple[str, ...]:
    return tuple(f"{n}_{kind}" for kind in ("qz", "qgap", "qrank") for n in names)


def _judged_variant(params: Bm25Params, standing: bool = False) -> Callable[[Lab], dict[str, Any]]:
    """The judged-by field with other BM25 constants, or with its standing among the candidates."""
    keep = [i for i, f in enumerate(FEATURES) if f not in extra_columns.JUDGED_BY]

    def run(lab: Lab) -> dict[str, Any]:
        slim = {s: [replace(q, rows=q.rows[:, keep]) for q in qs] for s, qs in lab.items()}
        names = (*extra_columns.JUDGED_BY, *(extra_columns.JUDGED_STANDING if standing else ()))
        extra = extra_columns.judged_by(lab, params, standing)
        return evaluate(slim, extra, names, base=[FEATURES[i] for i in keep])

    return run


# The dense views of the training queries (round 4), each a column builder and its names.
DENSE_VIEWS: dict[str, tuple[Callable[[Lab], Extra], tuple[str, ...]]] = {
    "cosine": (dense_views.full_cosine, dense_views.FULL_COSINE),
    "nudged 0.8": (lambda lab: dense_views.nudged_documents(lab, (0.8,)), dense_views.NUDGED),
    "nudged 0.4 0.8 1.5": (
        lambda lab: dense_views.nudged_documents(lab, (0.4, 0.8, 1.5)),
        ("nudged_cos_0.4", "nudged_cos_0.8", "nudged_cos_1.5"),
    ),
    "adapted": (adapter.adapted_query_view, adapter.ADAPTED_VIEW),
    "neighbours": (dense_views.neighbour_query_view, dense_views.NEIGHBOUR_VIEW),
}
_built: dict[str, Extra] = {}  # one lab run builds each view once


def _with_views(*views: str, instead: bool = False) -> Callable[[Lab], dict[str, Any]]:
    """+ the columns of the named :data:`DENSE_VIEWS` (``instead`` of the served nudged one)."""
    keep = [i for i, f in enumerate(FEATURES) if not (instead and f in dense_views.NUDGED)]

    def run(lab: Lab) -> dict[str, Any]:
        for view in views:
            if view not in _built:
                _built[view] = DENSE_VIEWS[view][0](lab)
        slim = {s: [replace(q, rows=q.rows[:, keep]) for q in qs] for s, qs in lab.items()}
        extra = {
            split: [
                np.hstack(blocks) for blocks in zip(*(_built[v][split] for v in views), strict=True)
            ]
            for split in lab
        }
        names = tuple(n for v in views for n in DENSE_VIEWS[v][1])
        return evaluate(slim, extra, names, base=[FEATURES[i] for i in keep])

    return run


def dense_views_alone(lab: Lab) -> dict[str, Any]:
    """Each dense view as the only ordering of the candidates (no ranker): dev and test NDCG."""
    out: dict[str, Any] = {}
    for view in ("cosine", "nudged 0.4 0.8 1.5", "neighbours", "adapted"):
        if view not in _built:
            _built[view] = DENSE_VIEWS[view][0](lab)
        for j, name in enumerate(DENSE_VIEWS[view][1]):
            (dev5, dev10), test = (
                ndcg(lab[split], [np.nan_to_num(b[:, j], nan=-2.0) for b in _built[view][split]])
                for split in ("dev", "test")
            )
            out[name] = {"ndcg@5": round(dev5, 4), "ndcg@10": round(dev10, 4), "test": test}
    return out


def with_per_query(lab: Lab) -> dict[str, Any]:
    """+ the strongest features as the query's candidates compare (z-score, gap, rank)."""
    extra = extra_columns.per_query(_STRONGEST_AT, lab)
    return evaluate(lab, extra, _normalised(STRONGEST))


def _with_params(params: Mapping[str, Any]) -> Callable[[Lab], dict[str, Any]]:
    def run(lab: Lab) -> dict[str, Any]:
        return evaluate(lab, params=params)

    return run


def _ensembles_of_three(params: Mapping[str, Any]) -> Callable[[Lab], dict[str, Any]]:
    """Three models of three seeds, scores summed (three model passes per query), five times.

    The triples rotate over the five seeds (1-2-3, 2-3-4, ..., 5-1-2), so the ensemble has a
    spread to compare with one model's.
    """

    def run(lab: Lab) -> dict[str, Any]:
        scores: dict[str, list[list[npt.NDArray[np.float64]]]] = {"dev": [], "test": []}
        for seed in SEEDS:
            model = train(grouped(lab["train"]), overrides=params, seeds=(seed,))
            for split in scores:
                scores[split].append([model.score(q.rows) for q in lab[split]])
        out: dict[str, Any] = {}
        for split, per_seed in scores.items():
            figures = [
                ndcg(lab[split], [sum(parts) for parts in zip(*(per_seed[(i + j) % len(SEEDS)]
                                                              for j in range(3)), strict=True)])
                for i in range(len(SEEDS))
            ]  # fmt: skip
            out[split] = {"ndcg@5": summary([a for a, _ in figures]),
                          "ndcg@10": summary([b for _, b in figures])}  # fmt: skip
        return out

    return run


def oracle(lab: Lab) -> dict[str, Any]:
    """The best NDCG any ordering of the candidates could reach: what the ranker can still win."""
    out = {}
    for split in ("dev", "test"):
        queries = lab[split]
        perfect = [np.array([float(q.judged.get(d, 0)) for d in q.doc_ids]) for q in queries]
        at5, at10 = ndcg(queries, perfect)
        out[split] = {"ndcg@5": round(at5, 4), "ndcg@10": round(at10, 4)}
    return out


PARAM_VARIANTS: dict[str, dict[str, Any]] = {
    "31 leaves (before)": {"num_leaves": 31},
    "120 rounds at learning rate 0.025": {"num_iterations": 120, "learning_rate": 0.025},
    "min 200 rows per leaf": {"min_data_in_leaf": 200},
    # Its five-seed ensemble costs what one 60-round model costs at scoring time.
    "12 rounds at learning rate 0.25": {"num_iterations": 12, "learning_rate": 0.25},
}

EXPERIMENTS: dict[str, Callable[[Lab], dict[str, Any]]] = {
    "seed spread (served features)": seed_spread,
    "dev queries teach the ranker (cross-fitted)": crossfit_dev,
    "- lexical kNN votes": without(LEXICAL_VOTES),
    "- document fields": without(DOC_FIELDS),
    "- both (the features before them)": without((*LEXICAL_VOTES, *DOC_FIELDS)),
    "+ similarity to each candidate's judging queries": with_judging_similarity,
    "- judged-by BM25 field": without(extra_columns.JUDGED_BY),
    "judged-by field, k1 1.2 b 0.75 (the documents' constants)": _judged_variant(Bm25Params()),
    "judged-by field, k1 0.6 b 0.3": _judged_variant(Bm25Params(0.6, 0.3)),
    "judged-by field, k1 1.5 b 0.2": _judged_variant(Bm25Params(1.5, 0.2)),
    "judged-by field with its rank and share of the best": _judged_variant(SHORT_TEXTS, True),
    "+ per-query normalisation (z, gap, rank) of the strongest features": with_per_query,
    "- nudged cosine (gamma 1.5)": without(dense_views.NUDGED),
    "nudged cosine with gamma 0.8 instead": _with_views("nudged 0.8", instead=True),
    "nudged cosines with gammas 0.4, 0.8 and 1.5 instead": _with_views(
        "nudged 0.4 0.8 1.5", instead=True
    ),
    "MiniLM cosine of every candidate instead (the control)": _with_views("cosine", instead=True),
    "each dense view alone, no ranker": dense_views_alone,
    "oracle with the nudged cosine as a candidate source": dense_views.nudged_candidate_ceiling,
    "+ query through a linear adapter fitted listwise on train": _with_views("adapted"),
    "+ query moved toward its 5 nearest training queries": _with_views("neighbours"),
    "oracle ordering of the candidates": oracle,
    **{f"params: {name}": _with_params(p) for name, p in PARAM_VARIANTS.items()},
    "ensembles of three 63-leaf models (served in round 3)": _ensembles_of_three({}),
    "ensembles of three models, 31 leaves": _ensembles_of_three(
        PARAM_VARIANTS["31 leaves (before)"]
    ),
}
