"""One index version in Qdrant as a query reads it: its collections' names and what they store.

A version is three collections sharing one name: the documents ``<alias>-<hash>``, the voting
training queries ``<alias>-<hash>-knn`` and the ranker ``<alias>-<hash>-ranker``. The hash is
computed at index time (:mod:`services.retrieval.indexing.versions`); the service reads the
alias and finds the other two collections by these names. Besides vectors, a version stores:

- documents: payload ``doc_id``, ``title``, ``text``, plus the ranker's static features
  (analyzed title terms, how many training queries judge the document relevant, and the
  analyzed abstract's length);
- the voting training queries: embedding + ``{"query_id", "relevant": {doc_id: grade}}``
  (the documents' and the voting queries' embeddings also give the nudged view,
  :mod:`services.retrieval.query.judged_by`);
- the ranker: one point whose payload holds the LightGBM model text, its trees as onnxruntime
  graphs and how it was trained.

A build writes them (:mod:`services.retrieval.indexing.points`); a server reads them here, once
per version.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from services.retrieval.query.ranker import Ranker
from services.retrieval.store.base import Store, StoreError
from services.retrieval.types import DocInfo, PointId, point_id

RANKER_POINT = point_id("ranker")
DOC_INFO = ["doc_id", "title", "title_terms", "train_votes", "text_length"]


def versioned_collection(alias: str, version: str) -> str:
    """The documents collection of one version."""
    return f"{alias}-{version}"


def knn_collection(collection: str) -> str:
    """Name of the training-query collection built with the documents ``collection``."""
    return f"{collection}-knn"


def ranker_collection(collection: str) -> str:
    """Name of the one-point collection holding the ranker trained on ``collection``."""
    return f"{collection}-ranker"


@dataclass(frozen=True, slots=True)
class DocRecords:
    """A documents collection as the ranker reads it: ids, static features and vectors."""

    names: dict[PointId, str]  # point id -> doc id
    info: dict[str, DocInfo]  # doc id -> its static ranker features
    vectors: dict[str, npt.NDArray[np.float32]]  # doc id -> its dense vector
    titles: dict[str, str]  # doc id -> its title, as an answer shows it


def read_documents(store: Store, collection: str) -> DocRecords:
    """Every document's id, title, static ranker features and dense vector, in one scroll."""
    out = DocRecords({}, {}, {}, {})
    for h in store.scroll(collection, payload=DOC_INFO, vectors=True):
        doc_id = str(h.payload["doc_id"])
        out.names[h.id] = doc_id
        out.titles[doc_id] = str(h.payload.get("title", ""))
        out.info[doc_id] = DocInfo(
            tuple(h.payload.get("title_terms", ())),
            int(h.payload.get("train_votes", 0)),
            int(h.payload.get("text_length", 0)),
        )
        if h.dense is not None:
            out.vectors[doc_id] = h.dense
    return out


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


def load_ranker(store: Store, name: str) -> Ranker:
    """The model a build stored; :class:`StoreError` if there is none or it cannot be scored here.

    :func:`services.retrieval.indexing.points.save_ranker` stores it. A ranker stored without
    its graphs needs LightGBM and onnx to be scored (:mod:`~services.retrieval.query.ranker`).
    """
    hits = store.retrieve(name, [RANKER_POINT])
    if not hits:
        raise StoreError(f"no ranker model in collection {name}")
    payload = hits[0].payload
    graphs = payload.get("graphs")
    meta = json.loads(str(payload["meta"]))
    try:
        return Ranker.from_text(
            str(payload["model"]), meta, None if graphs is None else str(graphs)
        )
    except ImportError as e:
        raise StoreError(
            f"the ranker in {name} needs {e.name} (stored without onnxruntime graphs by an older "
            "indexer, or a model they cannot score): re-index with this version"
        ) from e
