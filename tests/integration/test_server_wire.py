"""What the server store sends a Qdrant server, read at qdrant-client's boundary.

qdrant-client's local mode takes a collection's layout (shards, copies, what stays on disk) and
ignores it, and no Qdrant server runs here: the real client talks to a loopback fake of the
server's wire (:mod:`tests.support.qdrant_wire`) that records each request as serialised, REST
or gRPC. That a build works end to end with these settings is local mode's part
(``tests/integration/test_indexer.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from services.retrieval.indexing.points import KNN_SPEC, RANKER_SPEC, by_bytes, point_bytes
from services.retrieval.settings import QUANTIZATION_QUANTILE, RetrievalSettings, StoreSettings
from services.retrieval.store import open_store
from services.retrieval.store.base import Store
from services.retrieval.types import CollectionSpec, Point, SparseVector
from tests.support.polling import wait_for
from tests.support.qdrant_wire import THREE_NODES, QdrantGrpc, QdrantRest

DOCUMENTS = CollectionSpec(dense_size=384)
#: Qdrant's default bound on a REST request's body (its configuration's
#: service.max_request_size_mb: 32).
SERVER_MAX_REQUEST = 32 * 1024 * 1024


@pytest.fixture
def rest() -> Iterator[QdrantRest]:
    with QdrantRest().running() as fake:
        yield fake


def _store(rest: QdrantRest, **layout: Any) -> Store:
    asked = len(rest.sent("GET", "/"))
    store = open_store(StoreSettings(backend="server", qdrant_url=rest.url, **layout))
    # The client asks the server's version on a thread of its own: let it have its answer
    # before the fake stops, or it warns of a server that went away.
    wait_for(lambda: len(rest.sent("GET", "/")) > asked, 30, "version check")
    return store


def _documents(n: int, seed: int = 0) -> list[Point]:
    """Points shaped as a build's documents: a normalised 384-d vector, BM25 terms, abstract."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    points = []
    for i in range(n):
        terms = np.sort(rng.choice(200_000, size=120, replace=False))
        words = " ".join(f"w{j}" for j in rng.integers(0, 50_000, size=220))
        points.append(
            Point(
                id=i,
                dense=vectors[i].tolist(),
                sparse=SparseVector(terms.tolist(), rng.random(120).tolist()),
                payload={"doc_id": f"MED-{i}", "title": words[:90], "text": words, "ordinal": i},
            )
        )
    return points


def _created(rest: QdrantRest, name: str) -> dict[str, Any]:
    (request,) = rest.sent("PUT", f"/collections/{name}")
    body: dict[str, Any] = request.body
    return body


def _index_config(kb: int, always_ram: bool | None) -> dict[str, Any]:
    """What every collection is sent of its dense index (the settings' defaults)."""
    index = StoreSettings().dense_index
    scalar: dict[str, Any] = {"type": "int8", "quantile": QUANTIZATION_QUANTILE}
    if always_ram is not None:
        scalar["always_ram"] = always_ram
    return {
        "hnsw_config": {
            "m": index.m,
            "ef_construct": index.ef_construct,
            "full_scan_threshold": kb,
        },
        "optimizers_config": {"indexing_threshold": kb},
        "quantization_config": {"scalar": scalar},
    }


def test_the_documents_are_sharded_replicated_and_on_disk_as_the_settings_say(
    rest: QdrantRest,
) -> None:
    store = _store(rest, **THREE_NODES)
    try:
        store.create_collection("docs", DOCUMENTS)
    finally:
        store.close()
    kb = StoreSettings().dense_index.threshold_kb(384)
    assert _created(rest, "docs") == {
        "vectors": {"dense": {"size": 384, "distance": "Cosine", "on_disk": True}},
        "sparse_vectors": {"bm25": {"index": {"on_disk": True}}},
        "shard_number": 6,
        "replication_factor": 2,
        "write_consistency_factor": 2,
        "on_disk_payload": True,
        **_index_config(kb, always_ram=True),
    }


def test_the_small_collections_are_one_shard_with_a_copy_on_every_node(rest: QdrantRest) -> None:
    store = _store(rest, **THREE_NODES)
    try:
        store.create_collection("docs-knn", KNN_SPEC)
        store.create_collection("docs-ranker", RANKER_SPEC)
    finally:
        store.close()
    for name, spec in (("docs-knn", KNN_SPEC), ("docs-ranker", RANKER_SPEC)):
        kb = StoreSettings().dense_index.threshold_kb(spec.dense_size)
        # In memory, whatever the documents' placement: read whole, or by every search.
        assert _created(rest, name) == {
            "vectors": {"dense": {"size": spec.dense_size, "distance": "Cosine"}},
            "shard_number": 1,
            "replication_factor": 3,
            "write_consistency_factor": 2,
            **_index_config(kb, always_ram=None),
        }


def test_unset_the_server_lays_the_documents_out_as_before(rest: QdrantRest) -> None:
    store = _store(rest)
    try:
        store.create_collection("docs", DOCUMENTS)
        store.create_collection("docs-knn", KNN_SPEC)
    finally:
        store.close()
    kb = StoreSettings().dense_index.threshold_kb(384)
    # Nothing of the layout is sent: the server's own defaults, as before these settings.
    assert _created(rest, "docs") == {
        "vectors": {"dense": {"size": 384, "distance": "Cosine"}},
        "sparse_vectors": {"bm25": {"index": {"on_disk": True}}},
        **_index_config(kb, always_ram=None),
    }
    # A small collection is one shard still, its copies the server's default.
    assert _created(rest, "docs-knn")["shard_number"] == 1
    assert "replication_factor" not in _created(rest, "docs-knn")


def _batches(points: Sequence[Point], limit: int) -> list[Sequence[Point]]:
    batches = list(by_bytes(points, limit))
    for batch in batches:  # the cut the indexer makes: each within the limit, or one point
        assert len(batch) == 1 or sum(point_bytes(p) for p in batch) <= limit
    return batches


def test_each_batch_is_one_request_holding_its_points_in_order(rest: QdrantRest) -> None:
    points = _documents(60)
    batches = _batches(points, 64 * 1024)
    assert len(batches) > 2
    store = _store(rest)
    try:
        store.create_collection("docs", DOCUMENTS)
        for batch in batches:
            store.upsert("docs", batch)
        assert store.count("docs") == len(points)
    finally:
        store.close()
    writes = rest.sent("PUT", "/collections/docs/points")
    assert [[p["id"] for p in w.body["points"]] for w in writes] == [
        [p.id for p in batch] for batch in batches
    ]
    assert all(w.query["wait"] == ["true"] for w in writes)  # each applied before the next
    first = writes[0].body["points"][0]
    assert first["vector"]["bm25"]["indices"] == points[0].sparse.indices  # type: ignore[union-attr]
    assert first["payload"] == points[0].payload


def test_a_write_of_the_default_size_fits_a_servers_default_request_limit(
    rest: QdrantRest,
) -> None:
    limit = RetrievalSettings().upsert_bytes
    points = _documents(limit // point_bytes(_documents(1)[0]) + 50)
    batch = _batches(points, limit)[0]
    store = _store(rest)
    try:
        store.upsert("docs", batch)
    finally:
        store.close()
    (write,) = rest.sent("PUT", "/collections/docs/points")
    # JSON spells every float out, so the body outweighs the estimate the batch was cut by,
    # and it must still fit what a server takes by default.
    assert sum(point_bytes(p) for p in batch) < write.size < SERVER_MAX_REQUEST


def test_with_a_grpc_port_the_writes_go_over_grpc(rest: QdrantRest) -> None:
    points = _documents(30)
    batches = _batches(points, 64 * 1024)
    with QdrantGrpc().running() as fake:
        store = _store(rest, qdrant_grpc_port=fake.port, **THREE_NODES)
        try:
            store.create_collection("docs", DOCUMENTS)
            store.create_collection("docs-knn", KNN_SPEC)
            for batch in batches:
                store.upsert("docs", batch)
        finally:
            store.close()
    assert rest.sent("PUT", "/collections/.*") == []  # nothing written over REST
    documents, knn = fake.created
    assert (documents.shard_number, documents.replication_factor) == (6, 2)
    assert (documents.write_consistency_factor, documents.on_disk_payload) == (2, True)
    assert documents.vectors_config.params_map.map["dense"].on_disk is True
    assert documents.quantization_config.scalar.always_ram is True
    assert (knn.shard_number, knn.replication_factor) == (1, 3)
    assert [[p.id.num for p in u.points] for u in fake.upserts] == [
        [p.id for p in batch] for batch in batches
    ]
    assert all(u.wait for u in fake.upserts)
    # The same batch over REST, for comparison: gRPC packs the floats JSON spells out.
    store = _store(rest)
    try:
        store.upsert("docs", batches[0])
    finally:
        store.close()
    (write,) = rest.sent("PUT", "/collections/docs/points")
    assert fake.upserts[0].ByteSize() < write.size
