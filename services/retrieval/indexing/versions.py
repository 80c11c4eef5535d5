"""Which index version a build makes, and which versions are kept.

A version is three collections sharing one name (:mod:`services.retrieval.query.index_version`).
The name's hash covers everything that changes what the version serves (corpus content, model,
BM25 parameters, schema, training data, features and ranker settings), so a build with other
inputs never overwrites a version in service; the service reads the alias, which moves once a
version is complete.
"""

from __future__ import annotations

import hashlib
import logging

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
SCHEMA_VERSION = "7"


def collection_version(*parts: object) -> str:
    """Short hash of everything that shapes the stored vectors and the trained ranker."""
    key = "|".join(str(p) for p in (SCHEMA_VERSION, *parts))
    return hashlib.sha256(key.encode()).hexdigest()[:12]


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


def drop_old_versions(store: Store, alias: str, keep: set[str | None]) -> None:
    """Keep the new version and the one it replaced (for a quick rollback), drop the rest."""
    kept = tuple(k for k in keep if k)
    for name in store.list_collections():
        mine = any(name == k or name.startswith(f"{k}-") for k in kept)
        if name.startswith(f"{alias}-") and not mine:
            log.info("dropping old collection %s", name)
            store.delete_collection(name)
