"""One index version in Qdrant as a query reads it: its collections' names and what they store.

A version is four collections sharing one name: the documents ``<alias>-<hash>``, the voting
training queries ``<alias>-<hash>-knn``, the corpus's statistics ``<alias>-<hash>-corpus`` and
the ranker ``<alias>-<hash>-ranker``. The hash is computed at index time
(:mod:`services.retrieval.indexing.versions`); the service reads the alias and finds the other
collections by these names. Besides vectors, a version stores:

- documents, numbered in doc id order: payload ``doc_id``, ``title``, ``text``, plus the
  ranker's static features (analyzed title terms, how many training queries judge the document
  relevant, and the analyzed abstract's length);
- the voting training queries: embedding + ``{"query_id", "relevant": {doc_id: grade},
  "points": {doc_id: point id}}`` (the documents' and the voting queries' embeddings also give
  the nudged view, :mod:`services.retrieval.query.judged_by`);
- the corpus: one point whose payload holds its title statistics
  (:class:`~services.retrieval.query.documents.CorpusStats`);
- the ranker: one point whose payload holds the LightGBM model text, its trees as onnxruntime
  graphs and how it was trained.

A build writes them (:mod:`services.retrieval.indexing.points`); a server reads them here, once
per version, and of the documents only those a voting query judged.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from services.retrieval.query.documents import RANKER_FIELDS, CorpusStats, JudgedDocs
from services.retrieval.query.ranker import Ranker
from services.retrieval.store.base import Store, StoreError
from services.retrieval.types import PointId, point_id

RANKER_POINT = point_id("ranker")
CORPUS_POINT = point_id("corpus")


def versioned_collection(alias: str, version: str) -> str:
    """The documents collection of one version."""
    return f"{alias}-{version}"


def knn_collection(collection: str) -> str:
    """Name of the training-query collection built with the documents ``collection``."""
    return f"{collection}-knn"


def corpus_collection(collection: str) -> str:
    """Name of the one-point collection holding the statistics of the documents ``collection``."""
    return f"{collection}-corpus"


def ranker_collection(collection: str) -> str:
    """Name of the one-point collection holding the ranker trained on ``collection``."""
    return f"{collection}-ranker"


@dataclass(frozen=True, slots=True)
class KnnTable:
    """The voting queries of one index version: point id -> query id, judgements, terms, vectors.

    ``judged`` maps every document they judged that the corpus holds to its point id.
    """

    names: dict[PointId, str]
    judgements: dict[str, dict[str, int]]
    terms: dict[str, tuple[str, ...]]
    vectors: dict[str, npt.NDArray[np.float32]]
    judged: dict[str, int]


def read_knn(store: Store, name: str) -> KnnTable:
    """The whole training-query collection, read once per index version."""
    table = KnnTable({}, {}, {}, {}, {})
    fields = ["query_id", "relevant", "points", "terms"]
    for h in store.scroll(name, payload=fields, vectors=True):
        query_id = table.names[h.id] = str(h.payload["query_id"])
        table.judgements[query_id] = dict(h.payload["relevant"])
        table.judged.update((str(d), int(p)) for d, p in dict(h.payload["points"]).items())
        table.terms[query_id] = tuple(h.payload.get("terms", ()))
        if h.dense is not None:
            table.vectors[query_id] = h.dense
    return table


def read_judged(store: Store, collection: str, points: Sequence[int]) -> JudgedDocs:
    """The judged documents of ``collection`` (their point ids ``points``), with their vectors."""
    hits = store.retrieve(collection, sorted(set(points)), RANKER_FIELDS, vectors=True)
    if len(hits) != len(set(points)):
        raise StoreError(f"{collection} lacks documents its voting queries judged: rebuild it")
    return JudgedDocs(hits)


def load_corpus_stats(store: Store, name: str) -> CorpusStats:
    """The statistics a build stored (:func:`~services.retrieval.indexing.points.save_corpus_stats`)."""
    hits = store.retrieve(name, [CORPUS_POINT])
    if not hits:
        raise StoreError(f"no corpus statistics in collection {name}")
    return CorpusStats.from_payload(hits[0].payload)


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
