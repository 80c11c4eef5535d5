"""The whole benchmark: prepare every size, then build, serve and measure each size in each mode.

Sizes run from the smallest up and modes in the order given, each against its own store folder
(``<work>/n<N>/<mode>/edge``), so a re-run finds every index already current and only measures;
nothing of one size's server is alive while another's is measured.
"""

from __future__ import annotations

import datetime
import logging
import os
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from devtools.bench.scale.corpus import ID_PATTERN
from devtools.bench.scale.measure import Target, build_index, serve_and_measure, served_mb
from devtools.bench.scale.prepare import Plan, Prepared, prepare, size_folder, test_query_vectors
from devtools.bench.scale.quality import TestQueries, quality, recall_at_100, served_collection
from devtools.bench.scale.vectors import TOKENS_PER_WORD
from harness.processes import REPO
from services.nfcorpus.dataset import load_qrels, load_queries
from services.retrieval.encoders.dense import Matrix, OnnxMiniLM
from services.retrieval.settings import StoreSettings

log = logging.getLogger(__name__)

METHOD = (
    "distractors: a title (another document's title, else a short sentence) and k sentences of "
    "random NFCorpus documents, seeded; vectors: each distractor's the normalised mean of its "
    "title's and sentences' MiniLM vectors weighted by words, within the model's token budget "
    f"(tokens per word {TOKENS_PER_WORD}); real documents encoded for real"
)


@dataclass(frozen=True, slots=True)
class Options:
    """What one run measures."""

    plan: Plan
    modes: tuple[str, ...] = ("full", "zero-shot")
    queries: int = 2000
    quality_queries: int | None = None
    alias: str = "nfcorpus"


def _commit() -> str:
    run = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return run.stdout.strip() or "unknown"


def load_texts(folder: Path) -> list[str]:
    """Dev and test query texts in a fixed order: what the four-in-flight phase asks."""
    queries = load_queries(folder)
    ids = sorted({q for split in ("dev", "test") for q in load_qrels(folder, split)})
    return [queries[q] for q in ids if q in queries]


def measure_one(
    options: Options, size: int, mode: str, prepared: Prepared, vectors: Matrix
) -> dict[str, Any]:
    """Build, serve and measure one size in one mode: its record."""
    root, data_dir = size_folder(options.plan.work, size), prepared.folders[size].path
    target = Target(
        size,
        mode,
        data_dir,
        root / mode / "edge",
        options.plan.cache_dir,
        root / "logs",
    )
    log.info("n=%d %s: indexing", size, mode)
    built = build_index(target)
    queries = TestQueries.load(data_dir, options.quality_queries)
    log.info("n=%d %s: serving %d + load queries", size, mode, len(queries.ids))
    served, answers = serve_and_measure(
        target, queries.texts, load_texts(data_dir), options.queries
    )
    store = StoreSettings(edge_path=target.edge_path)
    return {
        "documents": size,
        "distractors": size - prepared.base_documents,
        "mode": mode,
        **served,
        **quality(queries, answers),
        "quality_queries": len(queries.ids),
        "index_mb": served_mb(target.edge_path, served_collection(store, options.alias)),
        "recall_at_100": recall_at_100(store, options.alias, vectors),
        **built,
    }


def run(options: Options) -> dict[str, Any]:
    """Every size in every mode; the report as JSON-ready data."""
    plan = options.plan
    load = os.getloadavg()
    encoder = OnnxMiniLM(threads=2, cache_dir=plan.cache_dir)
    prepared = prepare(plan, encoder)
    vectors = test_query_vectors(encoder, plan.source, plan.cache_dir)
    del encoder
    records = []
    for size in sorted(plan.sizes):
        for mode in options.modes:
            record = measure_one(options, size, mode, prepared, vectors)
            log.info("n=%d %s: %s", size, mode, record)
            records.append(record)
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": {"cpus": os.cpu_count(), "load_average_at_start": load},
        "sizes": sorted(plan.sizes),
        "modes": list(options.modes),
        "generator": {
            "base_documents": prepared.base_documents,
            "seed": plan.seed,
            "sentences": list(plan.sentences),
            "id_pattern": ID_PATTERN.pattern,
            "method": METHOD,
        },
        "folders": {str(n): asdict(f) | {"path": str(f.path)} for n, f in prepared.folders.items()},
        "checkpoints": {str(n): count for n, count in prepared.chunks.items()},
        "composed_vectors": prepared.error,
        "records": records,
    }
