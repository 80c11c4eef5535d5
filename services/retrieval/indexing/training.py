"""Supervised signals, built by the indexer: the training-query collection and the ranker.

Reads the **train** and **dev** qrels only: training queries vote (kNN collection) and teach the
ranker; dev queries pick the number of boosting rounds. The test qrels are never opened here (a
test holds this code path to that).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from services.nfcorpus.dataset import Qrels, load_qrels, load_queries
from services.retrieval.encoders.dense import DenseEncoder, Matrix
from services.retrieval.indexing.vector_cache import cached_vectors
from services.retrieval.query.hybrid import encoded_query
from services.retrieval.query.index_version import (
    knn_collection,
    knn_points,
    ranker_collection,
    save_ranker,
    upsert_knn,
)
from services.retrieval.query.pipeline import RankingPipeline
from services.retrieval.query.ranker import Ranker, group_rows, train
from services.retrieval.settings import RetrievalSettings
from services.retrieval.store.base import Store
from services.telemetry.progress import progress

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TrainingData:
    """Queries and judgements the supervised stages learn from.

    ``voters`` fill the kNN collection; ``learners`` (all voters) teach the ranker, each left
    out of its own neighbours; ``held_out`` only measures the ranker (dev, when
    dev does not vote).
    """

    queries: dict[str, str]
    voters: Qrels
    learners: Qrels
    held_out: Qrels

    def fingerprint(self) -> str:
        """Hash of the judgements and query texts: part of the index version."""
        digest = hashlib.sha256()
        for split in (self.voters, self.learners, self.held_out):
            for q in sorted(split):
                digest.update(
                    f"{q}\t{self.queries.get(q, '')}\t{sorted(split[q].items())}\n".encode()
                )
            digest.update(b"|")
        return digest.hexdigest()[:16]


def load_training_data(
    folder: Path, supervision: str = "train+dev", max_train_queries: int | None = None
) -> TrainingData:
    """Train (and dev) judgements with their query texts; never the test split.

    ``supervision="train"`` keeps dev out of the kNN collection, so that dev measures every
    stage honestly; ``"train+dev"`` (the served default) lets dev queries vote and teach the
    ranker too (cross-fitted on dev halves, the ranker that also learned from the other half
    scored better: docs/quality.md has the figures).
    """
    queries = load_queries(folder)
    judged = load_qrels(folder, "train")
    train_ids = sorted(q for q in judged if q in queries)[:max_train_queries]
    train = {q: judged[q] for q in train_ids}
    dev = {q: j for q, j in load_qrels(folder, "dev").items() if q in queries}
    if supervision == "train+dev":
        voters = {**train, **dev}
        return TrainingData(queries, voters, voters, {})
    return TrainingData(queries, train, train, dev)


def train_votes(train: Qrels) -> dict[str, int]:
    """How many training queries mark each document relevant (the query-independent prior)."""
    counts: dict[str, int] = {}
    for judged in train.values():
        for doc_id in judged:
            counts[doc_id] = counts.get(doc_id, 0) + 1
    return counts


def _encode(
    encoder: DenseEncoder, data: TrainingData, ids: Sequence[str], cache_dir: Path, batch: int
) -> Matrix:
    texts = [data.queries[q] for q in ids]
    key = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    return cached_vectors(
        cache_dir,
        f"queries-{encoder.model_id}-{key}",
        len(ids),
        lambda: encoder.encode(texts, batch),
    )


def _feature_rows(
    pipeline: RankingPipeline,
    data: TrainingData,
    ids: Sequence[str],
    vectors: Matrix,
    judgements: Qrels,
    leave_one_out: bool,
    label: str,
) -> list[tuple[npt.NDArray[np.float32], list[str], Mapping[str, int]]]:
    out: list[tuple[npt.NDArray[np.float32], list[str], Mapping[str, int]]] = []
    with progress(label, len(ids)) as advance:
        for i, q in enumerate(ids):
            encoded = encoded_query(vectors[i], data.queries[q])
            cs = pipeline.candidate_set(
                encoded,
                exclude_query=q if leave_one_out else None,
                own_judgements=judgements[q] if leave_one_out else None,
            )
            out.append((cs.features, cs.doc_ids, judgements[q]))
            advance(1)
    return out


def build_supervised(
    store: Store,
    docs: str,
    encoder: DenseEncoder,
    data: TrainingData,
    settings: RetrievalSettings,
) -> Ranker:
    """Fill ``<docs>-knn`` with the voting queries, train the ranker, store it."""
    cache = settings.cache_dir / "vectors"
    voter_ids, held_ids = sorted(data.voters), sorted(data.held_out)
    voter_vectors = _encode(encoder, data, voter_ids, cache, settings.encode_batch_size)
    knn = knn_collection(docs)
    upsert_knn(store, knn, knn_points(voter_ids, voter_vectors, data.voters, data.queries))
    if store.count(knn) != len(voter_ids):
        raise RuntimeError(f"{knn} holds {store.count(knn)} points, expected {len(voter_ids)}")

    # The pipeline, pointed at the collections being built, computes features exactly as served.
    local = settings.updated(store={"collection": docs}, mode="full", ranker={"enabled": False})
    pipeline = RankingPipeline(store, encoder, local, leave_one_out=True)
    learner_ids = sorted(data.learners)
    row_of = {q: i for i, q in enumerate(voter_ids)}
    learner_vectors = voter_vectors[[row_of[q] for q in learner_ids]]
    rows = _feature_rows(
        pipeline, data, learner_ids, learner_vectors, data.learners, True, "features"
    )
    held = None
    if held_ids:
        held_vectors = _encode(encoder, data, held_ids, cache, settings.encode_batch_size)
        held = group_rows(
            _feature_rows(
                pipeline, data, held_ids, held_vectors, data.held_out, False, "held-out features"
            )
        )
    model = train(group_rows(rows), held)
    log.info("ranker: %s", model.meta)
    save_ranker(store, ranker_collection(docs), model)
    return model
