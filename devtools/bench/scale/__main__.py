"""``python -m devtools.bench.scale --sizes 3633,36330 --out reports/bench_scale.json``.

Prepares each size (a BEIR folder of NFCorpus plus distractors, its vectors in the indexer's
cache), builds each size's index in each mode with the ordinary indexer, serves it with the real
MCP server and measures it; writes the report as JSON and, with ``--charts``, its SVG charts.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from devtools.bench.scale.charts import write_charts
from devtools.bench.scale.prepare import Plan
from devtools.bench.scale.run import Options, run
from harness.processes import REPO
from services.common.files import atomic_write_text
from services.retrieval.settings import RetrievalSettings
from services.telemetry.logging import setup_logging

log = logging.getLogger("devtools.bench.scale")
DEFAULT_SIZES = "3633,36330,363300"


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(part.replace("_", "")) for part in text.split(",") if part.strip())


def _pair(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def main() -> None:
    """Parse the options (data and cache folders from the retrieval settings), run, write."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        type=_ints,
        default=_ints(DEFAULT_SIZES),
        help="corpus sizes in documents, comma-separated",
    )
    parser.add_argument("--modes", default="full,zero-shot", help="full, zero-shot or both")
    parser.add_argument(
        "--base-docs",
        type=int,
        default=None,
        help="real documents: the first N of NFCorpus (default: all)",
    )
    parser.add_argument("--seed", type=int, default=53, help="the distractor generator's seed")
    parser.add_argument(
        "--sentences", type=_pair, default=(4, 12), help="sentences per distractor, LOW-HIGH"
    )
    parser.add_argument(
        "--measure",
        type=int,
        default=1000,
        help="distractors encoded for real to measure the composed vectors' error",
    )
    parser.add_argument(
        "--queries",
        type=int,
        default=2000,
        help="queries per server in all (the test queries, then 4 in flight)",
    )
    parser.add_argument(
        "--quality-queries",
        type=int,
        default=None,
        help="only the first N judged test queries (default: all)",
    )
    parser.add_argument(
        "--work",
        type=Path,
        default=REPO / "var" / "bench-scale",
        help="scratch folder: each size's data, stores and logs",
    )
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "bench_scale.json")
    parser.add_argument(
        "--charts",
        type=Path,
        default=None,
        help="write the SVG charts into this folder (docs/images)",
    )
    args = parser.parse_args()  # fmt: skip
    setup_logging()
    settings = RetrievalSettings()
    modes = tuple(m.strip() for m in args.modes.split(",") if m.strip())
    if unknown := set(modes) - {"full", "zero-shot"}:
        parser.error(f"unknown modes {sorted(unknown)}")
    plan = Plan(
        settings.data_dir, args.work.resolve(), settings.cache_dir, args.sizes,
        args.base_docs, args.seed, args.sentences, args.measure,
    )  # fmt: skip
    report = run(
        Options(plan, modes, args.queries, args.quality_queries, settings.store.collection)
    )
    atomic_write_text(args.out, json.dumps(report, indent=2) + "\n")
    log.info("report written to %s", args.out)
    if args.charts is not None:
        for path in write_charts(report["records"], args.charts):
            log.info("chart written to %s", path)


if __name__ == "__main__":
    main()
