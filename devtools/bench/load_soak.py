"""``make bench-load-soak``: one generator for ten minutes at a steady high rate, its RSS read.

A generator keeps no outcome (:mod:`services.green_agent.load.recorder`), so its memory should
stop growing once its figures have seen the latencies and the pool's queries: the RSS at the end
of a long run should be that after its first minute. This runs one generator process exactly as
a Job's pod runs (``load --report-to`` a collector, a snapshot every ``--report-every`` seconds)
against one MCP server (its result cache on) and our purple agent, closed loop at a concurrency
that keeps it busy, and reads its RSS from ``/proc`` every second. The agent answers from its
cache, so the generator, not the search, sets the pace. Every answer must pass the contract.

``python -m devtools.bench.load_soak [--minutes 10] [--out reports/load_soak.json]``;
``docs/observability.md`` has the figures of the last run (``docs/figures.json``, section
``load_soak``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from devtools.bench.a2a_agents import CACHED_ENTRIES, mcp_server, our_agent
from devtools.bench.load_generators import QUIET
from harness.processes import REPO, ServerProcess
from services.green_agent.settings import load_settings

CONCURRENCY = 16
REPORT_EVERY_S = 5.0
#: The generator's RSS after this much of its run stands for its start (``--first``).
FIRST_MINUTE_S = 60.0
SAMPLE_S = 1.0


def rss_mb(pid: int) -> float | None:
    """The resident set of process ``pid`` in MB (None once it has gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return None


def _collector(folder: Path) -> ServerProcess:
    args = ["load-collect", "--workers", "1", "--run", "soak", "--out", str(folder / "merged.json")]
    return ServerProcess.module(
        "services.green_agent", args, env=QUIET, ready_path="/healthz", log_path=folder / "c.log"
    )


def soak(seconds: float, data_dir: Path, first_s: float = FIRST_MINUTE_S) -> dict[str, Any]:
    """One generator for ``seconds``; its RSS every second, its report and the collector's."""
    with (
        mcp_server(CACHED_ENTRIES, env=QUIET) as mcp,
        our_agent(mcp.base_url + "/mcp", env=QUIET) as agent,
        tempfile.TemporaryDirectory() as name,
    ):
        folder = Path(name)
        with _collector(folder) as collector:
            argv = [sys.executable, "-m", "services.green_agent", "load"]
            argv += ["--agent", agent.base_url, "--concurrency", str(CONCURRENCY)]
            argv += ["--duration", f"{seconds:g}", "--queries", "test", "--progress", "0"]
            argv += ["--data-dir", str(data_dir), "--out", str(folder / "soak.json")]
            argv += ["--run", "soak", "--report-to", collector.base_url]
            argv += ["--report-every", f"{REPORT_EVERY_S:g}"]
            env = {**os.environ, "PYTHONPATH": str(REPO), **QUIET}
            with (folder / "generator.log").open("wb") as log:
                process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=log)
                started = time.monotonic()
                samples: list[tuple[float, float]] = []
                while process.poll() is None:
                    rss = rss_mb(process.pid)
                    if rss is not None:
                        samples.append((time.monotonic() - started, rss))
                    time.sleep(SAMPLE_S)
            if process.returncode != 0:
                tail = (folder / "generator.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the generator exited with {process.returncode}: {tail}")
            report = json.loads((folder / "soak.json").read_text())
            merged = json.loads((folder / "merged.json").read_text())
    if report["errors"] or report["dropped"]:
        raise RuntimeError(f"the generator saw failures: {report['errors_by_reason']}")
    return summary(samples, report, merged, seconds, first_s)


def summary(
    samples: list[tuple[float, float]],
    report: dict[str, Any],
    merged: dict[str, Any],
    seconds: float,
    first_s: float,
) -> dict[str, Any]:
    """The RSS after the first minute and at the end, and what the run asked and cost."""
    later = [rss for t, rss in samples if t >= first_s]
    if not later:
        raise RuntimeError(f"no RSS sample after the first {first_s:g} s: the run ended before")
    first, end = later[0], samples[-1][1]
    worker = report["workers"][0]
    return {
        "duration_s": seconds,
        "concurrency": CONCURRENCY,
        "report_every_s": REPORT_EVERY_S,
        "requests": report["requests"],
        "requests_per_s": report["throughput_rps"],
        "cpu_ms_per_request": worker["cpu_ms_per_request"],
        "rss_mb_first_minute": first,
        "rss_mb_end": end,
        "first_minute_s": first_s,
        "rss_mb_max_after_first_minute": max(later),
        "rss_end_over_first_minute": end / first,
        "rss_mb_median": statistics.median(rss for _, rss in samples),
        # The collector's merge of the snapshots and the final report: the same run.
        "collector_requests": merged["requests"],
        "collector_complete": merged["complete"],
        "rss_samples": [[round(t, 1), round(rss, 1)] for t, rss in samples],
    }


def main() -> None:
    """Run the soak and write its JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=Path("reports/load_soak.json"))
    parser.add_argument(
        "--first",
        type=float,
        default=FIRST_MINUTE_S,
        metavar="SECONDS",
        help="the RSS this long into the run is the one the end is held to",
    )
    args = parser.parse_args()
    if not 0 < args.first < args.minutes * 60:
        parser.error(f"--first is within the run: 0 < {args.first:g} < {args.minutes * 60:g}")
    report = soak(args.minutes * 60, load_settings().data_dir, args.first)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(
        f"{report['requests']:,} requests ({report['requests_per_s']:.0f}/s): RSS "
        f"{report['rss_mb_first_minute']:.1f} MB after the first minute, "
        f"{report['rss_mb_end']:.1f} MB at the end ({report['rss_end_over_first_minute']:.2f}x)"
    )
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
