"""Two builds of the same data in two fresh processes store the same model and serve the same
ranking.

Each build runs the indexer CLI in its own process with its own hash seed, into its own store.
Before points were stored one operation each, the engine numbered the points of a batch in an
order that changed per process; that order broke ties between equal scores, so the two rankers
trained on different features and ranked differently.

The second build starts from an empty cache: it encodes every document and query afresh and
prepares the encoder's model again, so the encoder's own determinism is checked too, not only
what the first build left in the vector cache.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.processes import BASE_ENV, REPO
from services.nfcorpus.dataset import load_queries
from services.retrieval.encoders.dense import OnnxMiniLM
from services.retrieval.query.index_version import load_ranker, ranker_collection
from services.retrieval.query.pipeline import RankingPipeline
from services.retrieval.settings import RetrievalSettings, StoreSettings
from services.retrieval.store import open_store
from tests.support.small_index import SmallIndex

TRAIN_QUERIES = "200"  # enough for a model with real splits, and for ties among duplicates


def _build(data_dir: Path, edge: Path, hash_seed: str, cache: Path | None) -> None:
    env = {
        **os.environ,
        **BASE_ENV,
        "PYTHONHASHSEED": hash_seed,
        "RETRIEVAL_DATA_DIR": str(data_dir),
        "RETRIEVAL_EDGE_PATH": str(edge),
        "RETRIEVAL_MAX_TRAIN_QUERIES": TRAIN_QUERIES,
    }
    if cache is not None:
        env["RETRIEVAL_CACHE_DIR"] = str(cache)
    command = [sys.executable, "-m", "services.retrieval.indexing.index"]
    subprocess.run(command, env=env, cwd=REPO, check=True, capture_output=True, timeout=600)


def _served(settings: RetrievalSettings, query_ids: list[str]) -> tuple[str, list[list[str]]]:
    """The stored model's text and the top 20 of each query, from a private copy of the store."""
    queries = load_queries(settings.data_dir)
    store = open_store(settings.store.model_copy(update={"edge_private_copy": True}))
    try:
        pipeline = RankingPipeline(store, OnnxMiniLM(threads=1), settings)
        model = load_ranker(store, ranker_collection(pipeline.collection)).to_text()
        return model, [[r["doc_id"] for r in pipeline.search(queries[q], 20)] for q in query_ids]
    finally:
        store.close()


def test_two_builds_in_fresh_processes_serve_identical_rankings(
    small_index: SmallIndex, tmp_path: Path
) -> None:
    data_dir = small_index.settings.data_dir
    served = []
    empty_cache = tmp_path / "empty-cache"
    # a: with the vectors the suite's small index cached; b: from nothing, encoding afresh.
    for name, seed, cache in (("a", "1", None), ("b", "2", empty_cache)):
        _build(data_dir, tmp_path / name, seed, cache)
        settings = RetrievalSettings(
            data_dir=data_dir, store=StoreSettings(edge_path=tmp_path / name)
        )
        served.append(_served(settings, small_index.query_ids))
    assert list(empty_cache.glob("vectors/*.npy"))  # b encoded and cached its own vectors
    (model_a, ranked_a), (model_b, ranked_b) = served
    assert model_a == model_b  # the same bytes: same features, same training
    assert ranked_a == ranked_b
    assert all(len(ids) == 20 for ids in ranked_a)
