"""Faults under load on a local cluster: 2 MCP servers + 2 purple agents behind HAProxy.

``python scripts/reliability.py`` (``make reliability``) drives the cluster with the green
agent's load mode and, during the load: rolling-restarts every replica one at a time, SIGKILLs
one of each tier, SIGSTOPs an MCP server, then loads it at 4x its saturation rate. It writes
``reports/reliability.json`` and the table of ``docs/reliability.md``. Every number comes from
one run on this machine; ``--quick`` shortens every phase (the CI test runs the same code).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from services.common.cluster import LocalCluster
from services.common.processes import REPO


def under_load(
    cluster: LocalCluster, name: str, seconds: float, pace: list[str], action: Callable[[], None]
) -> dict[str, Any]:
    """Run ``action`` in the background while the cluster is under load; the load's report."""
    started = time.monotonic()
    worker = threading.Thread(target=action, daemon=True)
    worker.start()
    report = cluster.load(seconds, pace, name)
    worker.join()
    report["action_s"] = time.monotonic() - started
    return report


def summary(name: str, report: dict[str, Any]) -> dict[str, Any]:
    """The figures of one phase."""
    lat, err = report["latency"], report["error_latency"]
    return {
        "phase": name,
        "requests": report["requests"],
        "ok": report["ok"],
        "failed": report["errors"],
        "failures_by_reason": report["errors_by_reason"],
        "throughput_rps": round(report["throughput_rps"], 1),
        "p50_ms": round(lat["p50_s"] * 1000, 1),
        "p99_ms": round(lat["p99_s"] * 1000, 1),
        "max_ms": round(lat["max_s"] * 1000, 1),
        "failure_max_ms": round(err["max_s"] * 1000, 1),
        "samples": report["error_samples"][:3],
    }


def rss_kb(pid: int | None) -> int:
    """Resident memory of a process."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1])


def footprint(cluster: LocalCluster, scratch: Path) -> dict[str, Any]:
    """RSS of every replica, and what their shard copies take in the temporary folder."""
    copies = scratch / "nfcorpus-shard-copies"
    files = [p for p in copies.rglob("*") if p.is_file()] if copies.exists() else []
    return {
        "rss_mb": {r.name: round(rss_kb(r.process.pid) / 1024, 1) for r in cluster.replicas},
        "tmp_copies_mb": round(sum(p.stat().st_blocks * 512 for p in files) / 2**20, 1),
        "tmp_copy_folders": len(list(copies.iterdir())) if copies.exists() else 0,
    }


def run(workdir: Path, in_flight: dict[str, str], quick: bool) -> dict[str, Any]:
    """Every phase, in order, on one cluster (``in_flight``: admission limit of each tier)."""
    scratch = workdir / "tmp"
    scratch.mkdir()
    tiers = {tier: {"SERVER_MAX_IN_FLIGHT": n} for tier, n in in_flight.items()}
    cluster = LocalCluster(workdir, {"TMPDIR": str(scratch)}, tiers)
    seconds = 8.0 if quick else 30.0
    steady = ["--concurrency", "8"]
    phases: list[dict[str, Any]] = []
    cluster.start()
    try:
        before = footprint(cluster, scratch)
        capacity = cluster.load(seconds / 2, ["--concurrency", "16"], "capacity")
        phases.append(summary("saturation (closed loop, 16 clients)", capacity))

        def rolling() -> None:
            for replica in cluster.replicas:
                cluster.restart(replica)

        restart_s = 30.0 if quick else 60.0
        phases.append(
            summary(
                "rolling restart of all 4 replicas",
                under_load(cluster, "rolling", restart_s, steady, rolling),
            )
        )

        def kills() -> None:
            time.sleep(seconds / 4)
            cluster.kill(cluster.mcp[0])
            time.sleep(seconds / 4)
            cluster.kill(cluster.purple[0])

        phases.append(
            summary(
                "SIGKILL of one MCP server, then one purple agent",
                under_load(cluster, "kill", seconds * 1.5, steady, kills),
            )
        )

        def hang() -> None:
            time.sleep(seconds / 4)
            cluster.hang(cluster.mcp[1], seconds / 2)

        phases.append(
            summary(
                "SIGSTOP of one MCP server",
                under_load(cluster, "hang", seconds * 1.5, steady, hang),
            )
        )
        rate = 4 * capacity["throughput_rps"]
        overload = ["--rate", f"{rate:.0f}", "--max-in-flight", "2048"]
        report = cluster.load(seconds, overload, "overload")
        phases.append(summary(f"4x saturation ({rate:.0f} requests/s, open loop)", report))
        after = footprint(cluster, scratch)
    finally:
        cluster.stop()
    leftover = footprint_tmp(scratch)
    return {
        "max_in_flight": in_flight,
        "phases": phases,
        "before": before,
        "after": after,
        "copies_after_stop": leftover,
    }


def footprint_tmp(scratch: Path) -> int:
    """Shard-copy folders left once every replica has stopped."""
    copies = scratch / "nfcorpus-shard-copies"
    return len(list(copies.iterdir())) if copies.exists() else 0


def write_markdown(result: dict[str, Any], path: Path) -> None:
    """The figures as the table in ``docs/reliability.md`` (between the generated markers)."""
    rows = [
        "| phase | requests | failed | req/s | p50 ms | p99 ms | max ms | slowest failure ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for p in result["phases"]:
        rows.append(
            f"| {p['phase']} | {p['requests']} | {p['failed']} | {p['throughput_rps']} | "
            f"{p['p50_ms']} | {p['p99_ms']} | {p['max_ms']} | {p['failure_max_ms']} |"
        )
    before, after = result["before"], result["after"]
    rows += [
        "",
        f"RSS before / after (MB): {before['rss_mb']} / {after['rss_mb']}; shard copies in the "
        f"temporary folder: {before['tmp_copies_mb']} MB in {before['tmp_copy_folders']} folders "
        f"before, {after['tmp_copies_mb']} MB in {after['tmp_copy_folders']} after; "
        f"{result['copies_after_stop']} left once every replica stopped.",
        "",
        "Failures by reason: "
        + "; ".join(f"{p['phase']}: {p['failures_by_reason'] or 'none'}" for p in result["phases"]),
    ]
    text = path.read_text() if path.exists() else "<!-- figures -->\n<!-- /figures -->\n"
    head, _, rest = text.partition("<!-- figures -->")
    _, _, tail = rest.partition("<!-- /figures -->")
    stamp = f"Measured {time.strftime('%Y-%m-%d %H:%M')} by `make reliability`.\n\n"
    path.write_text(
        f"{head}<!-- figures -->\n{stamp}" + "\n".join(rows) + f"\n<!-- /figures -->{tail}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "reliability.json")
    parser.add_argument("--doc", type=Path, default=REPO / "docs" / "reliability.md")
    parser.add_argument("--quick", action="store_true", help="short phases (a smoke run)")
    parser.add_argument(
        "--max-in-flight", default="16,32", help="SERVER_MAX_IN_FLIGHT of purple,MCP replicas"
    )
    args = parser.parse_args()
    purple, mcp = args.max_in_flight.split(",")
    with tempfile.TemporaryDirectory(prefix="reliability-") as tmp:
        result = run(Path(tmp), {"purple": purple, "mcp": mcp}, args.quick)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    write_markdown(result, args.doc)
    print(json.dumps(result["phases"], indent=2))


if __name__ == "__main__":
    main()
