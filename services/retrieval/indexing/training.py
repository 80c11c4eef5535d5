"""Supervised signals, built by the indexer: the training-query collection and the ranker.

The ranker is LightGBM lambdarank (:func:`train`): one model per random seed (:data:`SEEDS`),
their scores summed when served (:class:`~services.retrieval.query.ranker.Ranker`).

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
from typing import Any

import lightgbm as lgb
import numpy as np
import numpy.typing as npt

from services.nfcorpus.dataset import Qrels, load_qrels, load_queries
from services.retrieval.encoders.dense import DenseEncoder, Matrix
from services.retrieval.indexing.points import knn_points, save_ranker, upsert_knn
from services.retrieval.indexing.vector_cache import cached_vectors
from services.retrieval.query.features import FEATURES
from services.retrieval.query.hybrid import encoded_query
from services.retrieval.query.index_version import knn_collection, ranker_collection
from services.retrieval.query.pipeline import RankingPipeline
from services.retrieval.query.ranker import Ranker
from services.retrieval.settings import RetrievalSettings
from services.retrieval.store.base import Store
from services.telemetry.progress import progress

log = logging.getLogger(__name__)

PARAMS: dict[str, Any] = {
    "objective": "lambdarank",
    "metric": "ndcg",
    "eval_at": [5, 10],
    "learning_rate": 0.05,
    "num_leaves": 63,
    "min_data_in_leaf": 50,
    "feature_fraction": 0.8,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambdarank_truncation_level": 20,
    "seed": 42,
    "deterministic": True,
    "force_row_wise": True,
    "num_threads": 2,
    "verbosity": -1,
}
# Chosen on dev (docs/quality.md), where NDCG is flat over a range of rounds and falls after it;
# a fixed count lets the served model learn from dev queries too, with nothing left to stop on.
ROUNDS = 60
#: One model per random seed; the served score is their sum.
SEEDS = (42,)


@dataclass(frozen=True, slots=True)
class Grouped:
    """Feature rows grouped by query, with graded labels."""

    features: npt.NDArray[np.float32]
    labels: npt.NDArray[np.float32]
    groups: list[int]


def train(
    train: Grouped,
    held_out: Grouped | None = None,
    overrides: Mapping[str, Any] | None = None,
    features: Sequence[str] = FEATURES,
    seeds: Sequence[int] = SEEDS,
) -> Ranker:
    """Fit one model per seed for :data:`ROUNDS` rounds; reproducible (deterministic LightGBM).

    ``held_out`` (dev, when dev is not training data) is only measured, into ``meta``.
    ``overrides`` (of :data:`PARAMS`; ``num_iterations`` replaces :data:`ROUNDS`), ``features``
    (columns beyond :data:`FEATURES`) and ``seeds`` serve the experiments of
    ``devtools/lab/ranker_lab.py``.
    """
    params = {**PARAMS, **(overrides or {})}
    rounds = int(params.pop("num_iterations", ROUNDS))
    train_set = lgb.Dataset(
        train.features, train.labels, group=train.groups, feature_name=list(features)
    )
    valid_sets: list[lgb.Dataset] = []
    if held_out is not None:
        valid_sets.append(
            lgb.Dataset(
                held_out.features, held_out.labels, group=held_out.groups, reference=train_set
            )
        )
    boosters, dev_ndcg = [], []
    for seed in seeds:
        evals: dict[str, Any] = {}
        boosters.append(
            lgb.train(
                {**params, "seed": seed},
                train_set,
                num_boost_round=rounds,
                valid_sets=valid_sets,
                valid_names=["dev"] if valid_sets else None,
                callbacks=[lgb.record_evaluation(evals)],
            )
        )
        if held_out is not None:
            dev_ndcg.append(float(evals["dev"]["ndcg@10"][-1]))
    meta: dict[str, Any] = {
        "params": {k: v for k, v in params.items() if k not in ("num_threads", "seed")},
        "seeds": list(seeds),
        "rounds": rounds,
        "train_queries": len(train.groups),
    }
    if dev_ndcg:
        # LightGBM's NDCG of each model (ideal over the candidates), a sanity check, not the
        # trec_eval figure of the sum.
        meta["dev_lightgbm_ndcg@10"] = dev_ndcg
    return Ranker.from_boosters(boosters, meta, features)


def group_rows(
    per_query: Sequence[tuple[npt.NDArray[np.float32], Sequence[str], Mapping[str, int]]],
) -> Grouped:
    """Stack ``(rows, doc_ids, judgements)`` per query into one training set."""
    features = [rows for rows, _, _ in per_query if len(rows)]
    labels = [
        np.array([judged.get(d, 0) for d in doc_ids], dtype=np.float32)
        for rows, doc_ids, judged in per_query
        if len(rows)
    ]
    return Grouped(
        np.concatenate(features), np.concatenate(labels), [len(rows) for rows in features]
    )


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
    collection: str,
    encoder: DenseEncoder,
    data: TrainingData,
    settings: RetrievalSettings,
    numbers: Mapping[str, int],
) -> Ranker:
    """Fill ``<collection>-knn`` with the voting queries, train the ranker, store it.

    ``numbers`` maps the corpus's doc ids to their point ids in ``collection``.
    """
    cache = settings.cache_dir / "vectors"
    voter_ids, held_ids = sorted(data.voters), sorted(data.held_out)
    voter_vectors = _encode(encoder, data, voter_ids, cache, settings.encode_batch_size)
    knn = knn_collection(collection)
    voters = knn_points(voter_ids, voter_vectors, data.voters, data.queries, numbers)
    upsert_knn(store, knn, voters)
    if store.count(knn) != len(voter_ids):
        raise RuntimeError(f"{knn} holds {store.count(knn)} points, expected {len(voter_ids)}")

    # The pipeline, pointed at the collections being built, computes features exactly as served.
    local = settings.updated(
        store={"collection": collection}, mode="full", ranker={"enabled": False}
    )
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
    save_ranker(store, ranker_collection(collection), model)
    return model
