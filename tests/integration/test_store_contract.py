"""Both store backends honour the same contract: the server backend runs on qdrant-client's
local mode here, the embedded backend on a real qdrant-edge shard; the counting wrapper the MCP
server uses passes the same contract."""

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from harness.processes import REPO
from services.retrieval.store.base import Fusion, Store, StoreError
from services.retrieval.store.copies import owner_tag
from services.retrieval.store.counting import CountingStore
from services.retrieval.store.edge import EdgeStore
from services.retrieval.store.server import ServerStore
from services.retrieval.types import (
    Hit,
    SparseVector,
    VectorQuery,
    point_id,
)
from tests.support.toy_points import POINTS, SPEC


@pytest.fixture(params=["edge", "server-memory", "server-path", "counting"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    backend: Store
    if request.param == "edge":
        backend = EdgeStore(tmp_path / "edge")
    elif request.param == "counting":
        backend = CountingStore(EdgeStore(tmp_path / "edge"))
    elif request.param == "server-memory":
        backend = ServerStore(path=":memory:")
    else:
        backend = ServerStore(path=str(tmp_path / "local"))
    try:
        yield backend
    finally:
        backend.close()


def _ids(hits: list[Hit]) -> list[str]:
    return [h.payload["doc_id"] for h in hits]


def test_create_upsert_count_is_idempotent(store: Store) -> None:
    assert not store.collection_exists("c-1")
    store.create_collection("c-1", SPEC)
    assert store.collection_exists("c-1") and "c-1" in store.list_collections()
    store.upsert("c-1", POINTS)
    store.upsert("c-1", POINTS[:2])  # same ids again: replaced, not added
    assert store.count("c-1") == 3


def test_dense_and_sparse_search_in_one_batch(store: Store) -> None:
    store.create_collection("c", SPEC)
    store.upsert("c", POINTS)
    dense, sparse = store.search(
        "c", [VectorQuery([1, 0, 0, 0], 2), VectorQuery(SparseVector([9], [1.0]), 3)]
    )
    assert dense.ids == [0, 2]  # D1, D3: ids and scores only, no payload read
    assert dense.scores[0] == pytest.approx(1.0)
    assert sparse.ids == [2, 1]  # D3, D2: D1 has no term 9
    assert sparse.scores[0] == pytest.approx(3.0)
    assert dense.sparse is None and sparse.sparse is None  # not asked for


def test_search_can_return_sparse_vectors(store: Store) -> None:
    store.create_collection("c", SPEC)
    store.upsert("c", POINTS)
    asked = VectorQuery(SparseVector([7], [1.0]), 1, with_sparse=True)
    found, plain = store.search("c", [asked, VectorQuery([1, 0, 0, 0], 1)])
    assert found.ids == [0] and found.sparse == [SparseVector([7], [2.0])]
    assert plain.ids == [0] and plain.sparse is None  # the batch's other query did not ask


@pytest.mark.parametrize("fusion", ["rrf", "dbsf"])
def test_fused_search_returns_payloads(store: Store, fusion: Fusion) -> None:
    store.create_collection("c", SPEC)
    store.upsert("c", POINTS)
    hits = store.fused_search(
        "c",
        [VectorQuery([1, 0, 0, 0], 3), VectorQuery(SparseVector([7], [1.0]), 3)],
        fusion,
        2,
    )
    assert _ids(hits)[0] == "D1"  # first in both lists
    assert len(hits) == 2 and hits[0].payload["title"] == "t1"


def test_retrieve_keeps_the_requested_order(store: Store) -> None:
    store.create_collection("c", SPEC)
    store.upsert("c", POINTS)
    hits = store.retrieve("c", [2, 99, 0])  # D3, a number nobody has, D1
    assert _ids(hits) == ["D3", "D1"]
    assert hits[0].payload == {"doc_id": "D3", "title": "t3", "text": "x3"}


def test_retrieve_returns_dense_vectors_when_asked(store: Store) -> None:
    store.create_collection("c", SPEC)
    store.upsert("c", POINTS)
    plain, with_vectors = store.retrieve("c", [1]), store.retrieve("c", [1], ["doc_id"], True)
    assert plain[0].dense is None and with_vectors[0].payload == {"doc_id": "D2"}
    stored = with_vectors[0].dense
    assert stored is not None
    expected = np.asarray(POINTS[1].dense) / np.linalg.norm(POINTS[1].dense)
    np.testing.assert_allclose(np.asarray(stored) / np.linalg.norm(stored), expected, rtol=1e-5)


def test_score_points_scores_just_the_points_asked(store: Store) -> None:
    # What a ranking reads of candidates no voting query judged: their dense scores for the
    # query and their payload, in one call restricted to them, whatever the collection's size.
    store.create_collection("c", SPEC)
    store.upsert("c", POINTS)
    query = [1.0, 1.0, 0.0, 0.0]
    (everything,) = store.search("c", [VectorQuery(query, 3)])
    score_of = dict(zip(everything.ids, everything.scores, strict=True))
    hits = store.score_points("c", query, [2, 99, 0], ["doc_id"])  # 99: nobody's number
    assert sorted(h.id for h in hits) == [0, 2]
    for h in hits:
        assert h.score == pytest.approx(score_of[h.id]) and set(h.payload) == {"doc_id"}
    assert store.score_points("c", query, [], ["doc_id"]) == []


def test_numbered_and_uuid_ids_come_back_as_they_were_given(store: Store) -> None:
    # Documents are numbered, voting queries and the ranker have uuid5 ids: both kinds come
    # back from every call as the caller spelled them (an int, the UUID's text).
    store.create_collection("c", SPEC)
    d2 = point_id("D2")
    store.upsert("c", [POINTS[0], replace(POINTS[1], id=d2)])
    (found,) = store.search("c", [VectorQuery([1, 1, 0, 0], 2)])
    assert set(found.ids) == {0, d2}
    assert [h.id for h in store.retrieve("c", [d2, 0])] == [d2, 0]
    assert {h.id for h in store.scroll("c", payload=False)} == {0, d2}


def test_scroll_returns_every_point(store: Store) -> None:
    store.create_collection("c", SPEC)
    store.upsert("c", POINTS)
    hits = store.scroll("c", payload=["doc_id"], page=2)
    assert sorted(_ids(hits)) == ["D1", "D2", "D3"]
    assert all(set(h.payload) == {"doc_id"} for h in hits)
    assert all(h.dense is None for h in hits)


def test_scroll_returns_dense_vectors_when_asked(store: Store) -> None:
    store.create_collection("c", SPEC)
    store.upsert("c", POINTS)
    hits = {h.payload["doc_id"]: h.dense for h in store.scroll("c", ["doc_id"], vectors=True)}
    for p in POINTS:
        stored = hits[p.payload["doc_id"]]
        assert stored is not None
        # Cosine collections keep the direction (the server normalises on upsert).
        expected = np.asarray(p.dense) / np.linalg.norm(p.dense)
        np.testing.assert_allclose(np.asarray(stored) / np.linalg.norm(stored), expected, rtol=1e-5)


def test_alias_switches_atomically_and_old_data_stays(store: Store) -> None:
    assert store.resolve_alias("docs") is None
    for name in ("docs-v1", "docs-v2"):
        store.create_collection(name, SPEC)
    store.upsert("docs-v1", POINTS[:1])
    store.set_alias("docs", "docs-v1")
    assert store.resolve_alias("docs") == "docs-v1"
    store.upsert("docs-v2", POINTS)
    store.set_alias("docs", "docs-v2")
    assert store.resolve_alias("docs") == "docs-v2"
    assert store.count("docs-v1") == 1  # the previous version is untouched
    store.delete_collection("docs-v1")
    assert not store.collection_exists("docs-v1")
    assert store.count("docs-v2") == 3


def test_missing_collection_is_a_store_error(store: Store) -> None:
    with pytest.raises(StoreError):
        store.count("nope")


def test_edge_private_copies_let_two_processes_read(tmp_path: Path) -> None:
    writer = EdgeStore(tmp_path)
    writer.create_collection("c", SPEC)
    writer.upsert("c", POINTS)
    writer.close()
    readers = [EdgeStore(tmp_path, private_copy=True) for _ in range(2)]
    try:
        assert [r.count("c") for r in readers] == [3, 3]
    finally:
        for r in readers:
            r.close()


def test_edge_rejects_unsafe_names(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path)
    for bad in ("", "../x", ".hidden", "aliases"):
        with pytest.raises(StoreError, match="invalid collection name"):
            store.collection_exists(bad)


def test_counting_store_counts_every_call_until_reset(tmp_path: Path) -> None:
    store = CountingStore(EdgeStore(tmp_path / "edge"))
    try:
        store.create_collection("c", SPEC)
        store.upsert("c", POINTS)
        store.search("c", [VectorQuery([1, 0, 0, 0], 2), VectorQuery([0, 1, 0, 0], 2)])
        store.retrieve("c", [POINTS[0].id])
        assert store.calls == 4  # a batch of queries is one call
        store.reset()
        assert store.calls == 0
        store.count("c")
        assert store.calls == 1
    finally:
        store.close()


def _shard(root: Path) -> None:
    writer = EdgeStore(root)
    writer.create_collection("c", SPEC)
    writer.upsert("c", POINTS)
    writer.close()


def _disk_bytes(folder: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in folder.rglob("*") if p.is_file())


def _apparent_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def test_private_copies_keep_holes_and_go_on_close(tmp_path: Path) -> None:
    _shard(tmp_path / "edge")
    root = tmp_path / "copies"
    readers = [EdgeStore(tmp_path / "edge", private_copy=True, copies_root=root) for _ in range(2)]
    try:
        assert [r.count("c") for r in readers] == [3, 3]
        (owner,) = root.iterdir()  # one folder for this process, one sub-folder per store
        assert len(list(owner.iterdir())) == 2
        original = tmp_path / "edge" / "c"
        # Shard files are mostly holes: the copies take the disk the data takes, not their size.
        # Measured against the original on the same file system (one without sparse files
        # stores both in full, and then the copies must not take more either).
        assert _apparent_bytes(owner) >= 2 * _apparent_bytes(original) * 0.99
        assert _disk_bytes(owner) <= 2 * _disk_bytes(original) + (1 << 20)
    finally:
        for r in readers:
            r.close()
    assert list(root.iterdir()) == []


def test_copies_of_a_killed_process_are_swept_by_the_next_one(tmp_path: Path) -> None:
    _shard(tmp_path / "edge")
    root = tmp_path / "copies"
    opener = (
        "import os, signal, sys; from pathlib import Path;"
        "from services.retrieval.store.edge import EdgeStore;"
        f"s = EdgeStore(Path({str(tmp_path / 'edge')!r}), True, Path({str(root)!r}));"
        "s.count('c'); os.kill(os.getpid(), signal.SIGKILL)"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    killed = subprocess.run([sys.executable, "-c", opener], env=env, check=False)
    assert killed.returncode == -signal.SIGKILL
    assert len(list(root.iterdir())) == 1  # the killed process could not clean up
    (root / "not-a-pid").mkdir()  # not ours to judge: a folder without an owner goes too
    store = EdgeStore(tmp_path / "edge", private_copy=True, copies_root=root)
    try:
        (mine,) = root.iterdir()
        assert mine.name == owner_tag()
    finally:
        store.close()
