"""Grouped retrieval settings keep every flat environment variable they had before grouping."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.retrieval.encoders.sparse import Bm25Params
from services.retrieval.indexing.versions import dense_index_config, supervised_config
from services.retrieval.query import bm25_table, votes
from services.retrieval.settings import Env, RetrievalSettings, ServerLayout, StoreSettings

# Every variable, a value that is not its default, and where it must land.
FLAT = {
    "RETRIEVAL_STORE": ("server", ("store", "backend"), "server"),
    "RETRIEVAL_EDGE_PATH": ("/tmp/edge", ("store", "edge_path"), Path("/tmp/edge")),
    "RETRIEVAL_EDGE_PRIVATE_COPY": ("true", ("store", "edge_private_copy"), True),
    "RETRIEVAL_EDGE_SEGMENT_POINTS": ("50000", ("store", "edge_segment_points"), 50_000),
    "RETRIEVAL_QDRANT_URL": ("http://q:6333", ("store", "qdrant_url"), "http://q:6333"),
    "RETRIEVAL_QDRANT_API_KEY": ("k", ("store", "qdrant_api_key"), "k"),
    "RETRIEVAL_QDRANT_PATH": (":memory:", ("store", "qdrant_path"), ":memory:"),
    "RETRIEVAL_COLLECTION": ("other", ("store", "collection"), "other"),
    "RETRIEVAL_HNSW_THRESHOLD": ("0", ("store", "hnsw_threshold"), 0),
    "RETRIEVAL_HNSW_M": ("8", ("store", "hnsw_m"), 8),
    "RETRIEVAL_HNSW_EF_CONSTRUCT": ("64", ("store", "hnsw_ef_construct"), 64),
    "RETRIEVAL_HNSW_EF": ("100", ("store", "hnsw_ef"), 100),
    "RETRIEVAL_QUANTIZATION": ("none", ("store", "quantization"), "none"),
    "RETRIEVAL_QUANTIZATION_OVERSAMPLING": ("3", ("store", "quantization_oversampling"), 3.0),
    "RETRIEVAL_QUANTIZATION_ALWAYS_RAM": ("true", ("store", "quantization_always_ram"), True),
    "RETRIEVAL_QDRANT_GRPC_PORT": ("6334", ("store", "qdrant_grpc_port"), 6334),
    "RETRIEVAL_QDRANT_SHARDS": ("6", ("store", "qdrant_shards"), 6),
    "RETRIEVAL_QDRANT_REPLICATION_FACTOR": ("2", ("store", "qdrant_replication_factor"), 2),
    "RETRIEVAL_QDRANT_WRITE_CONSISTENCY_FACTOR": (
        "2",
        ("store", "qdrant_write_consistency_factor"),
        2,
    ),
    "RETRIEVAL_QDRANT_NODES": ("3", ("store", "qdrant_nodes"), 3),
    "RETRIEVAL_QDRANT_ON_DISK_VECTORS": ("true", ("store", "qdrant_on_disk_vectors"), True),
    "RETRIEVAL_QDRANT_ON_DISK_PAYLOAD": ("false", ("store", "qdrant_on_disk_payload"), False),
    "RETRIEVAL_CANDIDATES": ("50", ("hybrid", "candidates"), 50),
    "RETRIEVAL_FUSION": ("rrf", ("hybrid", "fusion"), "rrf"),
    "RETRIEVAL_DENSE_WEIGHT": ("0.25", ("hybrid", "dense_weight"), 0.25),
    "RETRIEVAL_FEEDBACK_DOCS": ("0", ("feedback", "docs"), 0),
    "RETRIEVAL_FEEDBACK_TERMS": ("7", ("feedback", "terms"), 7),
    "RETRIEVAL_FEEDBACK_WEIGHT": ("0.1", ("feedback", "weight"), 0.1),
    "RETRIEVAL_KNN_NEIGHBOURS": ("9", ("knn", "neighbours"), 9),
    "RETRIEVAL_KNN_POWER": ("2", ("knn", "power"), 2.0),
    "RETRIEVAL_KNN_WEIGHT": ("0.3", ("knn", "weight"), 0.3),
    "RETRIEVAL_VOTE_DEPTH": ("11", ("knn", "vote_depth"), 11),
    "RETRIEVAL_USE_RANKER": ("false", ("ranker", "enabled"), False),
    "RETRIEVAL_MAX_TRAIN_QUERIES": ("12", ("experiment", "max_train_queries"), 12),
    "RETRIEVAL_MAX_DOCS": ("13", ("experiment", "max_docs"), 13),
    "RETRIEVAL_MODE": ("zero-shot", ("mode",), "zero-shot"),
    "RETRIEVAL_SUPERVISION": ("train", ("supervision",), "train"),
    "RETRIEVAL_ENCODE_THREADS": ("3", ("encode_threads",), 3),
    "RETRIEVAL_DATA_DIR": ("/tmp/data", ("data_dir",), Path("/tmp/data")),
}


def _grouped_names() -> set[str]:
    names = set()
    for info in RetrievalSettings.model_fields.values():
        fields = getattr(info.annotation, "model_fields", {})
        names |= {m.name for f in fields.values() for m in f.metadata if isinstance(m, Env)}
    return names


def test_every_flat_variable_lands_in_its_group(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, (value, _, _) in FLAT.items():
        monkeypatch.setenv(name, value)
    settings = RetrievalSettings()
    for name, (_, path, expected) in FLAT.items():
        found: object = settings
        for part in path:
            found = getattr(found, part)
        assert found == expected, name


def test_every_grouped_variable_is_tested() -> None:
    # That the README documents each: tests/checks/test_settings_table.py, for every variable.
    assert _grouped_names() <= set(FLAT)


def test_arguments_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RETRIEVAL_KNN_NEIGHBOURS", "9")
    monkeypatch.setenv("retrieval_knn_power", "2")  # names ignore case, as at the top level
    settings = RetrievalSettings(knn={"neighbours": 3})
    assert (settings.knn.neighbours, settings.knn.power) == (3, 2.0)


def test_bad_values_are_refused_with_the_field_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RETRIEVAL_KNN_NEIGHBOURS", "many")
    with pytest.raises(ValueError, match=r"knn\.neighbours"):
        RetrievalSettings()
    with pytest.raises(ValueError, match="RETRIEVAL_STORE=server needs"):
        StoreSettings(backend="server")


def test_the_store_backends_are_embedded_and_server(monkeypatch: pytest.MonkeyPatch) -> None:
    assert RetrievalSettings().store.backend == "embedded"
    monkeypatch.setenv("RETRIEVAL_STORE", "embedded")
    assert RetrievalSettings().store.backend == "embedded"


@pytest.mark.parametrize(
    ("old", "message"),
    [
        ("edge", "RETRIEVAL_STORE=edge is an old name: use RETRIEVAL_STORE=embedded"),
        ("qdrant", "RETRIEVAL_STORE=qdrant is an old name: use RETRIEVAL_STORE=server"),
    ],
)
def test_old_store_backend_names_are_refused_naming_the_new_one(
    monkeypatch: pytest.MonkeyPatch, old: str, message: str
) -> None:
    monkeypatch.setenv("RETRIEVAL_STORE", old)
    with pytest.raises(ValueError, match=rf"store\.backend\n.*{message}"):
        RetrievalSettings()
    with pytest.raises(ValueError, match=message):
        StoreSettings(backend=old)


def test_updated_changes_only_what_it_names_and_validates() -> None:
    settings = RetrievalSettings()
    copy = settings.updated(mode="zero-shot", store={"edge_private_copy": True})
    assert copy.mode == "zero-shot" and copy.store.edge_private_copy
    assert copy.store.collection == settings.store.collection and settings.mode == "full"
    with pytest.raises(ValueError, match=r"experiment\.max_docs"):
        settings.updated(experiment={"max_docs": 0})


def test_the_index_version_follows_the_constants_of_the_ranker_features(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = RetrievalSettings()
    before = supervised_config(settings, "fingerprint")
    assert supervised_config(settings, None) == "zero-shot"
    monkeypatch.setattr(votes, "LEXICAL_NEIGHBOURS", votes.LEXICAL_NEIGHBOURS + 1)
    after_votes = supervised_config(settings, "fingerprint")
    monkeypatch.setattr(bm25_table, "SHORT_TEXTS", Bm25Params(k1=0.9, b=0.5))
    after_titles = supervised_config(settings, "fingerprint")
    assert len({before, after_votes, after_titles}) == 3


def test_the_index_version_follows_how_the_dense_index_is_built() -> None:
    settings = RetrievalSettings()
    built = {
        dense_index_config(settings.updated(store=change), 3633)
        for change in ({}, {"hnsw_threshold": 5}, {"hnsw_m": 8}, {"hnsw_ef_construct": 64})
    }
    assert len(built) == 4
    assert (
        len(built | {dense_index_config(settings.updated(store={"quantization": "none"}), 3633)})
        == 5
    )
    # Read at search time: a version serves any of them.
    searched = settings.updated(store={"hnsw_ef": 64, "quantization_oversampling": 4.0})
    assert dense_index_config(searched, 3633) == dense_index_config(settings, 3633)


def test_a_server_layout_left_unset_is_the_servers_own() -> None:
    # Nothing chosen: a single node and local mode create collections as before these settings.
    assert StoreSettings().server_layout == ServerLayout()
    assert ServerLayout().chosen() == ""
    # A small collection has a copy on every node, or as many copies as the documents' shards.
    assert ServerLayout(replication_factor=2, nodes=3).small_replication_factor == 3
    assert ServerLayout(replication_factor=2).small_replication_factor == 2


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        (
            {"qdrant_replication_factor": 2, "qdrant_write_consistency_factor": 3},
            "WRITE_CONSISTENCY_FACTOR=3 asks more copies than RETRIEVAL_QDRANT_REPLICATION_FACTOR=2",
        ),
        (
            {"qdrant_replication_factor": 3, "qdrant_nodes": 2},
            "REPLICATION_FACTOR=3 needs as many nodes, RETRIEVAL_QDRANT_NODES=2",
        ),
    ],
)
def test_copies_that_cannot_exist_are_refused(layout: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StoreSettings(**layout)


def test_the_index_version_follows_the_layout_chosen_on_a_server() -> None:
    local = RetrievalSettings().updated(store={"backend": "server", "qdrant_path": ":memory:"})
    unset = dense_index_config(local, 3633)
    # The server's defaults name a version as before (no layout in its hash) ...
    assert unset == dense_index_config(RetrievalSettings(), 3633)
    # ... a layout chosen names another, each one its own; the embedded store has no layout.
    chosen = {
        dense_index_config(local.updated(store=change), 3633)
        for change in (
            {"qdrant_shards": 6},
            {"qdrant_shards": 3},
            {"qdrant_on_disk_vectors": True},
            {"qdrant_on_disk_vectors": False},
        )
    }
    assert len(chosen - {unset}) == 4
    embedded = RetrievalSettings().updated(store={"qdrant_shards": 6})
    assert dense_index_config(embedded, 3633) == unset


def test_the_index_version_follows_the_segments_once_a_corpus_fills_more_than_one() -> None:
    settings = RetrievalSettings()
    small = settings.updated(store={"edge_segment_points": 20_000})
    # A corpus in one segment keeps its name whatever the bound ...
    assert dense_index_config(small, 3633) == dense_index_config(settings, 3633)
    # ... a larger one is cut by it: another bound, another version.
    assert dense_index_config(small, 300_000) != dense_index_config(settings, 300_000)


def test_segments_smaller_than_the_graphs_threshold_are_refused() -> None:
    with pytest.raises(ValueError, match=r"RETRIEVAL_EDGE_SEGMENT_POINTS \(500\) must be at least"):
        StoreSettings(edge_segment_points=500, hnsw_threshold=1000)


def test_a_server_store_takes_any_graph_threshold_whatever_the_segment_bound() -> None:
    # The bound is the embedded store's: a server deployment raising its threshold is not refused.
    server = StoreSettings(backend="server", qdrant_path=":memory:", hnsw_threshold=100_000)
    assert server.hnsw_threshold > server.edge_segment_points
