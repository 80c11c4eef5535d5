"""Faults under load on a local cluster: 2 MCP servers + 2 purple agents behind HAProxy.

``python -m devtools.reliability`` (``make reliability``) drives the cluster with the green
agent's load mode and, during the load: rolling-restarts every replica one at a time, SIGKILLs
one of each tier, SIGSTOPs an MCP server, then loads it at ``OVERLOAD`` times its saturation rate.
It writes ``reports/reliability.json`` and the table of ``docs/reliability.md``. Every number
comes from one run on this machine; ``--quick`` shortens every phase (the CI test runs the same
code).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.local_cluster import LocalCluster
from harness.processes import REPO
from services.green_agent.evaluation.report import percentile

RESTARTS = 20
#: The overload phase's open-loop rate, as a multiple of the rate measured at saturation.
OVERLOAD = 4


def load(cluster: LocalCluster, name: str, seconds: float, pace: list[str]) -> dict[str, Any]:
    """The load's report, with what HAProxy saw of the same requests (``balancer``)."""
    mark = cluster.access_log.stat().st_size
    report = cluster.load(seconds, pace, name)
    report["balancer"] = balancer_view(cluster.answers(mark))
    return report


def under_load(
    cluster: LocalCluster, name: str, seconds: float, pace: list[str], action: Callable[[], None]
) -> dict[str, Any]:
    """Run ``action`` in the background while the cluster is under load; the load's report."""
    started = time.monotonic()
    worker = threading.Thread(target=action, daemon=True)
    worker.start()
    report = load(cluster, name, seconds, pace)
    worker.join()
    report["action_s"] = time.monotonic() - started
    return report


def balancer_view(answers: list[tuple[int, int]]) -> dict[str, Any]:
    """Statuses and latency at the load balancer: the Service's view, free of client lag.

    On this 2-core machine the load generator is itself starved of CPU at overload, and its
    clock then adds seconds the cluster never spent; HAProxy's %Ta does not.
    """
    ok = [ms for status, ms in answers if status == 200]
    refused = [ms for status, ms in answers if status == 503]
    return {
        "statuses": dict(Counter(str(status) for status, _ in answers)),
        "ok_p50_ms": round(percentile(ok, 50)),
        "ok_p99_ms": round(percentile(ok, 99)),
        "ok_max_ms": max(ok, default=0),
        "refused_p50_ms": round(percentile(refused, 50)),
        "refused_p99_ms": round(percentile(refused, 99)),
    }


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
        "balancer": report["balancer"],
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
        before = cluster.footprint()
        capacity = load(cluster, "capacity", seconds / 2, ["--concurrency", "16"])
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
        rate = OVERLOAD * capacity["throughput_rps"]
        overload = ["--rate", f"{rate:.0f}", "--max-in-flight", "2048"]
        report = load(cluster, "overload", seconds, overload)
        phases.append(summary(f"{OVERLOAD}x saturation ({rate:.0f} requests/s, open loop)", report))
        after_load = cluster.footprint()

        def endurance() -> None:
            # Every other one SIGKILLed: its copies are swept by the next start, not by itself.
            for n in range(RESTARTS):
                replica = cluster.mcp[n % len(cluster.mcp)]
                (cluster.kill if n % 2 else cluster.restart)(replica)

        phases.append(
            summary(
                f"{RESTARTS} MCP restarts (half SIGKILL)",
                under_load(cluster, "endurance", seconds * 2, steady, endurance),
            )
        )
        after = cluster.footprint()
    finally:
        cluster.stop()
    leftover = cluster.copy_folders()
    return {
        "max_in_flight": in_flight,
        "phases": phases,
        "before": before,
        "after_load": after_load,
        "after": after,
        "copies_after_stop": leftover,
    }


def write_markdown(result: dict[str, Any], path: Path) -> None:
    """The figures as the table in ``docs/reliability.md`` (between the generated markers)."""
    rows = [
        "Client side (the green agent's load mode):",
        "",
        "| phase | requests | failed | req/s | p50 ms | p99 ms | max ms | slowest failure ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for p in result["phases"]:
        rows.append(
            f"| {p['phase']} | {p['requests']} | {p['failed']} | {p['throughput_rps']} | "
            f"{p['p50_ms']} | {p['p99_ms']} | {p['max_ms']} | {p['failure_max_ms']} |"
        )
    rows += [
        "",
        "At the load balancer (HAProxy's %Ta for the purple agents' backend):",
        "",
        "| phase | statuses | answered p50 ms | p99 ms | max ms | refused p50 ms | p99 ms |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for p in result["phases"]:
        b = p["balancer"]
        rows.append(
            f"| {p['phase']} | {b['statuses']} | {b['ok_p50_ms']} | {b['ok_p99_ms']} | "
            f"{b['ok_max_ms']} | {b['refused_p50_ms']} | {b['refused_p99_ms']} |"
        )
    before, after_load, after = result["before"], result["after_load"], result["after"]
    requests = sum(p["requests"] for p in result["phases"])
    rows += [
        "",
        f"{requests} requests in all. RSS (MB) at the start: {before['rss_mb']}; after the load "
        f"phases: {after_load['rss_mb']}; after {RESTARTS} more restarts: {after['rss_mb']}. "
        f"Shard copies in the temporary folder: {before['tmp_copies_mb']} MB in "
        f"{before['tmp_copy_folders']} folders at the start, {after['tmp_copies_mb']} MB in "
        f"{after['tmp_copy_folders']} after every restart; "
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
