"""Features of (query, candidate document) pairs for the learned ranker.

Candidates are the union of the dense, BM25 and RM3 lists and the documents the nearest training
queries vote for most. A document missing from a list gets NaN for that list's score (LightGBM
learns where missing values go) and ``depth + 1`` for its rank.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from services.retrieval.corelevance import CoScores
from services.retrieval.evidence import Evidence, Ranked
from services.retrieval.judgements import Judgements
from services.retrieval.knn import VoteTable
from services.retrieval.settings import KnnSettings

FEATURES = (
    "dense_score", "dense_rank", "dense_z",
    "bm25_score", "bm25_rank",
    "rm3_score", "rm3_rank", "rm3_z",
    "vote", "vote_rank", "vote_share", "voters", "vote_best_sim", "vote_nearest_rank",
    "vote_max_grade", "nearest_sim", "prior", "query_terms", "title_overlap",
    "co_score", "co_rank",
)  # fmt: skip
NAN = math.nan


@dataclass(frozen=True, slots=True)
class DocInfo:
    """Query-independent features of a document, loaded once per index version."""

    title_terms: frozenset[str]
    train_votes: int


@dataclass(frozen=True, slots=True)
class CandidateSet:
    """Candidate doc ids and their feature rows (``features[i]`` describes ``doc_ids[i]``)."""

    doc_ids: list[str]
    features: npt.NDArray[np.float32]


def _list_features(ranked: Ranked) -> dict[str, tuple[float, int, float]]:
    scores = [score for _, score in ranked]
    mean = float(np.mean(scores)) if scores else 0.0
    spread = float(np.std(scores)) if scores else 0.0
    out: dict[str, tuple[float, int, float]] = {}
    for rank, (doc_id, score) in enumerate(ranked, start=1):
        if doc_id not in out:
            z = (score - mean) / spread if spread > 0 else 0.0
            out[doc_id] = (score, rank, z)
    return out


def candidates(
    evidence: Evidence,
    judgements: Judgements,
    knn: KnnSettings,
    exclude_query: str | None = None,
) -> tuple[list[str], VoteTable]:
    """Union of the retrievers' lists and the ``knn.vote_depth`` most-voted documents.

    Only documents of the corpus get votes (``judgements`` is indexed over it).
    """
    votes = VoteTable(judgements, evidence.neighbours, knn.neighbours, knn.power, exclude_query)
    voted = votes.ranked[: knn.vote_depth]
    seen: dict[str, None] = {}
    for ranked in (evidence.dense, evidence.bm25, evidence.rm3):
        for doc_id, _ in ranked:
            seen.setdefault(doc_id, None)
    for d in voted:
        seen.setdefault(d, None)
    return list(seen), votes


def build_features(
    evidence: Evidence,
    doc_ids: Sequence[str],
    votes: VoteTable,
    doc_info: Mapping[str, DocInfo],
    query_terms: Sequence[str],
    depth: int,
    co_relevance: CoScores,
    own_judgements: Mapping[str, int] | None = None,
) -> npt.NDArray[np.float32]:
    """One row of :data:`FEATURES` per candidate.

    ``doc_info`` maps doc id to its static features (:class:`DocInfo`);
    ``own_judgements`` (training only) are removed from the prior, as the query is from the
    neighbours (leave-one-out).
    """
    dense = _list_features(evidence.dense)
    bm25 = _list_features(evidence.bm25)
    rm3 = _list_features(evidence.rm3)
    top_vote = votes.top_score
    # How close the nearest (non-excluded) training query is: how much to trust the votes.
    nearest = votes.nearest_similarity
    terms = set(query_terms)
    missing = (NAN, depth + 1, NAN)
    rows = np.empty((len(doc_ids), len(FEATURES)), dtype=np.float32)
    for i, d in enumerate(doc_ids):
        ds, dr, dz = dense.get(d, missing)
        bs, br, _ = bm25.get(d, missing)
        rs, rr, rz = rm3.get(d, missing)
        vote = votes.get(d)
        info = doc_info.get(d)
        prior = float(info.train_votes) if info else 0.0
        if own_judgements and d in own_judgements:
            prior -= 1
        overlap = len(terms & info.title_terms) / len(terms) if terms and info else NAN
        rows[i] = (
            ds, dr, dz, bs, br, rs, rr, rz,
            vote.score if vote else 0.0,
            vote.rank if vote else len(votes) + 1,
            vote.score / top_vote if vote and top_vote > 0 else 0.0,
            vote.voters if vote else 0,
            vote.best_similarity if vote else NAN,
            vote.nearest_rank if vote else NAN,
            vote.max_grade if vote else 0,
            nearest,
            math.log1p(max(prior, 0.0)),
            len(query_terms),
            overlap,
            co_relevance.score(d),
            co_relevance.rank(d),
        )  # fmt: skip
    return rows
