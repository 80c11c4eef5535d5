"""The collaborative signal: training queries as a Qdrant collection, voting for documents.

NFCorpus queries come from NutritionFacts pages that link to the same articles, so a new query's
nearest *training* queries point at its relevant documents: each of the ``k`` nearest training
queries votes for the documents its qrels mark relevant, with weight ``similarity ** power``
times the grade. The collection holds one point per training query: its MiniLM embedding and
``{"query_id", "relevant": {doc_id: grade}}`` as payload.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from services.retrieval.dense import Matrix
from services.retrieval.store.base import CollectionSpec, Point, Store, point_id

SPEC = CollectionSpec(dense_size=384, sparse=False)


@dataclass(slots=True)
class Vote:
    """What the neighbours said about one document."""

    score: float = 0.0
    voters: int = 0
    best_similarity: float = 0.0
    nearest_rank: int = 0  # rank (1-based) of the nearest neighbour voting for it
    max_grade: int = 0


def knn_points(
    query_ids: Sequence[str], vectors: Matrix, qrels: Mapping[str, Mapping[str, int]]
) -> list[Point]:
    """One point per training query (the ids are uuid5 of ``knn:<query id>``)."""
    return [
        Point(
            id=point_id(f"knn:{q}"),
            dense=vectors[i].tolist(),
            payload={"query_id": q, "relevant": dict(qrels[q])},
        )
        for i, q in enumerate(query_ids)
    ]


def tally_votes(
    neighbours: Sequence[tuple[str, float]],
    judgements: Mapping[str, Mapping[str, int]],
    k: int,
    power: float,
    exclude_query: str | None = None,
) -> dict[str, Vote]:
    """Votes of the ``k`` nearest ``(query id, similarity)`` (``exclude_query`` left out)."""
    votes: dict[str, Vote] = {}
    rank = 0
    for query_id, similarity in neighbours:
        if query_id == exclude_query:
            continue
        rank += 1
        if rank > k:
            break
        weight = max(similarity, 0.0) ** power
        for doc_id, grade in judgements.get(query_id, {}).items():
            vote = votes.get(doc_id)
            if vote is None:
                # Neighbours come nearest first: the first vote carries the best similarity.
                vote = votes[doc_id] = Vote(nearest_rank=rank, best_similarity=similarity)
            vote.score += weight * grade
            vote.voters += 1
            if grade > vote.max_grade:
                vote.max_grade = int(grade)
    return votes


def upsert_knn(store: Store, name: str, points: Sequence[Point], batch: int = 256) -> None:
    """Create the collection if needed and upsert the training queries."""
    if not store.collection_exists(name):
        store.create_collection(name, SPEC)
    for start in range(0, len(points), batch):
        store.upsert(name, points[start : start + batch])
