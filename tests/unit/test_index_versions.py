"""Which collection names a build of one alias counts as its own versions (and may drop)."""

import pytest

from services.retrieval.indexing.versions import HASH_CHARS, collection_version, version_of
from services.retrieval.query.index_version import (
    knn_collection,
    ranker_collection,
    versioned_collection,
)

HASH = collection_version("corpus", "model")
OTHER = collection_version("other corpus", "model")


def test_the_names_a_build_makes_are_its_own() -> None:
    assert len(HASH) == HASH_CHARS
    documents = versioned_collection("nfcorpus", HASH)
    for name in (documents, knn_collection(documents), ranker_collection(documents)):
        assert version_of("nfcorpus", name) == documents
    # An alias with characters a pattern would read as syntax is matched literally.
    dotted = versioned_collection("nf.corpus+1", HASH)
    assert version_of("nf.corpus+1", ranker_collection(dotted)) == dotted
    assert version_of("nf.corpus+1", f"nfXcorpus+1-{HASH}") is None


@pytest.mark.parametrize(
    "name",
    [
        f"nfcorpus-staging-{HASH}",  # a neighbouring alias's documents
        f"nfcorpus-staging-{HASH}-knn",
        f"nfcorpus-staging-{HASH}-ranker",
        f"nfcorpus-{HASH}-staging-{OTHER}",  # an alias that itself looks like a version
        f"nfcorpus-{HASH}x",  # hash followed by more characters
        f"nfcorpus-{HASH}-knnx",
        f"nfcorpus-{HASH}-knn-ranker",
        f"nfcorpus-{HASH}-",
        f"nfcorpus-{HASH[:-1]}",  # hash too short
        f"nfcorpus-{HASH}0",  # hash too long
        f"nfcorpus-{HASH.upper()}",  # a build writes lowercase hex only
        f"nfcorpus-{'g' * HASH_CHARS}",  # not hex
        "nfcorpus",  # the alias's own name (a collection made by hand)
        "nfcorpus-",
        f"xnfcorpus-{HASH}",  # another alias ending in this one
        f"other-{HASH}",
        f"{HASH}",
    ],
)
def test_other_names_are_not(name: str) -> None:
    assert version_of("nfcorpus", name) is None


def test_the_neighbour_alias_sees_only_its_own() -> None:
    mine = versioned_collection("nfcorpus", HASH)
    theirs = versioned_collection("nfcorpus-staging", HASH)
    assert version_of("nfcorpus-staging", knn_collection(theirs)) == theirs
    assert version_of("nfcorpus-staging", knn_collection(mine)) is None
