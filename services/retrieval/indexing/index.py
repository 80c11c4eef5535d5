"""The indexer: NFCorpus -> dense + BM25 vectors -> a versioned Qdrant collection -> alias.

``python -m services.retrieval.indexing.index`` (or ``make index``). The collection name carries a version
hash of everything that shapes what it serves (:mod:`services.retrieval.indexing.versions`), and the service
reads an alias. A build fills a fresh versioned collection and moves the alias only once every
point is in, so a re-index never serves a half-built collection. Documents are numbered in the
corpus's order: re-running (also after an interruption) overwrites points instead of adding any.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from services.nfcorpus.dataset import Document, corpus_fingerprint, load_corpus
from services.nfcorpus.download import ensure_dataset
from services.retrieval.encoders.dense import DenseEncoder, Matrix, OnnxMiniLM
from services.retrieval.encoders.sparse import Bm25Params, encode_documents
from services.retrieval.indexing.points import doc_ordinals, document_points, save_corpus_stats
from services.retrieval.indexing.training import (
    TrainingData,
    build_supervised,
    load_training_data,
    train_votes,
)
from services.retrieval.indexing.vector_cache import cached_vectors
from services.retrieval.indexing.versions import (
    collection_version,
    dense_index_config,
    drop_old_versions,
    supervised_config,
)
from services.retrieval.query.bm25_table import FieldStats
from services.retrieval.query.documents import CorpusStats
from services.retrieval.query.index_version import (
    corpus_collection,
    ranker_collection,
    versioned_collection,
)
from services.retrieval.settings import RetrievalSettings
from services.retrieval.store import open_store
from services.retrieval.store.base import Store
from services.retrieval.text import document_text
from services.retrieval.types import CollectionSpec
from services.telemetry.logging import setup_logging
from services.telemetry.progress import progress

log = logging.getLogger(__name__)
UPSERT_BATCH = 128
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What a run did."""

    collection: str
    documents: int
    built: bool


@dataclass(frozen=True, slots=True)
class IndexPlan:
    """The version the current inputs call for: its name, documents and training data."""

    name: str
    documents: list[Document]
    fingerprint: str
    data: TrainingData | None
    bm25: Bm25Params


def plan_index(settings: RetrievalSettings, encoder: DenseEncoder) -> IndexPlan:
    """Read the inputs (downloading the dataset if needed) and name the version they make."""
    folder = ensure_dataset(settings.data_dir, settings.download_url, settings.download_md5)
    documents = load_corpus(folder, limit=settings.experiment.max_docs)
    data = (
        load_training_data(folder, settings.supervision, settings.experiment.max_train_queries)
        if settings.mode == "full"
        else None
    )
    fingerprint = corpus_fingerprint(documents)
    bm25 = Bm25Params()
    training = data.fingerprint() if data is not None else None
    version = collection_version(
        fingerprint,
        encoder.model_id,
        bm25.k1,
        bm25.b,
        dense_index_config(settings),
        supervised_config(settings, training),
    )
    name = versioned_collection(settings.store.collection, version)
    return IndexPlan(name, documents, fingerprint, data, bm25)


def is_current(store: Store, alias: str, plan: IndexPlan) -> bool:
    """Whether ``alias`` already points at the planned version, complete."""
    name = plan.name
    if store.resolve_alias(alias) != name or not store.collection_exists(name):
        return False
    if store.count(name) != len(plan.documents):
        return False
    return plan.data is None or store.collection_exists(ranker_collection(name))


def _batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _encode_with_progress(encoder: DenseEncoder, texts: list[str], batch: int) -> Matrix:
    parts = []
    with progress("encoding documents", len(texts)) as advance:
        for chunk in _batches(texts, batch * 8):
            parts.append(encoder.encode(chunk, batch_size=batch))
            advance(len(chunk))
    return np.concatenate(parts).astype(np.float32)


def build(
    settings: RetrievalSettings, store: Store, encoder: DenseEncoder, plan: IndexPlan
) -> None:
    """Fill the planned version's collections (documents, then the supervised side)."""
    name, documents = plan.name, plan.documents
    texts = [document_text(d) for d in documents]
    dense = cached_vectors(
        settings.cache_dir / "vectors",
        f"{encoder.model_id}-{plan.fingerprint}",
        len(documents),
        lambda: _encode_with_progress(encoder, texts, settings.encode_batch_size),
    )
    sparse = encode_documents(texts, plan.bm25)
    if not store.collection_exists(name):
        store.create_collection(name, CollectionSpec(dense_size=encoder.dimension))
    votes = train_votes(plan.data.learners) if plan.data is not None else {}
    points = document_points(documents, dense, sparse, votes, doc_ordinals(documents))
    with progress(f"upserting into {name}", len(points)) as advance:
        for batch in _batches(points, UPSERT_BATCH):
            store.upsert(name, batch)
            advance(len(batch))
    stored = store.count(name)
    if stored != len(documents):
        raise RuntimeError(
            f"{name} holds {stored} points after upserting {len(documents)} documents"
        )
    log.info("indexing %s (an HNSW graph from %d points on)", name, settings.store.hnsw_threshold)
    store.optimize(name)
    if plan.data is not None:
        titles = FieldStats.of(p.payload["title_terms"] for p in points)
        save_corpus_stats(store, corpus_collection(name), CorpusStats(titles))
        numbered = {d.doc_id: i for i, d in enumerate(documents)}
        build_supervised(store, name, encoder, plan.data, settings, numbered)


def build_index(
    settings: RetrievalSettings, store: Store, encoder: DenseEncoder, force: bool = False
) -> IndexReport:
    """Make the alias point at a complete, current version: build it unless it is there."""
    plan = plan_index(settings, encoder)
    alias = settings.store.collection
    if not force and is_current(store, alias, plan):
        log.info("alias %s already points at complete collection %s", alias, plan.name)
        return IndexReport(plan.name, len(plan.documents), built=False)
    previous = store.resolve_alias(alias)
    build(settings, store, encoder, plan)
    store.set_alias(alias, plan.name)
    drop_old_versions(store, alias, keep={plan.name, previous})
    log.info("alias %s -> %s (%d documents)", alias, plan.name, len(plan.documents))
    return IndexReport(plan.name, len(plan.documents), built=True)


def main(argv: Sequence[str] | None = None) -> None:
    """CLI entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    parser.add_argument("--max-docs", type=int, help="index only the first N documents")
    args = parser.parse_args(argv)
    setup_logging()
    settings = RetrievalSettings()
    if args.max_docs:
        settings = settings.updated(experiment={"max_docs": args.max_docs})
    store = open_store(settings.store)
    try:
        # Indexing is a batch job: give the model every core. It also prepares the served model.
        encoder = OnnxMiniLM(threads=max(settings.encode_threads, 2), cache_dir=settings.cache_dir)
        report = build_index(settings, store, encoder, force=args.force)
    finally:
        store.close()
    state = "built" if report.built else "already up to date"
    print(f"{report.collection}: {report.documents} documents, {state}")


if __name__ == "__main__":
    main()
