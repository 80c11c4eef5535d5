"""How the embedded store lays out a shard it creates: what stays resident in a serving process."""

import json
from pathlib import Path

from services.retrieval.store.edge import EdgeStore
from services.retrieval.types import CollectionSpec, VectorQuery
from tests.support.toy_points import POINTS


def test_edge_shards_keep_dense_vectors_cold_no_wal_and_no_search_pool(tmp_path: Path) -> None:
    # For memory: the dense vectors stay memory-mapped instead of resident, and there is
    # no write-ahead log; what upsert wrote is durable all the same (it flushes).
    writer = EdgeStore(tmp_path)
    writer.create_collection("c", CollectionSpec(dense_size=4))
    writer.upsert("c", POINTS)
    writer.close()
    config = json.loads((tmp_path / "c" / "edge_config.json").read_text())
    assert config["vectors"]["dense"]["memory"] == "cold"
    assert config["wal_enabled"] is False
    assert config["max_search_threads"] == 1  # searches run on the caller's thread
    assert not (tmp_path / "c" / "wal").exists()
    reader = EdgeStore(tmp_path)
    try:
        (found,) = reader.search("c", [VectorQuery([1, 0, 0, 0], 3)])
        assert found.ids == [0, 2, 1]  # D1, D3, D2 by their numbers
    finally:
        reader.close()
