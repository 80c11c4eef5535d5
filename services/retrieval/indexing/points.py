"""What a build writes into an index version: the documents, the voting queries, the ranker.

The version's collections are named, and read back at query time, by
:mod:`services.retrieval.query.index_version`; the payload fields written here are the ones it
reads (``tests/integration/test_indexer.py`` reads back a whole build).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence

from services.retrieval.encoders.dense import DIMENSION, Matrix
from services.retrieval.encoders.sparse import Bm25Params, document_vector
from services.retrieval.indexing.chunks import Chunk
from services.retrieval.indexing.scan import CorpusScan
from services.retrieval.query.documents import CorpusStats
from services.retrieval.query.index_version import CORPUS_POINT, RANKER_POINT
from services.retrieval.query.ranker import Ranker
from services.retrieval.store.base import Store
from services.retrieval.text import analyze, document_text
from services.retrieval.types import CollectionSpec, Point, point_id

#: The training-query collection: one MiniLM embedding per query, judgements as payload. Small:
#: the training queries do not grow with the corpus, and every search reads their votes.
KNN_SPEC = CollectionSpec(dense_size=DIMENSION, sparse=False, small=True)
#: The ranker and corpus collections: one point whose payload holds the model or the corpus's
#: statistics (the vector is unused).
RANKER_SPEC = CollectionSpec(dense_size=1, sparse=False, small=True)


def document_points(
    chunk: Chunk,
    dense: Matrix,
    scan: CorpusScan,
    train_votes: Mapping[str, int],
    bm25: Bm25Params,
) -> list[Point]:
    """One point per document of ``chunk``, numbered by its place in the corpus.

    The same corpus gives the same numbers, so re-upserting replaces, never duplicates; the
    order given is also the order of upserting, and the engine's own numbering of the points
    (which a rebuilt segment takes from the point ids) breaks ties between equal scores.
    """
    points = []
    for offset, d in enumerate(chunk.documents):
        i = chunk.start + offset
        bag = Counter(analyze(document_text(d)))
        points.append(
            Point(
                id=i,
                dense=dense[offset].tolist(),
                sparse=document_vector(bag, scan.terms, bm25),
                payload={
                    "doc_id": d.doc_id,
                    "title": d.title,
                    "text": d.text,
                    # Ranker features: analyzed title terms, how many training queries mark the
                    # document relevant (the query-independent prior), the abstract's length.
                    "title_terms": analyze(d.title),
                    "train_votes": train_votes.get(d.doc_id, 0),
                    "text_length": len(analyze(d.text)),
                    "ordinal": int(scan.ordinals[i]),
                },
            )
        )
    return points


def point_bytes(point: Point) -> int:
    """About what ``point`` weighs in a write: its vectors' values and its payload as JSON."""
    sparse = len(point.sparse.indices) * 8 if point.sparse is not None else 0
    return len(point.dense) * 4 + sparse + len(json.dumps(point.payload))


def by_bytes(points: Sequence[Point], limit: int) -> Iterator[Sequence[Point]]:
    """``points`` in order, in writes of at most ``limit`` bytes (a bigger point goes alone)."""
    start, size = 0, 0
    for i, point in enumerate(points):
        weight = point_bytes(point)
        if i > start and size + weight > limit:
            yield points[start:i]
            start, size = i, 0
        size += weight
    if start < len(points):
        yield points[start:]


def knn_points(
    query_ids: Sequence[str],
    vectors: Matrix,
    qrels: Mapping[str, Mapping[str, int]],
    texts: Mapping[str, str],
    numbers: Mapping[str, int],
) -> list[Point]:
    """One point per training query (the ids are uuid5 of ``knn:<query id>``).

    The payload keeps the query's judgements, the point ids of the documents it judged that
    the corpus holds (``numbers``: doc id -> point id; a served version reads the judged
    documents by them, never the whole corpus) and its analyzed terms (the lexical kNN view).
    """
    return [
        Point(
            id=point_id(f"knn:{q}"),
            dense=vectors[i].tolist(),
            payload={
                "query_id": q,
                "relevant": dict(qrels[q]),
                "points": {d: numbers[d] for d in qrels[q] if d in numbers},
                "terms": analyze(texts[q]),
            },
        )
        for i, q in enumerate(query_ids)
    ]


def upsert_knn(store: Store, name: str, points: Sequence[Point], batch: int = 256) -> None:
    """Create the collection if needed, upsert the training queries and index them."""
    if not store.collection_exists(name):
        store.create_collection(name, KNN_SPEC)
    for start in range(0, len(points), batch):
        store.upsert(name, points[start : start + batch])
    store.optimize(name)


def save_corpus_stats(store: Store, name: str, stats: CorpusStats) -> None:
    """Store the corpus's statistics as the payload of the one point of collection ``name``.

    :func:`~services.retrieval.query.index_version.load_corpus_stats` reads it back.
    """
    if not store.collection_exists(name):
        store.create_collection(name, RANKER_SPEC)
    store.upsert(name, [Point(CORPUS_POINT, [1.0], stats.to_payload())])


def save_ranker(store: Store, name: str, ranker: Ranker) -> None:
    """Store the model as the payload of the one point of collection ``name``.

    :func:`~services.retrieval.query.index_version.load_ranker` reads it back.
    """
    if not store.collection_exists(name):
        store.create_collection(name, RANKER_SPEC)
    payload = {
        "model": ranker.to_text(),
        "graphs": ranker.graphs_text(),
        "meta": json.dumps(ranker.meta),
    }
    store.upsert(name, [Point(RANKER_POINT, [1.0], payload)])
    store.optimize(name)
