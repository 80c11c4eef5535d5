"""Both store backends honour the same contract: the server backend runs on qdrant-client's
local mode here, the embedded backend on a real qdrant-edge shard; the counting wrapper the MCP
server uses passes the same contract."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from services.retrieval.store.base import (
    CollectionSpec,
    Fusion,
    Hit,
    Point,
    SparseVector,
    Store,
    StoreError,
    VectorQuery,
    point_id,
)
from services.retrieval.store.counting import CountingStore
from services.retrieval.store.edge import EdgeStore
from services.retrieval.store.server import ServerStore

SPEC = CollectionSpec(dense_size=4)
POINTS = [
    Point(
        point_id("D1"),
        [1, 0, 0, 0],
        {"doc_id": "D1", "title": "t1", "text": "x1"},
        SparseVector([7], [2.0]),
    ),
    Point(
        point_id("D2"),
        [0, 1, 0, 0],
        {"doc_id": "D2", "title": "t2", "text": "x2"},
        SparseVector([7, 9], [1.0, 1.0]),
    ),
    Point(
        point_id("D3"),
        [0.9, 0.1, 0, 0],
        {"doc_id": "D3", "title": "t3", "text": "x3"},
        SparseVector([9], [3.0]),
    ),
]


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
        "c",
        [VectorQuery([1, 0, 0, 0], 2), VectorQuery(SparseVector([9], [1.0]), 3)],
        payload=["doc_id"],
    )
    assert _ids(dense) == ["D1", "D3"]
    assert dense[0].score == pytest.approx(1.0)
    assert _ids(sparse) == ["D3", "D2"]  # D1 has no term 9
    assert sparse[0].score == pytest.approx(3.0)
    assert set(dense[0].payload) == {"doc_id"}


def test_search_can_return_sparse_vectors(store: Store) -> None:
    store.create_collection("c", SPEC)
    store.upsert("c", POINTS)
    (hits,) = store.search(
        "c", [VectorQuery(SparseVector([7], [1.0]), 1, with_sparse=True)], payload=False
    )
    assert hits[0].sparse == SparseVector([7], [2.0])


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
    hits = store.retrieve("c", [point_id("D3"), point_id("missing"), point_id("D1")])
    assert _ids(hits) == ["D3", "D1"]
    assert hits[0].payload == {"doc_id": "D3", "title": "t3", "text": "x3"}


def test_scroll_returns_every_point(store: Store) -> None:
    store.create_collection("c", SPEC)
    store.upsert("c", POINTS)
    hits = store.scroll("c", payload=["doc_id"], page=2)
    assert sorted(_ids(hits)) == ["D1", "D2", "D3"]
    assert all(set(h.payload) == {"doc_id"} for h in hits)


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
        store.search("c", [VectorQuery([1, 0, 0, 0], 2), VectorQuery([0, 1, 0, 0], 2)], False)
        store.retrieve("c", [POINTS[0].id])
        assert store.calls == 4  # a batch of queries is one call
        store.reset()
        assert store.calls == 0
        store.count("c")
        assert store.calls == 1
    finally:
        store.close()
