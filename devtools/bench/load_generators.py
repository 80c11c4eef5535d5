"""``make bench-load``: our load generator and Locust's ``FastHttpUser``, in turns, on one agent.

What a generator spends per request caps the load one core of it drives, so ours is measured
against the load tester people reach for first. One MCP server (its result cache on) and our
purple agent run as child processes; each round runs, for A2A 1.0 and 0.3, our generator
(``python -m services.green_agent load``, the lean client, every answer checked against the
contract) and Locust (``services/green_agent/locust/locustfile.py``, the supported locustfile:
the same requests, every answer read by the same function) at the same closed-loop concurrency, the order of the two alternating between rounds. Each run
is a child process whose CPU (user + system, from ``wait4``) is read when it ends; a short and a
long run of each are differenced, so start-up (imports, the data set, the card) cancels out and
what is left is CPU per request. Every answer must pass the contract: a run with a failure stops
the bench.

``python -m devtools.bench.load_generators [--rounds 2] [--out reports/bench_load.json]``;
``docs/observability.md`` has the figures of the last run (``docs/figures.json``, section load).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devtools.bench.a2a_agents import CACHED_ENTRIES, mcp_server, our_agent
from harness.processes import REPO
from services.green_agent.evaluation.client import A2AVersion
from services.green_agent.settings import load_settings

CONCURRENCY = 16
SHORT_S, LONG_S = 3.0, 13.0
TOP_K = 5
PROTOCOLS: tuple[A2AVersion, ...] = ("1.0", "0.3")
GENERATORS = ("ours", "locust")
LOCUSTFILE = "services/green_agent/locust/locustfile.py"
#: The servers log warnings only: a line per request would bury the bench's own output.
QUIET = {"LOG_LEVEL": "WARNING"}


@dataclass(frozen=True)
class Run:
    """One generator process: the queries it asked and the CPU it spent, start-up included."""

    requests: int
    cpu_s: float
    #: Ours only: the CPU its report counts over the run itself, per request.
    in_run_cpu_ms: float | None = None


def _waited(argv: list[str], env: dict[str, str], out: Path) -> float:
    """Run ``argv`` to its end (its output to ``out``); its CPU in seconds, children included."""
    with out.open("wb") as sink:
        process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        tail = out.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"{argv[2:4]} exited with {process.returncode}: {tail}")
    return usage.ru_utime + usage.ru_stime


def _ours(agent: str, protocol: A2AVersion, seconds: float, data_dir: Path, tmp: Path) -> Run:
    report = tmp / "ours.json"
    argv = [sys.executable, "-m", "services.green_agent", "load", "--agent", agent]
    argv += ["--protocol", protocol, "--concurrency", str(CONCURRENCY), "--duration", str(seconds)]
    argv += ["--top-k", str(TOP_K), "--queries", "test", "--data-dir", str(data_dir)]
    argv += ["--out", str(report)]
    cpu_s = _waited(argv, _env(), tmp / "ours.log")
    figures = json.loads(report.read_text())
    if figures["errors"] or figures["dropped"]:
        raise RuntimeError(f"our generator saw failures: {figures['errors_by_reason']}")
    per_request = figures["workers"][0]["cpu_ms_per_request"]
    return Run(figures["requests"], cpu_s, per_request)


def _locust(agent: str, protocol: A2AVersion, seconds: float, data_dir: Path, tmp: Path) -> Run:
    argv = [sys.executable, "-m", "locust", "-f", str(REPO / LOCUSTFILE)]
    argv += ["--headless", "-u", str(CONCURRENCY), "-r", str(CONCURRENCY), "-t", f"{seconds:g}s"]
    argv += ["--host", agent, "--only-summary", "--json-file", str(tmp / "locust")]
    argv += ["--loglevel", "WARNING", "--stop-timeout", "5"]
    argv += ["--protocol", protocol, "--top-k", str(TOP_K), "--queries", "test"]
    argv += ["--data-dir", str(data_dir)]
    cpu_s = _waited(argv, _env(), tmp / "locust.log")
    stats = json.loads((tmp / "locust.json").read_text())
    queries = next(s for s in stats if s["name"] == "query")
    failures = sum(s["num_failures"] for s in stats)
    if failures:
        raise RuntimeError(f"Locust saw {failures} failures: see {tmp / 'locust.log'}")
    return Run(queries["num_requests"], cpu_s)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": "1"}


RUNNERS = {"ours": _ours, "locust": _locust}


def cpu_ms_per_request(short: Run, long: Run) -> float:
    """The CPU of the requests the long run asked beyond the short one, per request."""
    extra = long.requests - short.requests
    if extra <= 0:
        raise RuntimeError(f"the long run asked {long.requests}, the short one {short.requests}")
    return (long.cpu_s - short.cpu_s) / extra * 1000


def measure(rounds: int, data_dir: Path) -> dict[str, Any]:
    """``rounds`` rounds of both generators on both protocols against one agent."""
    per: dict[str, dict[str, list[float]]] = {p: {g: [] for g in GENERATORS} for p in PROTOCOLS}
    in_run: dict[str, list[float]] = {p: [] for p in PROTOCOLS}
    rates: dict[str, dict[str, list[float]]] = {p: {g: [] for g in GENERATORS} for p in PROTOCOLS}
    with (
        mcp_server(CACHED_ENTRIES, env=QUIET) as mcp,
        our_agent(mcp.base_url + "/mcp", env=QUIET) as agent,
        tempfile.TemporaryDirectory() as folder,
    ):
        tmp = Path(folder)
        # One warm pass: every test query is then a result-cache hit, so the agent answers
        # fast and the generators, not the search, set the pace.
        _ours(agent.base_url, "1.0", SHORT_S, data_dir, tmp)
        for round_ in range(rounds):
            order = GENERATORS if round_ % 2 == 0 else GENERATORS[::-1]
            for protocol in PROTOCOLS:
                for generator in order:
                    run = RUNNERS[generator]
                    short = run(agent.base_url, protocol, SHORT_S, data_dir, tmp)
                    long = run(agent.base_url, protocol, LONG_S, data_dir, tmp)
                    ms = cpu_ms_per_request(short, long)
                    per[protocol][generator].append(ms)
                    rates[protocol][generator].append(long.requests / LONG_S)
                    if long.in_run_cpu_ms is not None:
                        in_run[protocol].append(long.in_run_cpu_ms)
                    print(
                        f"round {round_ + 1} A2A {protocol} {generator}: {ms:.3f} ms CPU/request, "
                        f"{long.requests / LONG_S:.0f} requests/s",
                        flush=True,
                    )
    return summary(per, in_run, rates, rounds)


def summary(
    per: dict[str, dict[str, list[float]]],
    in_run: dict[str, list[float]],
    rates: dict[str, dict[str, list[float]]],
    rounds: int,
) -> dict[str, Any]:
    """Medians over the rounds and the ratio ours/Locust per protocol (median of the rounds')."""
    out: dict[str, Any] = {"rounds": rounds, "concurrency": CONCURRENCY, "top_k": TOP_K}
    out["durations_s"] = [SHORT_S, LONG_S]
    for protocol in PROTOCOLS:
        ours, locust = per[protocol]["ours"], per[protocol]["locust"]
        out[protocol] = {
            "ours_cpu_ms": statistics.median(ours),
            "locust_cpu_ms": statistics.median(locust),
            "ours_over_locust": statistics.median(
                o / lo for o, lo in zip(ours, locust, strict=True)
            ),
            "ours_in_run_cpu_ms": statistics.median(in_run[protocol]),
            "ours_rps": statistics.median(rates[protocol]["ours"]),
            "locust_rps": statistics.median(rates[protocol]["locust"]),
            "rounds_ms": {"ours": ours, "locust": locust},
        }
    return out


def main() -> None:
    """Run the bench and write its JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("reports/bench_load.json"))
    args = parser.parse_args()
    report = measure(args.rounds, load_settings().data_dir)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    for protocol in PROTOCOLS:
        r = report[protocol]
        print(
            f"A2A {protocol}: ours {r['ours_cpu_ms']:.3f} ms, Locust {r['locust_cpu_ms']:.3f} ms "
            f"CPU per request: {r['ours_over_locust']:.2f}x"
        )
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
