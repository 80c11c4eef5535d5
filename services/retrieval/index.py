"""The indexer: NFCorpus -> dense + BM25 vectors -> a versioned Qdrant collection -> alias.

``python -m services.retrieval.index`` (or ``make index``). The collection name carries a version
hash of everything that shapes the vectors (corpus content, model, BM25 parameters, schema), and
the service reads an alias. A build fills a fresh versioned collection and moves the alias only
once every point is in, so a re-index never serves a half-built collection. Point ids are uuid5
of the doc id: re-running (also after an interruption) overwrites points instead of adding any.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from rich.progress import Progress

from services.retrieval.corpus import (
    corpus_fingerprint,
    document_text,
    ensure_dataset,
    load_corpus,
)
from services.retrieval.dense import DenseEncoder, Matrix, OnnxMiniLM
from services.retrieval.features import FEATURES
from services.retrieval.pipeline import ranker_collection
from services.retrieval.ranker import PARAMS, ROUNDS
from services.retrieval.settings import RetrievalSettings
from services.retrieval.sparse import Bm25Params, encode_documents
from services.retrieval.store import open_store
from services.retrieval.store.base import CollectionSpec, Point, Store, point_id
from services.retrieval.text import analyze
from services.retrieval.training import (
    TrainingData,
    build_supervised,
    load_training_data,
    train_votes,
)
from services.retrieval.vector_cache import cached_vectors
from services.telemetry.logging import setup_logging

log = logging.getLogger(__name__)
SCHEMA_VERSION = "1"
UPSERT_BATCH = 128
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What a run did."""

    collection: str
    documents: int
    built: bool


def collection_version(*parts: object) -> str:
    """Short hash of everything that shapes the stored vectors and the trained ranker."""
    key = "|".join(str(p) for p in (SCHEMA_VERSION, *parts))
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def _supervised_config(settings: RetrievalSettings, data: TrainingData | None) -> str:
    """What the kNN collection and ranker depend on beyond the documents."""
    if data is None:
        return "zero-shot"
    s = settings
    return (
        f"{data.fingerprint()}|{FEATURES}|{sorted(PARAMS.items())}|{ROUNDS}|{s.knn_neighbours}|"
        f"{s.knn_power}|{s.vote_depth}|{s.candidates}|{s.feedback_docs}|{s.feedback_terms}|"
        f"{s.feedback_weight}"
    )


def _batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _encode_with_progress(encoder: DenseEncoder, texts: list[str], batch: int) -> Matrix:
    parts = []
    with Progress(transient=True) as progress:
        task = progress.add_task("encoding documents", total=len(texts))
        for chunk in _batches(texts, batch * 8):
            parts.append(encoder.encode(chunk, batch_size=batch))
            progress.advance(task, len(chunk))
    return np.concatenate(parts).astype(np.float32)


def build_index(
    settings: RetrievalSettings, store: Store, encoder: DenseEncoder, force: bool = False
) -> IndexReport:
    """Make ``settings.collection`` point at a complete, current collection."""
    folder = ensure_dataset(settings.data_dir, settings.download_url, settings.download_md5)
    docs = load_corpus(folder, limit=settings.max_docs)
    data = (
        load_training_data(folder, settings.supervision, settings.max_train_queries)
        if settings.mode == "full"
        else None
    )
    fingerprint = corpus_fingerprint(docs)
    bm25 = Bm25Params()
    version = collection_version(
        fingerprint, encoder.model_id, bm25.k1, bm25.b, _supervised_config(settings, data)
    )
    name = f"{settings.collection}-{version}"
    alias = settings.collection
    current = store.resolve_alias(alias)
    complete = store.collection_exists(name) and store.count(name) == len(docs)
    if data is not None:
        complete = complete and store.collection_exists(ranker_collection(name))
    if not force and current == name and complete:
        log.info("alias %s already points at complete collection %s", alias, name)
        return IndexReport(name, len(docs), built=False)

    texts = [document_text(d) for d in docs]
    dense = cached_vectors(
        settings.cache_dir / "vectors",
        f"{encoder.model_id}-{fingerprint}",
        len(docs),
        lambda: _encode_with_progress(encoder, texts, settings.encode_batch_size),
    )
    sparse = encode_documents(texts, bm25)
    if not store.collection_exists(name):
        store.create_collection(name, CollectionSpec(dense_size=encoder.dimension))
    votes = train_votes(data.learners) if data is not None else {}
    points = [
        Point(
            id=point_id(d.doc_id),
            dense=dense[i].tolist(),
            sparse=sparse[i],
            payload={
                "doc_id": d.doc_id,
                "title": d.title,
                "text": d.text,
                # Ranker features: analyzed title terms, and how many training queries
                # mark the document relevant (the query-independent prior).
                "title_terms": analyze(d.title),
                "train_votes": votes.get(d.doc_id, 0),
            },
        )
        for i, d in enumerate(docs)
    ]
    with Progress(transient=True) as progress:
        task = progress.add_task(f"upserting into {name}", total=len(points))
        for batch in _batches(points, UPSERT_BATCH):
            store.upsert(name, batch)
            progress.advance(task, len(batch))
    stored = store.count(name)
    if stored != len(docs):
        raise RuntimeError(f"{name} holds {stored} points after upserting {len(docs)} documents")
    if data is not None:
        build_supervised(store, name, encoder, data, settings)
    store.set_alias(alias, name)
    _drop_old_versions(store, alias, keep={name, current})
    log.info("alias %s -> %s (%d documents)", alias, name, len(docs))
    return IndexReport(name, len(docs), built=True)


def _drop_old_versions(store: Store, alias: str, keep: set[str | None]) -> None:
    """Keep the new version and the one it replaced (for a quick rollback), drop the rest.

    A version is its documents collection plus ``<name>-knn`` and ``<name>-ranker``.
    """
    kept = tuple(k for k in keep if k)
    for name in store.list_collections():
        mine = any(name == k or name.startswith(f"{k}-") for k in kept)
        if name.startswith(f"{alias}-") and not mine:
            log.info("dropping old collection %s", name)
            store.delete_collection(name)


def main(argv: Sequence[str] | None = None) -> None:
    """CLI entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    parser.add_argument("--max-docs", type=int, help="index only the first N documents")
    args = parser.parse_args(argv)
    setup_logging()
    overrides = {"max_docs": args.max_docs} if args.max_docs else {}
    settings = RetrievalSettings(**overrides)
    store = open_store(settings)
    try:
        # Indexing is a batch job: give the model every core.
        encoder = OnnxMiniLM(threads=max(settings.encode_threads, 2))
        report = build_index(settings, store, encoder, force=args.force)
    finally:
        store.close()
    state = "built" if report.built else "already up to date"
    print(f"{report.collection}: {report.documents} documents, {state}")


if __name__ == "__main__":
    main()
