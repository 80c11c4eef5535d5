"""The chart's in-cluster load test (``loadTest``) as ``make chart-run`` runs it, and its checks.

The load-generator Job runs as the Job controller runs it (one pod per worker index), each pod
hands its report to the load collector, and the collector's merged report must be the sum of its
workers': requests and answers add up, the merged latency histogram counts every answer, and
nothing failed.
"""

from __future__ import annotations

from typing import Any

import httpx

from harness.chart_run.release import Cluster
from harness.chart_run.spec import PodSpec
from services.green_agent.load.report import LoadReport

GENERATOR, COLLECTOR = "load-generator", "load-collector"


def _component(pod: PodSpec) -> str | None:
    return pod.labels.get("app.kubernetes.io/component")


async def run_load_test(cluster: Cluster) -> dict[str, Any] | None:
    """Run the render's load-generator Job; its figures and the collector's report (None: none)."""
    release = cluster.release
    jobs = [j for j in release.jobs if _component(j.template) == GENERATOR]
    if not jobs:
        return None
    (job,) = jobs
    (collector,) = [d for d in release.deployments if _component(d.template) == COLLECTOR]
    print(f"chart-run: load test: Job {job.name}, {job.completions} generator pods")
    ran = await cluster.run_job(job)
    figures: dict[str, Any] = {
        "job": job.name,
        "workers": job.completions,
        "seconds": ran.seconds,
        "complete": ran.complete,
        "failure": ran.failure,
        "failed_pods": ran.failed_pods,
        "report": None,
    }
    if ran.failure or ran.failed_pods:
        figures["logs"] = ran.logs
    (pod,) = cluster.pods[collector.name]
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await http.get(f"http://{pod.ip}:{pod.spec.ports['http']}/report")
    if answer.status_code != 200:
        figures["collector"] = f"HTTP {answer.status_code}: {answer.text[:300]}"
        return figures
    figures["report"] = report_figures(LoadReport.model_validate_json(answer.content))
    return figures


#: What the checks and the page read of the merged report, and of each worker's figures.
REPORT_FIELDS = {
    "run", "mode", "target_rate", "concurrency", "requests", "ok", "errors", "errors_by_reason",
    "error_samples", "throughput_rps", "generator_bound", "complete", "waiting_for",
}  # fmt: skip
WORKER_FIELDS = {
    "worker", "requests", "ok", "errors", "asked_rate", "started_rate", "cpu_ms_per_request",
    "core_share",
}  # fmt: skip


def report_figures(merged: LoadReport) -> dict[str, Any]:
    """What the checks and the page need of the merged report."""
    return {
        **merged.model_dump(include=REPORT_FIELDS),
        "answers_in_histogram": merged.latencies.count,
        "failures_in_histogram": merged.error_latencies.count,
        "p50_s": merged.latency.p50_s,
        "p99_s": merged.latency.p99_s,
        "workers": [w.model_dump(include=WORKER_FIELDS) for w in merged.workers],
    }


def load_test_problems(figures: dict[str, Any]) -> list[str]:
    """What did not hold of a load test's figures (empty: it passed)."""
    if not figures["complete"] or figures["failed_pods"]:
        return [
            f"load test: Job {figures['job']}: {figures['failure']}, failed {figures['failed_pods']}"
        ]
    report = figures["report"]
    if report is None:
        return [f"load test: the collector has no report: {figures.get('collector')}"]
    problems = []
    if not report["complete"]:  # the collector serves a partial merge while it waits
        problems.append(f"load test: the collector still waits for {report['waiting_for']}")
    workers = report["workers"]
    if sorted(w["worker"] for w in workers) != list(range(figures["workers"])):
        listed = [w["worker"] for w in workers]
        problems.append(
            f"load test: the report has workers {listed}, not 0..{figures['workers'] - 1}"
        )
    for key in ("requests", "ok", "errors"):
        if report[key] != sum(w[key] for w in workers):
            each = [w[key] for w in workers]
            problems.append(f"load test: {key} {report[key]} is not the workers' sum {each}")
    if report["answers_in_histogram"] != report["ok"]:
        problems.append(
            f"load test: the latency histogram counts {report['answers_in_histogram']} answers"
            f" of {report['ok']}"
        )
    if report["failures_in_histogram"] != report["errors"]:
        problems.append(
            f"load test: the failures' histogram counts {report['failures_in_histogram']}"
            f" of {report['errors']}"
        )
    if report["errors"] or not report["ok"]:
        problems.append(
            f"load test: {report['errors']} of {report['requests']} failed: {report['error_samples']}"
        )
    return problems
