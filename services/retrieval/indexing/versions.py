"""Which index version a build makes, and which versions are kept.

A version is four collections sharing one name (:mod:`services.retrieval.query.index_version`).
The name's hash covers everything that changes what the version serves (corpus content, model,
BM25 parameters, schema, the dense index's build settings, training data, features and ranker
settings), so a build with other inputs never overwrites a version in service; the service
reads the alias, which moves once a version is complete.

A build then drops the older versions of its alias, and only those: a name is a version of alias
``X`` only if it is exactly ``X-<hash>``, ``X-<hash>-knn``, ``X-<hash>-corpus`` or
``X-<hash>-ranker`` with a hash of :data:`HASH_CHARS` lowercase hex digits, so another alias's
collections on the same store (``X-staging-<hash>``, say) and collections made by hand are never
touched.
"""

from __future__ import annotations

import hashlib
import logging
import re

from services.retrieval.indexing.training import PARAMS, ROUNDS, SEEDS
from services.retrieval.query import bm25_table, judged_by, votes
from services.retrieval.query.features import FEATURES
from services.retrieval.settings import RetrievalSettings
from services.retrieval.store.base import Store

log = logging.getLogger(__name__)

# 2: points stored in a fixed order (reproducible builds); a version-1 index is rebuilt.
# 3: dense vectors memory-mapped (Cold) and no WAL: same points, less resident memory.
# 4: documents carry their abstract's length, training queries their analyzed terms.
# 5: shards search on the calling thread (no search pool): the same points and rankings.
# 6: documents' point ids are their numbers in the corpus's order (were uuid5 of the doc id).
# 7: the abstract's length is the documents' field text_length (was text_terms).
# 8: the ranker's point carries its trees as onnxruntime graphs (a server needs no LightGBM).
# 9: training queries carry their judged documents' point ids, documents their ordinal (place in
#    doc id order); a fourth collection holds the corpus's title statistics (a served version
#    reads the judged documents and those statistics, never the whole corpus).
# 10: shards rebuilt once written (one immutable segment each): the BM25 index memory-mapped, an
#     HNSW graph from RETRIEVAL_HNSW_THRESHOLD points on; NFCorpus's collections have none and
#     answer as before, bit for bit. The graph's build settings are part of the name's hash.
# 11: 9 and 10 as first committed numbered documents by their ordinals, which a rebuilt segment
#     (ordered by point id) turned into other ties: such an index is rebuilt.
SCHEMA_VERSION = "11"
#: Length of a version's hash in collection names (hex digits of a SHA-256).
HASH_CHARS = 12


def collection_version(*parts: object) -> str:
    """Short hash of everything that shapes the stored vectors and the trained ranker."""
    key = "|".join(str(p) for p in (SCHEMA_VERSION, *parts))
    return hashlib.sha256(key.encode()).hexdigest()[:HASH_CHARS]


def dense_index_config(settings: RetrievalSettings, documents: int) -> str:
    """What shapes a version's dense index as built (``ef`` and oversampling are read at search).

    On a Qdrant server, the layout chosen too (shards, copies, what stays on disk): a collection
    keeps the layout it was created with, so another one takes a new version, built beside the
    served one, rather than a build that finds its version current and changes nothing. In the
    embedded store, the segments' size once the ``documents`` fill more than one (a corpus in
    one segment keeps the name it had before segments were bounded).
    """
    store = settings.store
    built = f"{store.hnsw_threshold}|{store.hnsw_m}|{store.hnsw_ef_construct}|{store.quantization}"
    if store.backend == "server":
        layout = store.server_layout.chosen()
    else:
        segmented = documents > store.edge_segment_points
        layout = f"segments={store.edge_segment_points}" if segmented else ""
    return f"{built}|{layout}" if layout else built


def supervised_config(settings: RetrievalSettings, training_fingerprint: str | None) -> str:
    """What the kNN collection and the ranker depend on beyond the documents.

    ``training_fingerprint`` is None for an index without training data (zero-shot).
    """
    if training_fingerprint is None:
        return "zero-shot"
    knn, feedback = settings.knn, settings.feedback
    # The constants of the lexical votes and the short-text BM25 shape features the ranker learns.
    lexical = (bm25_table.SHORT_TEXTS, votes.LEXICAL_NEIGHBOURS, votes.LEXICAL_POWER)
    return (
        f"{training_fingerprint}|{FEATURES}|{sorted(PARAMS.items())}|{ROUNDS}|{SEEDS}|{knn.neighbours}|"
        f"{knn.power}|{knn.vote_depth}|{settings.hybrid.candidates}|{feedback.docs}|"
        f"{feedback.terms}|{feedback.weight}|{lexical}|{judged_by.GAMMA}"
    )


def version_of(alias: str, name: str) -> str | None:
    """The documents collection of the version of ``alias`` that ``name`` belongs to, or None.

    ``name`` belongs to a version only if it is one of the four names a build makes
    (:mod:`services.retrieval.query.index_version`): anything else, including another alias that
    starts with ``alias-``, is not this alias's to drop.
    """
    hashed = rf"{re.escape(alias)}-[0-9a-f]{{{HASH_CHARS}}}"
    found = re.fullmatch(rf"({hashed})(?:-knn|-corpus|-ranker)?", name)
    return found.group(1) if found else None


def drop_old_versions(store: Store, alias: str, keep: set[str | None]) -> None:
    """Keep the new version and the one it replaced (for a quick rollback), drop the rest.

    Only the collections of this alias's own versions are dropped (:func:`version_of`).
    """
    kept = {k for k in keep if k}
    for name in store.list_collections():
        version = version_of(alias, name)
        if version is not None and version not in kept:
            log.info("dropping old collection %s", name)
            store.delete_collection(name)
