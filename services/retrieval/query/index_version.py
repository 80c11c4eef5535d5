"""One index version in Qdrant: how its collections are named, and what each stores.

A version is three collections sharing one name: the documents ``<alias>-<hash>``, the voting
training queries ``<alias>-<hash>-knn`` and the ranker ``<alias>-<hash>-ranker``. The hash is
computed at index time (:mod:`services.retrieval.indexing.versions`); the service reads the alias and
finds the other two collections by these names. Besides vectors, a version stores:

- documents: payload ``doc_id``, ``title``, ``text``, plus the ranker's static features
  (analyzed title terms, and how many training queries judge the document relevant);
- the voting training queries: embedding + ``{"query_id", "relevant": {doc_id: grade}}``
  (the documents' and the voting queries' embeddings also give the nudged view,
  :mod:`services.retrieval.query.judged_by`);
- the ranker: one point whose payload holds the LightGBM model text and how it was trained.

Everything here is written at index time and read at query time, in one place.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from services.nfcorpus.dataset import Document
from services.retrieval.encoders.dense import DIMENSION, Matrix
from services.retrieval.query.ranker import Ranker
from services.retrieval.store.base import Store, StoreError
from services.retrieval.text import analyze
from services.retrieval.types import (
    CollectionSpec,
    DocInfo,
    Point,
    PointId,
    SparseVector,
    point_id,
)

RANKER_POINT = point_id("ranker")
DOC_INFO = ["doc_id", "title", "title_terms", "train_votes", "text_terms"]

#: The training-query collection: one MiniLM embedding per query, judgements as payload.
KNN_SPEC = CollectionSpec(dense_size=DIMENSION, sparse=False)
#: The ranker collection: a single point whose payload holds the model (the vector is unused).
RANKER_SPEC = CollectionSpec(dense_size=1, sparse=False)


def versioned_collection(alias: str, version: str) -> str:
    """The documents collection of one version."""
    return f"{alias}-{version}"


def knn_collection(docs: str) -> str:
    """Name of the training-query collection built with documents collection ``docs``."""
    return f"{docs}-knn"


def ranker_collection(docs: str) -> str:
    """Name of the one-point collection holding the ranker trained on ``docs``."""
    return f"{docs}-ranker"


def document_points(
    docs: Sequence[Document],
    dense: Matrix,
    sparse: Sequence[SparseVector],
    train_votes: Mapping[str, int],
) -> list[Point]:
    """One point per document, numbered in the order given (the corpus's order).

    The same corpus gives the same numbers, so re-upserting replaces, never duplicates; the
    order given is also the order of upserting, which breaks ties between equal scores.
    """
    return [
        Point(
            id=i,
            dense=dense[i].tolist(),
            sparse=sparse[i],
            payload={
                "doc_id": d.doc_id,
                "title": d.title,
                "text": d.text,
                # Ranker features: analyzed title terms, how many training queries mark the
                # document relevant (the query-independent prior), the abstract's length.
                "title_terms": analyze(d.title),
                "train_votes": train_votes.get(d.doc_id, 0),
                "text_terms": len(analyze(d.text)),
            },
        )
        for i, d in enumerate(docs)
    ]


@dataclass(frozen=True, slots=True)
class DocRecords:
    """A documents collection as the ranker reads it: ids, static features and vectors."""

    names: dict[PointId, str]  # point id -> doc id
    info: dict[str, DocInfo]  # doc id -> its static ranker features
    vectors: dict[str, npt.NDArray[np.float32]]  # doc id -> its dense vector
    titles: dict[str, str]  # doc id -> its title, as an answer shows it


def read_documents(store: Store, docs: str) -> DocRecords:
    """Every document's id, title, static ranker features and dense vector, in one scroll."""
    out = DocRecords({}, {}, {}, {})
    for h in store.scroll(docs, payload=DOC_INFO, vectors=True):
        doc_id = str(h.payload["doc_id"])
        out.names[h.id] = doc_id
        out.titles[doc_id] = str(h.payload.get("title", ""))
        out.info[doc_id] = DocInfo(
            tuple(h.payload.get("title_terms", ())),
            int(h.payload.get("train_votes", 0)),
            int(h.payload.get("text_terms", 0)),
        )
        if h.dense is not None:
            out.vectors[doc_id] = h.dense
    return out


def knn_points(
    query_ids: Sequence[str],
    vectors: Matrix,
    qrels: Mapping[str, Mapping[str, int]],
    texts: Mapping[str, str],
) -> list[Point]:
    """One point per training query (the ids are uuid5 of ``knn:<query id>``).

    The payload keeps the query's judgements and analyzed terms (the lexical kNN view).
    """
    return [
        Point(
            id=point_id(f"knn:{q}"),
            dense=vectors[i].tolist(),
            payload={"query_id": q, "relevant": dict(qrels[q]), "terms": analyze(texts[q])},
        )
        for i, q in enumerate(query_ids)
    ]


def upsert_knn(store: Store, name: str, points: Sequence[Point], batch: int = 256) -> None:
    """Create the collection if needed and upsert the training queries."""
    if not store.collection_exists(name):
        store.create_collection(name, KNN_SPEC)
    for start in range(0, len(points), batch):
        store.upsert(name, points[start : start + batch])


@dataclass(frozen=True, slots=True)
class KnnTable:
    """The voting queries of one index version: point id -> query id, judgements, terms, vectors."""

    names: dict[PointId, str]
    judgements: dict[str, dict[str, int]]
    terms: dict[str, tuple[str, ...]]
    vectors: dict[str, npt.NDArray[np.float32]]


def read_knn(store: Store, name: str) -> KnnTable:
    """The whole training-query collection, read once per index version."""
    table = KnnTable({}, {}, {}, {})
    for h in store.scroll(name, payload=["query_id", "relevant", "terms"], vectors=True):
        query_id = table.names[h.id] = str(h.payload["query_id"])
        table.judgements[query_id] = dict(h.payload["relevant"])
        table.terms[query_id] = tuple(h.payload.get("terms", ()))
        if h.dense is not None:
            table.vectors[query_id] = h.dense
    return table


def save_ranker(store: Store, name: str, ranker: Ranker) -> None:
    """Store the model as the payload of the one point of collection ``name``."""
    if not store.collection_exists(name):
        store.create_collection(name, RANKER_SPEC)
    payload = {"model": ranker.to_text(), "meta": json.dumps(ranker.meta)}
    store.upsert(name, [Point(RANKER_POINT, [1.0], payload)])


def load_ranker(store: Store, name: str) -> Ranker:
    """The model stored by :func:`save_ranker`; :class:`StoreError` if there is none."""
    hits = store.retrieve(name, [RANKER_POINT])
    if not hits:
        raise StoreError(f"no ranker model in collection {name}")
    payload = hits[0].payload
    return Ranker.from_text(str(payload["model"]), json.loads(str(payload["meta"])))
