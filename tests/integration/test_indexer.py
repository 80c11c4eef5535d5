import subprocess
import sys
from pathlib import Path
from typing import Literal

import numpy as np
import pytest

from services.retrieval.dense import OnnxMiniLM
from services.retrieval.index import build_index
from services.retrieval.settings import RetrievalSettings
from services.retrieval.store import open_store
from services.retrieval.store.base import CollectionSpec, Store
from tests.support.servers import REPO

DOCS = 30


def _settings(
    tmp_path: Path, store: Literal["edge", "server"], max_docs: int = DOCS
) -> RetrievalSettings:
    return RetrievalSettings(
        store=store,
        edge_path=tmp_path / "edge",
        qdrant_path=str(tmp_path / "local") if store == "server" else None,
        cache_dir=tmp_path / "cache",
        max_docs=max_docs,
    )


@pytest.mark.parametrize("backend", ["edge", "server"])
def test_rerun_is_idempotent_and_versions_rotate(
    tmp_path: Path, backend: Literal["edge", "server"], encoder: OnnxMiniLM
) -> None:
    settings = _settings(tmp_path, backend)
    store: Store = open_store(settings)
    try:
        first = build_index(settings, store, encoder)
        assert first.built and first.documents == DOCS
        assert store.resolve_alias("nfcorpus") == first.collection
        assert store.count(first.collection) == DOCS

        again = build_index(settings, store, encoder)
        assert not again.built and again.collection == first.collection

        forced = build_index(settings, store, encoder, force=True)
        assert forced.built and forced.collection == first.collection
        assert store.count(first.collection) == DOCS  # overwritten, nothing duplicated

        # New content -> new version; the previous one is kept for rollback, older ones dropped.
        second = build_index(_settings(tmp_path, backend, DOCS + 5), store, encoder)
        third = build_index(_settings(tmp_path, backend, DOCS + 7), store, encoder)
        assert len({first.collection, second.collection, third.collection}) == 3
        assert store.resolve_alias("nfcorpus") == third.collection
        assert sorted(store.list_collections()) == sorted([second.collection, third.collection])
        assert store.count(third.collection) == DOCS + 7
    finally:
        store.close()


def test_resumes_a_half_built_collection(tmp_path: Path, encoder: OnnxMiniLM) -> None:
    settings = _settings(tmp_path, "edge")
    store = open_store(settings)
    try:
        report = build_index(settings, store, encoder)
        # Simulate a crash mid-way through a rebuild: alias gone, collection partly emptied.
        store.delete_collection(report.collection)
        store.create_collection(report.collection, CollectionSpec(dense_size=384))
        resumed = build_index(settings, store, encoder)
        assert resumed.built and store.count(resumed.collection) == DOCS
    finally:
        store.close()


def test_cache_is_used_and_a_corrupt_cache_is_ignored(tmp_path: Path, encoder: OnnxMiniLM) -> None:
    settings = _settings(tmp_path, "edge")
    store = open_store(settings)
    try:
        build_index(settings, store, encoder)
        (cached,) = (tmp_path / "cache" / "vectors").glob("*.npy")
        vectors = np.load(cached)
        assert vectors.shape == (DOCS, 384)
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        cached.write_bytes(b"not an npy file")
        assert build_index(settings, store, encoder, force=True).built
        assert np.load(cached).shape == (DOCS, 384)  # rewritten
    finally:
        store.close()


def test_cli_runs_twice_without_duplicates(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "OPENBLAS_NUM_THREADS": "1",
        "PYTHONPATH": str(REPO),
        "RETRIEVAL_EDGE_PATH": str(tmp_path / "edge"),
        "RETRIEVAL_CACHE_DIR": str(tmp_path / "cache"),
    }
    cmd = [sys.executable, "-m", "services.retrieval.index", "--max-docs", "12"]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=True)
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=True)
    assert "12 documents, built" in first.stdout
    assert "12 documents, already up to date" in second.stdout
    store = open_store(RetrievalSettings(edge_path=tmp_path / "edge"))
    try:
        assert store.count(store.resolve_alias("nfcorpus") or "") == 12
    finally:
        store.close()


def test_server_store_needs_a_location() -> None:
    with pytest.raises(ValueError, match="RETRIEVAL_STORE=server needs"):
        RetrievalSettings(store="server")
