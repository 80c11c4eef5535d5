import builtins
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest

from harness.processes import REPO
from services.nfcorpus.dataset import load_qrels, load_queries
from services.retrieval.encoders.dense import OnnxMiniLM
from services.retrieval.indexing import training
from services.retrieval.indexing.index import build_index
from services.retrieval.indexing.training import load_training_data
from services.retrieval.query.index_version import knn_collection, load_ranker, ranker_collection
from services.retrieval.query.pipeline import RankingPipeline
from services.retrieval.settings import ExperimentSettings, RetrievalSettings, StoreSettings
from services.retrieval.store import open_store
from services.retrieval.store.base import Store
from services.retrieval.types import CollectionSpec
from tests.support.qdrant_wire import THREE_NODES
from tests.support.small_index import make_subset

DOCS = 30


def _settings(
    tmp_path: Path,
    store: Literal["embedded", "server"],
    max_docs: int = DOCS,
    max_train_queries: int | None = None,
    **top: Any,
) -> RetrievalSettings:
    # Zero-shot unless asked: most tests here are about the documents collection.
    return RetrievalSettings(
        **{"mode": "zero-shot", **top},
        store=StoreSettings(
            backend=store,
            edge_path=tmp_path / "edge",
            qdrant_path=str(tmp_path / "local") if store == "server" else None,
        ),
        cache_dir=tmp_path / "cache",
        experiment=ExperimentSettings(max_docs=max_docs, max_train_queries=max_train_queries),
    )


@pytest.mark.parametrize("backend", ["embedded", "server"])
def test_rerun_is_idempotent_and_versions_rotate(
    tmp_path: Path, backend: Literal["embedded", "server"], encoder: OnnxMiniLM
) -> None:
    settings = _settings(tmp_path, backend)
    store: Store = open_store(settings.store)
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


@pytest.mark.parametrize("backend", ["embedded", "server"])
def test_a_build_keeps_a_neighbouring_alias_on_the_same_store(
    tmp_path: Path, backend: Literal["embedded", "server"], encoder: OnnxMiniLM
) -> None:
    def settings(alias: str, docs: int) -> RetrievalSettings:
        return _settings(tmp_path, backend, docs).updated(store={"collection": alias})

    def add_companions(store: Store, name: str) -> list[str]:
        # The kNN and ranker collections a supervised build adds, made directly: training a
        # ranker here would only slow the test down, the names are what the cleanup reads.
        companions = [knn_collection(name), ranker_collection(name)]
        for companion in companions:
            store.create_collection(companion, CollectionSpec(dense_size=384))
        return companions

    store: Store = open_store(settings("nfcorpus", DOCS).store)
    try:
        # Another release's alias on the same store, whose name starts with this alias's.
        staging = build_index(settings("nfcorpus-staging", DOCS + 1), store, encoder).collection
        neighbour = [staging, *add_companions(store, staging)]
        first = build_index(settings("nfcorpus", DOCS), store, encoder).collection
        mine = [first, *add_companions(store, first)]
        assert sorted(store.list_collections()) == sorted(neighbour + mine)

        second = build_index(settings("nfcorpus", DOCS + 2), store, encoder).collection
        third = build_index(settings("nfcorpus", DOCS + 3), store, encoder).collection
        # This alias's oldest version went, companions and all; the neighbour is whole.
        assert sorted(store.list_collections()) == sorted([*neighbour, second, third])
        assert store.resolve_alias("nfcorpus-staging") == staging
        assert store.count(staging) == DOCS + 1
        assert store.resolve_alias("nfcorpus") == third
    finally:
        store.close()


def test_resumes_a_half_built_collection(tmp_path: Path, encoder: OnnxMiniLM) -> None:
    settings = _settings(tmp_path, "embedded")
    store = open_store(settings.store)
    try:
        report = build_index(settings, store, encoder)
        # Simulate a crash mid-way through a rebuild: alias gone, collection partly emptied.
        store.delete_collection(report.collection)
        store.create_collection(report.collection, CollectionSpec(dense_size=384))
        resumed = build_index(settings, store, encoder)
        assert resumed.built and store.count(resumed.collection) == DOCS
    finally:
        store.close()


class _Counting:
    """The real model, counting the texts it encodes."""

    def __init__(self, encoder: OnnxMiniLM) -> None:
        self._encoder = encoder
        self.model_id, self.dimension = encoder.model_id, encoder.dimension
        self.texts = 0

    def encode(self, texts: list[str], batch_size: int = 32) -> Any:
        self.texts += len(texts)
        return self._encoder.encode(texts, batch_size)


def test_chunks_are_checkpointed_and_a_damaged_checkpoint_encoded_again(
    tmp_path: Path, encoder: OnnxMiniLM
) -> None:
    settings = _settings(tmp_path, "embedded", index_chunk=8)
    counting = _Counting(encoder)
    store = open_store(settings.store)
    try:
        build_index(settings, store, counting)  # type: ignore[arg-type]
        files = sorted((tmp_path / "cache" / "vectors" / "chunks").glob("*.npy"))
        rows = [np.load(f) for f in files]
        assert sorted(len(r) for r in rows) == [6, 8, 8, 8] and counting.texts == DOCS
        for r in rows:
            np.testing.assert_allclose(np.linalg.norm(r, axis=1), 1.0, atol=1e-5)
        assert not build_index(settings, store, counting).built  # type: ignore[arg-type]
        files[0].write_bytes(b"not an npy file")
        assert build_index(settings, store, counting, force=True).built  # type: ignore[arg-type]
        assert counting.texts == DOCS + len(rows[0])  # that chunk alone, encoded again
        assert np.array_equal(np.load(files[0]), rows[0])  # rewritten
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
        "RETRIEVAL_MODE": "zero-shot",
    }
    cmd = [sys.executable, "-m", "services.retrieval.indexing.index", "--max-docs", "12"]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=True)
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=True)
    assert "12 documents, built" in first.stdout
    assert "12 documents, already up to date" in second.stdout
    store = open_store(StoreSettings(edge_path=tmp_path / "edge"))
    try:
        assert store.count(store.resolve_alias("nfcorpus") or "") == 12
    finally:
        store.close()


def test_server_store_needs_a_location() -> None:
    with pytest.raises(ValueError, match="RETRIEVAL_STORE=server needs"):
        StoreSettings(backend="server")


def test_supervised_build_adds_knn_and_ranker_and_rotates_them(
    tmp_path: Path, encoder: OnnxMiniLM
) -> None:
    settings = _settings(tmp_path, "embedded", 40, 60, mode="full", supervision="train")
    store = open_store(settings.store)
    try:
        first = build_index(settings, store, encoder)
        name = first.collection
        assert store.count(knn_collection(name)) == 60  # dev is held out: it only measures
        model = load_ranker(store, ranker_collection(name))
        assert model.meta["train_queries"] == 60 and model.meta["rounds"] == training.ROUNDS
        assert model.meta["seeds"] == list(training.SEEDS)  # one model per seed, scores summed
        assert all(0.0 <= x <= 1.0 for x in model.meta["dev_lightgbm_ndcg@10"])
        # Its trees are stored as onnxruntime graphs too: a server scores without LightGBM.
        assert None not in json.loads(model.graphs_text())
        assert not build_index(settings, store, encoder).built  # idempotent, model included

        pipeline = RankingPipeline(store, encoder, settings)
        assert pipeline.tables is not None and pipeline.ranker is not None
        results = pipeline.search("vitamin D and cancer", 7)
        assert len(results) == 7 and len({r["doc_id"] for r in results}) == 7

        # Two newer versions later, the first version's three collections are all gone.
        for n in (61, 62):
            newer = _settings(tmp_path, "embedded", 40, n, mode="full", supervision="train")
            build_index(newer, store, encoder)
        left = store.list_collections()
        assert not any(c.startswith(name) for c in left)
        assert len(left) == 8  # two versions x (documents, knn, corpus, ranker)
    finally:
        store.close()


def test_dev_queries_vote_by_default(tmp_path: Path, encoder: OnnxMiniLM) -> None:
    settings = _settings(tmp_path, "embedded", 40, 20, mode="full")
    dev_queries = len(load_qrels(settings.data_dir, "dev"))
    store = open_store(settings.store)
    try:
        name = build_index(settings, store, encoder).collection
        assert store.count(knn_collection(name)) == 20 + dev_queries
        model = load_ranker(store, ranker_collection(name))
        assert model.meta["train_queries"] == 20 + dev_queries  # dev queries teach it too
        assert "dev_lightgbm_ndcg@10" not in model.meta  # dev votes: it cannot measure
    finally:
        store.close()


def test_training_never_opens_the_test_qrels(
    tmp_path: Path, encoder: OnnxMiniLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    make_subset(data)
    # The file must exist (a folder without it is not a whole data set: it would be downloaded
    # again), but it holds no judgements and opening it fails the test: training cannot use it.
    (data / "qrels" / "test.tsv").write_text("not qrels\n")
    opened: list[str] = []
    real_open = builtins.open

    def guarded_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        if str(file).endswith("test.tsv"):
            raise AssertionError(f"training opened the test qrels: {file}")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded_open)
    settings = _settings(tmp_path, "embedded", 40, 30, mode="full", data_dir=data)
    store = open_store(settings.store)
    try:
        report = build_index(settings, store, encoder)
    finally:
        store.close()
    assert report.built
    assert any(p.endswith("train.tsv") for p in opened)
    assert not any(p.endswith("test.tsv") for p in opened)


def test_served_supervision_lets_dev_queries_vote_and_teach() -> None:
    data = RetrievalSettings().data_dir
    served = load_training_data(data, "train+dev")
    honest = load_training_data(data, "train")
    dev = set(load_qrels(data, "dev"))
    assert dev <= set(served.voters) and served.learners == served.voters
    assert not dev & set(honest.voters) and not dev & set(honest.learners)
    assert set(honest.held_out) == dev & set(load_queries(data))
    assert served.fingerprint() != honest.fingerprint()


def test_a_build_laid_out_for_three_nodes_completes_and_answers_in_local_mode(
    tmp_path: Path, encoder: OnnxMiniLM
) -> None:
    # Local mode takes the layout and ignores it: every collection of a supervised build is
    # created with it (the documents sharded, the small ones copied) and the version serves.
    settings = _settings(tmp_path, "server", 40, 60, mode="full", supervision="train")
    laid_out = settings.updated(store=THREE_NODES)
    store = open_store(laid_out.store)
    try:
        report = build_index(laid_out, store, encoder)
        name = report.collection
        assert report.built and store.count(name) == 40
        assert store.count(knn_collection(name)) == 60
        assert load_ranker(store, ranker_collection(name)).meta["train_queries"] == 60
        results = RankingPipeline(store, encoder, laid_out).search("vitamin D and cancer", 7)
        assert len({r["doc_id"] for r in results}) == 7
        assert not build_index(laid_out, store, encoder).built  # idempotent with a layout too
    finally:
        store.close()


def test_another_layout_is_another_version(tmp_path: Path, encoder: OnnxMiniLM) -> None:
    # A collection keeps the layout it was made with: a new one is built beside the served one.
    settings = _settings(tmp_path, "server")
    store = open_store(settings.store)
    try:
        first = build_index(settings, store, encoder)
        second = build_index(settings.updated(store=THREE_NODES), store, encoder)
        assert second.built and second.collection != first.collection
        assert store.resolve_alias("nfcorpus") == second.collection
        assert store.count(second.collection) == DOCS
    finally:
        store.close()
