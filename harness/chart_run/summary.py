"""The run's report: what did not hold, the JSON figures and a Markdown page of them.

``reports/chart-run.json`` holds every figure; ``reports/chart-run.md`` is the page that
docs/deploy.md quotes.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from harness.chart_run.kubelet import Termination
from harness.chart_run.load_test import load_test_problems
from harness.chart_run.release import Rollout


def verdict(report: dict[str, Any], min_ndcg5: float) -> list[str]:
    """Everything the run requires, as the list of what did not hold (empty: passed)."""
    problems = []
    ev, load = report["eval"], report["load"]
    if ev["failed"] or ev["ndcg@5"] < min_ndcg5:
        problems.append(f"eval: {ev['failed']} failed, NDCG@5 {ev['ndcg@5']} (floor {min_ndcg5})")
    if load["errors"] or not load["requests"]:
        problems.append(
            f"load: {load['errors']} of {load['requests']} failed: {load['error_samples']}"
        )
    if report.get("load_test") is not None:
        problems += load_test_problems(report["load_test"])
    stops = [
        (name, t) for r in report["rollouts"] for s in r.steps for name, t in s.terminated.items()
    ]
    for name, t in [*stops, *report["final_termination"].items()]:
        if t.exit_code or t.killed:
            problems.append(f"{name}: exit {t.exit_code}{' after SIGKILL' if t.killed else ''}")
    for pod, volumes in report["scratch_bytes"].items():
        for volume, (written, limit) in volumes.items():
            if limit is not None and written > limit:
                # The kubelet evicts a pod whose emptyDir outgrows its sizeLimit.
                problems.append(f"{pod}: {written} bytes in emptyDir {volume}, over {limit}")
    for service, seen in report["traffic"].items():
        if seen.refused:
            problems.append(
                f"Service {service}: {seen.refused} connections refused: {seen.refusals}"
            )
    return problems


def plain(value: Any) -> Any:
    """Dataclasses as plain JSON values, floats to 4 places."""
    if hasattr(value, "__dataclass_fields__"):
        return plain(asdict(value))
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, float):
        return round(value, 4)
    return value


def write(report: dict[str, Any], path: Path) -> None:
    """The report as JSON at ``path`` and as Markdown beside it (``.md``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(plain(report), indent=2) + "\n")
    path.with_suffix(".md").write_text(markdown(report))


def _stop(t: Termination) -> str:
    killed = ", SIGKILL" if t.killed else ""
    return f"preStop {t.pre_stop_s:.1f} s, SIGTERM to exit {t.sigterm_to_exit_s:.1f} s, exit {t.exit_code}{killed}"


def _rollout(r: Rollout) -> list[str]:
    lines = []
    for n, step in enumerate(r.steps, 1):
        started = ", ".join(f"{name} Ready in {s:.1f} s" for name, s in step.started.items())
        stopped = "; ".join(f"{name}: {_stop(t)}" for name, t in step.terminated.items())
        lines.append(f"| {r.deployment} | {n} | {started} | {stopped} |")
    return lines


def _load_test_lines(figures: dict[str, Any] | None) -> list[str]:
    if figures is None:
        return []
    run = figures["report"]
    if run is None:
        return [
            f"| load test, Job {figures['job']} | no report: {figures['failure'] or figures.get('collector')} |"
        ]
    pace = (
        f"{run['target_rate']:g}/s open loop"
        if run["target_rate"]
        else f"{run['concurrency']} in flight"
    )
    each = ", ".join(
        f"worker {w['worker']}: {w['requests']} requests"
        + (f", {w['cpu_ms_per_request']:.1f} ms CPU each" if w["cpu_ms_per_request"] else "")
        for w in run["workers"]
    )
    bound = (
        "; generator-bound: " + "; ".join(run["generator_bound"]) if run["generator_bound"] else ""
    )
    budgets = ", ".join(
        f"{t['budget']} {'met' if t['passed'] else 'BREACHED'}" for t in run["thresholds"]
    )
    lines = [
        f"| load test: Job {figures['job']}, {figures['workers']} generator pods, {pace}, one report from the collector | "
        f"{run['requests']} requests, {run['errors']} failed, {run['throughput_rps']:.1f} answers/s, "
        f"p50 {run['p50_s'] * 1000:.0f} ms, p99 {run['p99_s'] * 1000:.0f} ms ({each}){bound}"
        f"{'; budgets: ' + budgets if budgets else ''} |"
    ]
    breach = figures.get("breach")
    if breach is not None:
        codes = ", ".join(f"exit {c}" for c in breach["failed_pods"].values()) or "none failed"
        job = "completed" if breach["complete"] else f"failed: {breach['failure']}"
        lines.append(
            f"| the load test again, upgraded with the budget {breach['budget']} "
            f"(no release meets it) | the Job {job}; its pods: {codes}, naming the budget in "
            f"{len(breach['named_in'])} logs |"
        )
    return lines


def markdown(report: dict[str, Any]) -> str:
    """A page of the report: what ran, what it answered, how the rollouts went."""
    ev, load = report["eval"], report["load"]
    ready = report["ready_s"]
    lines = [
        f"# make chart-run: {report['values']} on {report['image']}",
        "",
        f"{report['seconds']:.0f} s in all; {'passed' if not report['problems'] else 'FAILED: ' + '; '.join(report['problems'])}.",
        "",
        "| step | result |",
        "| --- | --- |",
        f"| pods started as rendered | {len(ready)} pods Ready in {min(ready.values()):.1f} to {max(ready.values()):.1f} s ({', '.join(f'{k} x{v}' for k, v in report['deployments'].items())}) |",
        f"| helm test pod | exit {report['helm_test']['exit_code']}: {' '.join(report['helm_test']['output'][-2:])} |",
        f"| green agent, A2A 0.3, {ev['queries']} test queries through {ev['agent']} | {ev['failed']} failed, NDCG@5 {ev['ndcg@5']:.4f}, NDCG@10 {ev['ndcg@10']:.4f} |",
        f"| load during both rolling restarts (green agent, 0.3) | {load['requests']} requests, {load['errors']} failed, {load['throughput_rps']:.1f} answers/s, p50 {load['p50_s'] * 1000:.0f} ms, p95 {load['p95_s'] * 1000:.0f} ms |",
        *_load_test_lines(report.get("load_test")),
        "",
        "| Deployment | step | new pod | old pod |",
        "| --- | ---: | --- | --- |",
    ]
    for rollout in report["rollouts"]:
        lines += _rollout(rollout)
    lines += [
        "",
        "| Service | connections per pod | refused while serving |",
        "| --- | --- | ---: |",
    ]
    for name, seen in report["traffic"].items():
        per_pod = ", ".join(
            f"{pod.removeprefix(name + '-')}: {n}" for pod, n in seen.connections.items()
        )
        lines.append(f"| {name} | {per_pod} | {seen.refused} |")
    not_run = ", ".join(f"{kind} x{n}" for kind, n in sorted(report["not_run"].items()))
    lines += ["", f"Rendered but not started: {not_run} (see docs/deploy.md).", ""]
    return "\n".join(lines)
