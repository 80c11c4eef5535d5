"""Quality at a size: NDCG as trec_eval computes it, over judged documents only, and HNSW recall.

NDCG@5 and @10 are the project's trec_eval definitions (:mod:`services.nfcorpus.measures`) over
the judged test queries' top 10 as ``POST /search_nfcorpus`` answers them.

*Over judged documents only* is NDCG@5 of the condensed list (Sakai's): the top 10 with every
unjudged document removed, then cut at 5. NFCorpus's qrels list relevant documents only (no grade
0), so a query's own judgements cannot tell an unjudged document from a judged non-relevant one;
judged therefore means judged for some query of any split, the pool NFCorpus's corpus was made
from. Every NFCorpus document is in it and no distractor is: the measure says whether the real
documents keep their order among themselves while distractors come and go, which plain NDCG
mixes with the distractors' own intrusion (the distractors' share of each top 10 says that part).

HNSW's recall@100 against an exact search comes from ``devtools.bench.hnsw_recall``, merged
separately; without it the figure is ``None`` and the log says why.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

from devtools.bench.scale.corpus import is_distractor
from services.nfcorpus.dataset import Qrels, load_qrels, load_queries
from services.nfcorpus.measures import mean_over_queries, ndcg_at_k
from services.retrieval.encoders.dense import Matrix
from services.retrieval.settings import StoreSettings
from services.retrieval.store import open_store

log = logging.getLogger(__name__)

RECALL_MODULE = "devtools.bench.hnsw_recall"
RECALL_K = 100


@dataclass(frozen=True, slots=True)
class TestQueries:
    """The judged test queries in sorted id order, their texts, judgements and the judged pool."""

    __test__ = False  # not a pytest class

    ids: list[str]
    texts: list[str]
    qrels: Qrels
    judged: frozenset[str]

    @classmethod
    def load(cls, folder: Path, limit: int | None = None) -> TestQueries:
        """The first ``limit`` (all by default) judged test queries of a BEIR folder."""
        queries = load_queries(folder)
        qrels = {q: j for q, j in load_qrels(folder, "test").items() if q in queries}
        ids = sorted(qrels)[:limit] if limit else sorted(qrels)
        judged = frozenset(
            d for split in ("train", "dev", "test") for j in load_qrels(folder, split).values()
            for d in j
        )  # fmt: skip
        return cls(ids, [queries[q] for q in ids], {q: qrels[q] for q in ids}, judged)


def condensed(ranked: Sequence[str], judged: frozenset[str]) -> list[str]:
    """``ranked`` without the documents nobody judged."""
    return [d for d in ranked if d in judged]


def quality(queries: TestQueries, answers: Sequence[Sequence[str]]) -> dict[str, float]:
    """NDCG@5, NDCG@10, NDCG@5 over judged documents, and the distractors in the answers."""
    run = dict(zip(queries.ids, answers, strict=True))
    judged_ndcg = [
        ndcg_at_k(condensed(run[q], queries.judged), queries.qrels[q], 5) for q in queries.ids
    ]
    shares = [sum(map(is_distractor, a[:10])) / 10 for a in answers]
    return {
        "ndcg5": mean_over_queries(run, queries.qrels, "ndcg", 5),
        "ndcg10": mean_over_queries(run, queries.qrels, "ndcg", 10),
        "ndcg5_judged": fmean(judged_ndcg) if judged_ndcg else 0.0,
        "distractor_share_top10": fmean(shares) if shares else 0.0,
        "queries_with_distractor_top5": fmean(any(map(is_distractor, a[:5])) for a in answers)
        if answers
        else 0.0,
    }


def served_collection(store: StoreSettings, alias: str) -> str:
    """The collection ``alias`` names in ``store`` (the alias itself if it names none)."""
    opened = open_store(store)
    try:
        return opened.resolve_alias(alias) or alias
    finally:
        opened.close()


def recall_at_100(store: StoreSettings, alias: str, vectors: Matrix) -> float | None:
    """HNSW's mean recall@100 against exact search for ``vectors``; None without the helper."""
    try:
        module = importlib.import_module(RECALL_MODULE)
    except ModuleNotFoundError as e:
        if e.name != RECALL_MODULE:
            raise
        log.warning("%s is not there yet: recall_at_100 recorded as null", RECALL_MODULE)
        return None
    opened = open_store(store.model_copy(update={"edge_private_copy": True}))
    try:
        collection = opened.resolve_alias(alias) or alias
        return float(module.dense_recall(opened, collection, vectors, k=RECALL_K))
    finally:
        opened.close()
