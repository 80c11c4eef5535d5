"""The headline figures: one file, written by the targets that measure them, quoted by the pages.

``docs/figures.json`` holds one section per measuring target: what its last run measured, with
the date, the commit and the target's name. A page quotes a figure as
``<!-- figure:image.ndcg@5 -->0.5186<!-- /figure -->`` (the comment is invisible when the page is
rendered); after each run the target rewrites the section and every quote, so no page states a
figure that its target did not measure last. tests/checks fails when a quote and the file
disagree or a quote names a figure the file does not hold.

Sections and their targets:
  served    make eval-quality   NDCG through A2A, all 323 test queries (devtools/eval/quality.py)
  rankings  make rankings       the digest of every test query's top 100, in-process
  image     make test-image     the image: size on disk and compressed, its runtime's packages,
                                start to ready, 323 queries through A2A 0.3, the digest served
                                and computed inside it
  chart     make chart-run      the chart's pods: every pod Ready, 323 queries through the purple
                                Service, the load during both rolling restarts
  pair      make bench-pair     a base commit's servers and ours in turns: throughput, latency,
                                server CPU per A2A query and its ratio to the encoder's, memory
  frame     make bench-frame    what is ours around a search (the frame, the search service),
                                CPU per query, spans unexported and exported
  load      make bench-load     our load generator and Locust's FastHttpUser in turns: CPU per
                                request over A2A 1.0 and 0.3, and the ratio
  scale     make bench-scale    NFCorpus and larger corpora (NFCorpus plus distractors), full and
                                zero-shot: one record per size and mode (cost, latency, memory,
                                start-up, index size, quality, HNSW recall), the composed
                                vectors' measured error, and each record's figures flat for quotes
  scale_build make bench-scale-build  the indexer's build at larger corpora: wall time, peak RSS,
                                time per phase, the larger ones again under a memory limit, and
                                the encoding split over two processes

``python -m devtools.figures SECTION REPORT`` records a section from a target's JSON report;
``python -m devtools.figures --check`` only compares (exit 1 with the stale pages). Targets may
record at the same time (make test-image beside make bench-load, say): one records at a time,
holding a lock on the file's folder, and every file is replaced whole (a temporary file renamed
over it), so none loses another's section and no reader sees half a file.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import fcntl
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from devtools.bench.scale import headlines
from harness.processes import REPO
from services.common.files import atomic_write_text

FIGURES = REPO / "docs" / "figures.json"
PAGES = (
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    REPO / "helm" / "nfcorpus-retrieval" / "README.md",
    REPO / "k8s" / "README.md",
)
QUOTE = re.compile(r"<!-- figure:([\w.@-]+) -->(.*?)<!-- /figure -->", re.DOTALL)

Figures = dict[str, dict[str, Any]]


class FigureError(KeyError):
    """A page quotes a figure the file does not hold."""


def load(path: Path = FIGURES) -> Figures:
    """Every section of the figures file (none when it does not exist yet)."""
    return dict(json.loads(path.read_text())) if path.exists() else {}


def lookup(figures: Figures, key: str) -> Any:
    """The figure ``section.name``; :class:`FigureError` when the file does not hold it."""
    section, _, name = key.partition(".")
    try:
        return figures[section][name]
    except KeyError:
        raise FigureError(f"{key}: no such figure in {FIGURES.name}") from None


def formatted(key: str, value: Any) -> str:
    """How a page writes a figure: by what its name says it is."""
    name = key.rpartition(".")[2]
    if name.startswith("ndcg@") and isinstance(value, float):
        return f"{value:.4f}"
    measure = any(w in name for w in ("ndcg", "recall", "cosine", "share", "overlap"))
    if measure and isinstance(value, float):  # a measure between 0 and 1 (or a delta of one)
        return f"{value:.4f}"
    if name.endswith("sha256"):
        return f"`{value[:8]}…`"
    if name.endswith("_bytes"):
        return f"{value / 1e6:.0f} MB"
    if name.endswith("_s") and isinstance(value, float | int):
        return f"{value:.1f} s"
    if name.endswith("cpu_ms") and isinstance(value, float | int):
        return f"{value:.2f} ms"
    if name.endswith("_ms") and isinstance(value, float | int):
        return f"{value:.1f} ms" if value < 100 else f"{value:.0f} ms"
    if name.endswith("_x") and isinstance(value, float | int):
        return f"{value:.2f}x"
    if name.endswith("_qps") and isinstance(value, float | int):
        return f"{value:.1f} q/s"
    if name.endswith("_mb") and isinstance(value, float | int):
        return f"{value:.0f} MB"
    if name.startswith("rss_mb_") and isinstance(value, float | int):  # a generator's few MB
        return f"{value:.1f} MB"
    if name == "commit":
        return f"`{value[:7]}`"
    if isinstance(value, bool):  # before int: a bool is one
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def render(text: str, figures: Figures, strict: bool = True) -> str:
    """``text`` with every quote holding the figure's current value.

    A quote of a figure ``figures`` lacks raises :class:`FigureError`, or with ``strict`` off
    stays as it is (a target records its own section while another's is not there yet).
    """

    def quote(match: re.Match[str]) -> str:
        key = match.group(1)
        try:
            value = formatted(key, lookup(figures, key))
        except FigureError:
            if strict:
                raise
            return match.group(0)
        return f"<!-- figure:{key} -->{value}<!-- /figure -->"

    return QUOTE.sub(quote, text)


def stale(figures: Figures, pages: tuple[Path, ...] = PAGES, strict: bool = True) -> list[Path]:
    """The pages whose quotes differ from ``figures``."""
    return [p for p in pages if render(p.read_text(), figures, strict) != p.read_text()]


def _commit() -> str:
    run = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return run.stdout.strip() or "unknown"


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` (released when the process ends, however it ends)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def record(
    section: str,
    values: Mapping[str, Any],
    target: str,
    path: Path = FIGURES,
    pages: tuple[Path, ...] = PAGES,
) -> None:
    """Replace ``section`` with ``values`` of a run of ``target``, then rewrite every quote."""
    with _locked(path.parent):
        figures = load(path)
        figures[section] = {
            **values,
            "target": target,
            "date": datetime.date.today().isoformat(),
            "commit": _commit(),
        }
        atomic_write_text(path, json.dumps(figures, indent=2, sort_keys=True) + "\n")
        for page in pages:
            text = page.read_text()
            if (quoted := render(text, figures, strict=False)) != text:
                atomic_write_text(page, quoted)


def _image(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "size_bytes": report["size_bytes"],
        "compressed_bytes": report["compressed_bytes"],
        "runtime_packages": report["runtime_packages"],
        "ready_s": report["ready_s"],
        "queries": report["queries"],
        "failed": report["failed"],
        "ndcg@5": report["ndcg@5"],
        "ndcg@10": report["ndcg@10"],
        "rankings_sha256_a2a": report["rankings_sha256_a2a"],
        "rankings_sha256_in_process": report["rankings_sha256_in_process"],
    }


def _chart(report: dict[str, Any]) -> dict[str, Any]:
    ready = [float(s) for s in report["ready_s"].values()]
    evaluation, load_ = report["eval"], report["load"]
    return {
        "pods": len(ready),
        "slowest_ready_s": max(ready),
        "queries": evaluation["queries"],
        "failed": evaluation["failed"],
        "ndcg@5": evaluation["ndcg@5"],
        "ndcg@10": evaluation["ndcg@10"],
        "load_requests": load_["requests"],
        "load_errors": load_["errors"],
        "load_p50_ms": load_["p50_s"] * 1000,
        "load_p95_ms": load_["p95_s"] * 1000,
        "run_s": report["seconds"],
        **_chart_load_test(report["load_test"]["report"]),
    }


def _chart_load_test(run: dict[str, Any]) -> dict[str, Any]:
    """The in-cluster load test's merged report, and its generators' cost."""
    per_request = [w["cpu_ms_per_request"] for w in run["workers"]]
    return {
        "load_test_workers": len(run["workers"]),
        "load_test_asked_qps": run["target_rate"],
        "load_test_requests": run["requests"],
        "load_test_errors": run["errors"],
        "load_test_qps": run["throughput_rps"],
        "load_test_p50_ms": run["p50_s"] * 1000,
        "load_test_p99_ms": run["p99_s"] * 1000,
        "load_test_generator_cpu_ms": max(per_request),
    }


def _pair(report: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "base_commit": report["base_commit"],
        "rounds": report["rounds"],
        "encoder_cpu_ms": report["encoder_cpu_ms_per_query"],
        "c16_throughput_x": report["throughput_c16_head_over_base"],
    }
    for side in ("base", "head"):
        figures = report[side]
        out[f"{side}_rss_mb"] = figures["mcp_rss_after_start_mb"]
        for phase, short in (("concurrency_1", "c1"), ("concurrency_16", "c16")):
            f = figures[phase]
            out[f"{side}_{short}_qps"] = f["throughput_qps"]
            out[f"{side}_{short}_p50_ms"] = f["p50_ms"]
            out[f"{side}_{short}_p99_ms"] = f["p99_ms"]
            out[f"{side}_{short}_cpu_ms"] = f["server_cpu_ms_per_query"]
            out[f"{side}_{short}_encoders_x"] = f["cpu_over_encoder"]
            out[f"{side}_{short}_failed"] = f["failed"]
    return out


def _frame(report: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in ("unexported", "exported"):
        f = report[mode]
        out[f"{mode}_frame_cpu_ms"] = f["frame_us"] / 1000
        out[f"{mode}_service_cpu_ms"] = f["service_over_pipeline_ms"]
        out[f"{mode}_ours_cpu_ms"] = f["ours_ms"]
        out[f"{mode}_pipeline_cpu_ms"] = f["pipeline_ms"]
    return out


def _load(report: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"rounds": report["rounds"], "concurrency": report["concurrency"]}
    for protocol, short in (("1.0", "v10"), ("0.3", "v03")):
        r = report[protocol]
        out[f"{short}_ours_cpu_ms"] = r["ours_cpu_ms"]
        out[f"{short}_locust_cpu_ms"] = r["locust_cpu_ms"]
        out[f"{short}_ours_over_locust_x"] = r["ours_over_locust"]
        out[f"{short}_ours_qps"] = r["ours_rps"]
        out[f"{short}_locust_qps"] = r["locust_rps"]
    return out


def _load_soak(report: dict[str, Any]) -> dict[str, Any]:
    keys = ("duration_s", "concurrency", "report_every_s", "requests")
    out = {key: report[key] for key in keys}
    out["requests_qps"] = report["requests_per_s"]
    out["per_request_cpu_ms"] = report["cpu_ms_per_request"]
    out["rss_mb_first_minute"] = report["rss_mb_first_minute"]
    out["rss_mb_end"] = report["rss_mb_end"]
    out["rss_mb_max_after_first_minute"] = report["rss_mb_max_after_first_minute"]
    out["rss_end_over_first_minute_x"] = report["rss_end_over_first_minute"]
    return out


#: Section -> its target and how its headline is read off the target's JSON report.
FROM_REPORT: dict[str, tuple[str, Callable[[dict[str, Any]], dict[str, Any]]]] = {
    "image": ("make test-image", _image),
    "chart": ("make chart-run", _chart),
    "pair": ("make bench-pair", _pair),
    "frame": ("make bench-frame", _frame),
    "load": ("make bench-load", _load),
    "load_soak": ("make bench-load-soak", _load_soak),
    "scale": ("make bench-scale", headlines.scale),
    "scale_build": ("make bench-scale-build", headlines.build),
}


def main() -> None:
    """Record a section from a target's report, or check the pages (``--check``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("section", nargs="?", choices=sorted(FROM_REPORT))
    parser.add_argument("report", nargs="?", type=Path, help="the target's JSON report")
    parser.add_argument("--check", action="store_true", help="only compare the pages")
    args = parser.parse_args()
    if args.check:
        pages = stale(load())
        if pages:
            names = ", ".join(str(p.relative_to(REPO)) for p in pages)
            sys.exit(f"pages that quote other figures than docs/figures.json: {names}")
        return
    if args.section is None or args.report is None:
        parser.error("give a SECTION and its REPORT, or --check")
    target, headline = FROM_REPORT[args.section]
    record(args.section, headline(json.loads(args.report.read_text())), target)
    print(f"figures: {args.section} from {args.report} ({target}) -> {FIGURES.relative_to(REPO)}")


if __name__ == "__main__":
    main()
