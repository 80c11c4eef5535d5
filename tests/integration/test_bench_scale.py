"""make bench-scale end to end at a tiny size: the first NFCorpus documents plus distractors, one
mode, a few queries, through the ordinary indexer and the real MCP server.

What is asserted is the report's shape and what the harness must guarantee (the documents
counted right, valid distractor ids, the indexer reading every vector from its cache), never a
figure of the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from devtools.bench.scale.charts import CHARTS
from devtools.bench.scale.corpus import ID_PATTERN
from devtools.figures import FROM_REPORT
from harness.processes import BASE_ENV, REPO
from services.nfcorpus.dataset import DEFAULT_DATA_DIR, load_corpus
from services.retrieval.settings import RetrievalSettings

BASE, SIZE, MEASURED, QUALITY, QUERIES = 100, 250, 20, 20, 40
RECORD_FIELDS = {
    "documents", "distractors", "mode", "cpu_ms_per_query", "cpu_ms_per_query_c4",
    "cpu_ms_event_loop", "cpu_ms_other_threads", "stage_ms", "store_call_ms",
    "store_calls_per_query", "p50_ms_c1", "p99_ms_c1",
    "p50_ms_c4", "p99_ms_c4", "rss_mb_after_start", "rss_mb_after_queries",
    "rss_anon_mb_after_start", "rss_anon_mb_after_queries", "ready_s", "index_mb", "ndcg5", "ndcg10", "ndcg5_judged", "distractor_share_top10",
    "queries_with_distractor_top5", "recall_at_100", "queries", "failed", "quality_queries",
    "index_build_s", "indexer_encoded_chunks",
}  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    root = tmp_path_factory.mktemp("bench-scale")
    argv = [
        sys.executable, "-m", "devtools.bench.scale", "--base-docs", str(BASE),
        "--sizes", str(SIZE), "--modes", "zero-shot", "--sentences", "1-2",
        "--measure", str(MEASURED), "--queries", str(QUERIES),
        "--quality-queries", str(QUALITY), "--work", str(root / "work"),
        "--out", str(root / "report.json"), "--charts", str(root / "images"),
    ]  # fmt: skip
    done = subprocess.run(
        argv, cwd=REPO, env={**os.environ, **BASE_ENV}, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((root / "report.json").read_text()), root


def test_every_record_holds_every_field_for_its_size(run: tuple[dict[str, Any], Path]) -> None:
    report, _ = run
    (record,) = report["records"]
    assert set(record) >= RECORD_FIELDS, sorted(RECORD_FIELDS - set(record))
    assert (record["documents"], record["distractors"], record["mode"]) == (
        SIZE, SIZE - BASE, "zero-shot"
    )  # fmt: skip
    assert record["queries"] == QUERIES and record["quality_queries"] == QUALITY
    assert record["failed"] == 0
    assert set(record["stage_ms"]) == {"encode", "store", "ranking"}
    # Every query searches the store, and the searches' time is reported by operation.
    assert record["store_calls_per_query"]["search"] >= 1
    assert isinstance(record["store_call_ms"]["search"], float)
    for name in ("ndcg5", "ndcg10", "ndcg5_judged", "distractor_share_top10"):
        assert 0.0 <= record[name] <= 1.0, name
    assert record["recall_at_100"] is None or 0.0 <= record["recall_at_100"] <= 1.0
    # Measured, whatever their values on this machine: present, as numbers.
    for name in (
        "ready_s", "rss_mb_after_start", "rss_anon_mb_after_start", "rss_anon_mb_after_queries",
        "index_mb",
    ):  # fmt: skip
        assert isinstance(record[name], float), name


def test_the_indexer_read_every_vector_from_its_cache(run: tuple[dict[str, Any], Path]) -> None:
    report, _ = run
    (record,) = report["records"]
    assert record["index_built"] and record["indexer_encoded_chunks"] == 0
    assert report["checkpoints"][str(SIZE)] == -(-SIZE // RetrievalSettings().index_chunk)


def test_the_corpus_is_the_real_documents_then_distractors(
    run: tuple[dict[str, Any], Path],
) -> None:
    report, _ = run
    folder = Path(report["folders"][str(SIZE)]["path"])
    ids = [d.doc_id for d in load_corpus(folder)]
    real = [d.doc_id for d in load_corpus(DEFAULT_DATA_DIR, limit=BASE)]
    assert ids[:BASE] == real and len(ids) == SIZE == len(set(ids))
    assert all(ID_PATTERN.fullmatch(d) for d in ids[BASE:])
    assert (folder / "qrels" / "test.tsv").is_symlink()


def test_the_composed_vectors_error_is_measured(run: tuple[dict[str, Any], Path]) -> None:
    error = run[0]["composed_vectors"]
    assert error["measured"] == MEASURED
    assert -1.0 <= error["cosine_min"] <= error["cosine_p5"] <= error["cosine_mean"] <= 1.0
    assert 0.0 <= error["dense_top10_overlap"] <= 1.0


def test_the_charts_and_the_figures_section(run: tuple[dict[str, Any], Path]) -> None:
    report, root = run
    for name in CHARTS:
        ElementTree.parse(root / "images" / name)  # well-formed SVG
    _, section = FROM_REPORT["scale"]
    figures = section(report)
    assert figures["records"][0]["documents"] == SIZE
    assert figures["documents_small"] == figures["documents_large"] == SIZE
    # One size is both the smallest and the largest, and is quoted by its documents too.
    assert {"zs_small_cpu_ms", "zs_large_cpu_ms", f"zs_n{SIZE}_cpu_ms"} <= set(figures)
    assert figures["zs_ndcg5_judged_delta"] == 0.0
    assert figures["composed_measured"] == MEASURED
