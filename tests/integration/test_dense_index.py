"""The engine's own index: what a built shard holds and how it answers, on real qdrant-edge
shards (and qdrant-client's local mode for the server backend).

Below the HNSW threshold a shard has no graph and answers as before it was optimized, bit for
bit; from it on it has a graph whose answers match an exact search; ``exact=True`` scans every
vector on both backends; the BM25 index is memory-mapped from the shard's files.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from devtools.bench.hnsw_recall import dense_recall
from services.retrieval.settings import DenseIndex, StoreSettings
from services.retrieval.store.base import StoreError
from services.retrieval.store.copies import SHARED_FILES
from services.retrieval.store.edge import EdgeStore
from services.retrieval.store.server import ServerStore
from services.retrieval.types import CollectionSpec, Point, Scored, SparseVector, VectorQuery

DIM = 32
INDEX = replace(StoreSettings().dense_index, threshold=500)


def _vectors(n: int, seed: int) -> npt.NDArray[np.float32]:
    x = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    out: npt.NDArray[np.float32] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def _points(n: int) -> list[Point]:
    rng = np.random.default_rng(7)
    points = []
    for i, v in enumerate(_vectors(n, 1)):
        terms = sorted(rng.choice(200, size=8, replace=False).tolist())
        sparse = SparseVector(terms, rng.random(8).astype(np.float32).tolist())
        points.append(Point(i, v.tolist(), {"doc_id": f"D{i}"}, sparse))
    return points


def _queries(n: int, limit: int) -> list[VectorQuery]:
    dense = [VectorQuery(v.tolist(), limit) for v in _vectors(n, 2)]
    sparse = [VectorQuery(SparseVector([t, t + 1], [1.0, 0.5]), limit) for t in range(0, 2 * n, 2)]
    return dense + sparse


def _segments(shard: Path) -> list[dict[str, Any]]:
    """Each segment's configuration, as the engine wrote it."""
    return [json.loads(p.read_text())["config"] for p in shard.glob("segments/*/segment.json")]


def _graph_edges(shard: Path) -> list[int]:
    """``m`` of each segment's dense index (0: no graph, an exact scan)."""
    found = []
    for config in _segments(shard):
        index = config["vector_data"]["dense"]["index"]
        found.append(index["options"]["m"] if index["type"] == "hnsw" else 0)
    return found


def _exact_top(points: list[Point], query: list[float], k: int) -> list[int]:
    """Cosine top k by numpy (the vectors are normalized)."""
    scores = np.asarray([p.dense for p in points], np.float32) @ np.asarray(query, np.float32)
    return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]


def _built(root: Path, points: list[Point], index: DenseIndex) -> tuple[EdgeStore, list[Scored]]:
    """A shard written and optimized; what it answered before the optimization."""
    store = EdgeStore(root, index=index)
    store.create_collection("c", CollectionSpec(dense_size=DIM))
    store.upsert("c", points)
    before = store.search("c", _queries(20, 50))
    store.optimize("c")
    return store, before


def test_a_shard_below_the_threshold_has_no_graph_and_answers_as_before(tmp_path: Path) -> None:
    store, before = _built(tmp_path, _points(300), INDEX)
    try:
        assert store.search("c", _queries(20, 50)) == before  # ids and scores, bit for bit
    finally:
        store.close()
    assert not any(_graph_edges(tmp_path / "c"))
    reopened = EdgeStore(tmp_path, index=INDEX)
    try:
        assert reopened.search("c", _queries(20, 50)) == before
        exact = [replace(q, exact=True) for q in _queries(20, 50)]
        assert reopened.search("c", exact) == before
    finally:
        reopened.close()


def test_a_small_shard_without_bm25_vectors_is_left_as_written(tmp_path: Path) -> None:
    # Its rebuild would gain nothing and order the points by id: equal scores would tie in
    # another order than the points' (the training queries' uuids are not written in order).
    store = EdgeStore(tmp_path, index=INDEX)
    try:
        store.create_collection("c", CollectionSpec(dense_size=DIM, sparse=False))
        store.upsert("c", [replace(p, sparse=None) for p in _points(300)])
        store.optimize("c")
    finally:
        store.close()
    (segment,) = _segments(tmp_path / "c")
    assert segment["vector_data"]["dense"]["index"]["type"] == "plain"


def test_a_shard_above_the_threshold_has_a_graph_that_finds_the_exact_neighbours(
    tmp_path: Path,
) -> None:
    store, _ = _built(tmp_path, _points(2000), INDEX)
    store.close()
    assert _graph_edges(tmp_path / "c") and all(
        m == INDEX.m for m in _graph_edges(tmp_path / "c") if m
    )
    assert any(_graph_edges(tmp_path / "c"))
    reader = EdgeStore(tmp_path, index=INDEX)
    try:
        assert dense_recall(reader, "c", _vectors(50, 3).tolist(), k=20) >= 0.99
    finally:
        reader.close()


def test_a_build_seals_each_segment_as_it_fills(tmp_path: Path) -> None:
    # Segments of 800 points: 2,000 written in batches that straddle the bound give one sealed
    # (graph and all) by the 1,500th, a second at the 1,600th, and the tail sealed by the
    # build's optimize; the engine joins none of them, and together they answer as one shard.
    points = _points(2000)
    store = EdgeStore(tmp_path / "cut", index=INDEX, segment_points=800)
    whole = EdgeStore(tmp_path / "whole", index=INDEX)
    try:
        for built in (store, whole):
            built.create_collection("c", CollectionSpec(dense_size=DIM))
        for start in range(0, 1500, 300):
            store.upsert("c", points[start : start + 300])
        # (The engine removes a sealed segment's old files a moment later: count graphs only.)
        assert len([m for m in _graph_edges(tmp_path / "cut" / "c") if m]) == 1
        store.upsert("c", points[1500:])
        whole.upsert("c", points)
        for built in (store, whole):
            built.optimize("c")
        assert store.count("c") == 2000
        exact = [replace(q, exact=True) for q in _queries(20, 50)]
        assert store.search("c", exact) == whole.search("c", exact)
        assert dense_recall(store, "c", _vectors(50, 3).tolist(), k=20) >= 0.99
    finally:
        store.close()
        whole.close()
    # Three sealed, and the empty appendable segment the engine keeps.
    assert sorted(_graph_edges(tmp_path / "cut" / "c")) == [0, INDEX.m, INDEX.m, INDEX.m]


def test_a_shard_written_again_in_place_keeps_as_many_segments(tmp_path: Path) -> None:
    # As ``--force`` rewrites a served version: every point again, over sealed segments. The
    # old copies' segments are vacuumed, not kept beside the new ones; the answers are the same.
    points = _points(2000)
    exact = [replace(q, exact=True) for q in _queries(20, 50)]
    store = EdgeStore(tmp_path, index=INDEX, segment_points=800)
    try:
        store.create_collection("c", CollectionSpec(dense_size=DIM))
        store.upsert("c", points)
        store.optimize("c")
        before = store.search("c", exact)
    finally:
        store.close()
    again = EdgeStore(tmp_path, index=INDEX, segment_points=800)
    try:
        for start in range(0, 2000, 300):
            again.upsert("c", points[start : start + 300])
        again.optimize("c")
        assert again.count("c") == 2000
        assert again.search("c", exact) == before
    finally:
        again.close()
    assert sorted(_graph_edges(tmp_path / "c")) == [0, INDEX.m, INDEX.m, INDEX.m]


def test_a_collection_made_again_counts_its_segment_from_empty(tmp_path: Path) -> None:
    # 700 points written, the collection dropped and made again: its first segment still takes
    # 800 points of its own before it is sealed.
    store = EdgeStore(tmp_path, index=INDEX, segment_points=800)
    try:
        store.create_collection("c", CollectionSpec(dense_size=DIM))
        store.upsert("c", _points(700))
        store.delete_collection("c")
        store.create_collection("c", CollectionSpec(dense_size=DIM))
        store.upsert("c", _points(700))
    finally:
        store.close()
    assert not any(_graph_edges(tmp_path / "c"))


def test_segments_below_the_graphs_threshold_are_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="below the graph's threshold"):
        EdgeStore(tmp_path, index=INDEX, segment_points=INDEX.threshold - 1)


def test_opening_a_served_shard_builds_nothing(tmp_path: Path) -> None:
    store, _ = _built(tmp_path, _points(2000), INDEX)
    store.close()

    def graph_files() -> dict[str, tuple[int, str]]:
        files = sorted((tmp_path / "c").glob("segments/*/vector_index-dense/*"))
        return {
            str(p): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in files
        }

    built = graph_files()
    segments = sorted(p.name for p in (tmp_path / "c" / "segments").iterdir())
    assert built
    reader = EdgeStore(tmp_path, index=INDEX)
    try:
        reader.search("c", _queries(5, 10))
    finally:
        reader.close()
    assert graph_files() == built
    assert sorted(p.name for p in (tmp_path / "c" / "segments").iterdir()) == segments


def _digests(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_a_private_copy_links_the_files_the_engine_only_reads(tmp_path: Path) -> None:
    # Every worker maps the same vectors, graph and BM25 index; only what the engine may write
    # is its own. Searching through the copy changes nothing of the shared files.
    root, copies_root = tmp_path / "store", tmp_path / "copies"
    store, _ = _built(root, _points(2000), replace(INDEX, quantized=True))
    payloads = store.retrieve("c", [5, 1])
    store.close()
    built = _digests(root / "c")
    reader = EdgeStore(root, private_copy=True, copies_root=copies_root, index=INDEX)
    try:
        exact = [replace(q, exact=True) for q in _queries(20, 50)]
        assert reader.search("c", _queries(20, 50)) == reader.search("c", exact)
        assert reader.retrieve("c", [5, 1]) == payloads
        copied = [p for p in copies_root.rglob("*") if p.is_file()]
        linked = {p.name for p in copied if p.is_symlink()}
        assert {"matrix.dat", "quantized.data", "inverted_index.dat"} <= linked <= SHARED_FILES
        assert all(p.resolve().is_relative_to(root.resolve()) for p in copied if p.is_symlink())
    finally:
        reader.close()
    assert _digests(root / "c") == built
    assert not any(copies_root.rglob("*.dat"))  # the copy, links and all, is gone


def test_quantized_vectors_are_rescored_to_the_exact_neighbours(tmp_path: Path) -> None:
    index = replace(INDEX, quantized=True)
    store, _ = _built(tmp_path, _points(2000), index)
    try:
        assert dense_recall(store, "c", _vectors(50, 3).tolist(), k=20) >= 0.99
    finally:
        store.close()
    dense = [s["vector_data"]["dense"] for s in _segments(tmp_path / "c")]
    assert any(d["index"]["type"] == "hnsw" and d["quantization_config"] for d in dense)


def test_exact_search_scans_every_vector_of_a_graph(tmp_path: Path) -> None:
    # A deliberately poor graph: its approximate answers miss, the exact ones do not.
    poor = replace(INDEX, m=4, ef_construct=4, ef=1)
    points = _points(2000)
    store, _ = _built(tmp_path, points, poor)
    try:
        queries = _vectors(20, 4).tolist()
        exact = store.search("c", [VectorQuery(q, 10, exact=True) for q in queries])
        approximate = store.search("c", [VectorQuery(q, 10) for q in queries])
    finally:
        store.close()
    expected = [_exact_top(points, q, 10) for q in queries]
    assert [found.ids for found in exact] == expected
    assert [found.ids for found in approximate] != expected


def test_the_bm25_index_is_memory_mapped_from_the_shard(tmp_path: Path) -> None:
    store, before = _built(tmp_path, _points(2000), INDEX)
    store.close()
    assert {
        s["sparse_vector_data"]["bm25"]["index"]["index_type"] for s in _segments(tmp_path / "c")
    } >= {"Mmap"}
    reader = EdgeStore(tmp_path, index=INDEX)
    try:
        assert reader.search("c", _queries(20, 50)[20:]) == before[20:]  # BM25 scores unchanged
        maps = Path("/proc/self/maps").read_text()
    finally:
        reader.close()
    assert str(tmp_path / "c" / "segments") in maps
    assert "vector_index-bm25" in maps


def test_server_backend_exact_search_in_local_mode() -> None:
    points = _points(300)
    store = ServerStore(path=":memory:", index=INDEX)
    try:
        store.create_collection("c", CollectionSpec(dense_size=DIM))
        store.upsert("c", points)
        store.optimize("c")  # local mode indexes nothing: done at once
        queries = _vectors(10, 5).tolist()
        exact = store.search("c", [VectorQuery(q, 10, exact=True) for q in queries])
        assert [found.ids for found in exact] == [_exact_top(points, q, 10) for q in queries]
    finally:
        store.close()


def test_server_backend_asks_a_server_for_its_index_and_for_exact_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    index = replace(INDEX, quantized=True)
    # What a server is sent, caught before the client sends it (local mode would ignore the
    # search parameters: it scans every vector anyway).
    store = ServerStore(path=":memory:", index=index)
    store._local = False
    sent: dict[str, Any] = {}

    def created(name: str, **kwargs: Any) -> bool:
        sent.update(kwargs)
        return True

    def searched(name: str, requests: list[Any]) -> list[Any]:
        sent["requests"] = requests
        return [type("R", (), {"points": []})() for _ in requests]

    monkeypatch.setattr(store._client, "create_collection", created)
    monkeypatch.setattr(store._client, "query_batch_points", searched)
    store.create_collection("c", CollectionSpec(dense_size=DIM))
    kb = index.threshold_kb(DIM)
    assert sent["hnsw_config"].m == index.m and sent["hnsw_config"].full_scan_threshold == kb
    assert sent["optimizers_config"].indexing_threshold == kb
    assert sent["sparse_vectors_config"]["bm25"].index.on_disk is True
    assert sent["quantization_config"] is not None
    store.search("c", [VectorQuery([1.0] * DIM, 5), VectorQuery([1.0] * DIM, 5, exact=True)])
    default, exact = (r.params for r in sent["requests"])
    assert default.hnsw_ef == index.ef and default.quantization.rescore is True
    assert exact.exact is True and exact.quantization.ignore is True
    store.close()
