"""How one index version's collections are named in Qdrant, and what vectors each holds.

A version is three collections sharing one name: the documents ``<alias>-<hash>``, the voting
training queries ``<alias>-<hash>-knn`` and the ranker ``<alias>-<hash>-ranker``. The hash is
computed at index time (:mod:`services.retrieval.indexing.versions`); the service reads the alias and
finds the other two collections by these names.
"""

from __future__ import annotations

from services.retrieval.encoders.dense import DIMENSION
from services.retrieval.types import CollectionSpec

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
