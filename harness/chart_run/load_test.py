"""The chart's in-cluster load test (``loadTest``) as ``make chart-run`` runs it, and its checks.

The load-generator Job runs as the Job controller runs it (one pod per worker index), each pod
hands its report to the load collector, and the collector's merged report must be the sum of its
workers': requests and answers add up, the merged latency histogram counts every answer, nothing
failed, and every budget of the scenario (``loadTest.thresholds``) was judged and met.

Then the budgets' other half: the same Job as an upgrade that sets a budget no release meets
(:data:`BREACH_VALUES`, rendered by the chart; the upgrade also replaces the collector, whose new
pod holds no report) must fail: every generator pod that ends by itself exits
:data:`~services.green_agent.load.thresholds.EXIT_BREACHED` naming the budget, the Job fails,
and the collector's report marks the budget breached.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import httpx

from harness.chart_run.release import Cluster
from harness.chart_run.spec import Deployment, Job, PodSpec, Release
from services.green_agent.load.report import LoadReport
from services.green_agent.load.thresholds import EXIT_BREACHED, parse_budgets

GENERATOR, COLLECTOR = "load-generator", "load-collector"
#: A budget no release meets (the median answer within a microsecond), and the values of the
#: upgrade that sets it, with a few seconds of load: what is under test is the verdict, not load.
BREACH_BUDGET = "p50<1us"
BREACH_VALUES = (
    "--set-json",
    f'loadTest.thresholds=["{BREACH_BUDGET}"]',
    "--set",
    "loadTest.durationSeconds=3",
)


def _component(pod: PodSpec) -> str | None:
    return pod.labels.get("app.kubernetes.io/component")


def generator_job(release: Release) -> Job | None:
    """The render's load-generator Job (None: the load test is off)."""
    jobs = [j for j in release.jobs if _component(j.template) == GENERATOR]
    return jobs[0] if jobs else None


def _budgets(job: Job) -> list[str]:
    """The budgets the chart rendered into the generators' arguments."""
    args = job.template.args
    return [args[i + 1] for i, arg in enumerate(args) if arg == "--threshold"]


async def _collector_report(cluster: Cluster, collector: Deployment) -> LoadReport | str:
    """The collector's report, or what it answered instead."""
    (pod,) = cluster.pods[collector.name]
    port = pod.spec.ports["http"]
    # Read as a person reads it, through `kubectl port-forward`, whose requests name
    # localhost:<local port>: the collector answers only the names it is reached by (its
    # Service's, loopback), never a pod IP.
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await http.get(
            f"http://{pod.ip}:{port}/report", headers={"host": f"localhost:{port}"}
        )
    if answer.status_code != 200:
        return f"HTTP {answer.status_code}: {answer.text[:300]}"
    return LoadReport.model_validate_json(answer.content)


async def run_load_test(
    cluster: Cluster, breach: tuple[str, ...] | None = None
) -> dict[str, Any] | None:
    """Run the render's load-generator Job; its figures and the collector's report (None: none).

    ``breach``: the generators' arguments the chart renders with :data:`BREACH_VALUES`; the Job
    then runs again with them after the load test (:func:`run_breach`).
    """
    release = cluster.release
    job = generator_job(release)
    if job is None:
        return None
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
        "budgets": _budgets(job),
        "report": None,
    }
    if ran.failure or ran.failed_pods:
        figures["logs"] = ran.logs
    report = await _collector_report(cluster, collector)
    if isinstance(report, str):
        figures["collector"] = report
    else:
        figures["report"] = report_figures(report)
    if breach is not None:
        figures["breach"] = await run_breach(cluster, job, collector, breach)
    return figures


async def run_breach(
    cluster: Cluster, job: Job, collector: Deployment, args: tuple[str, ...]
) -> dict[str, Any]:
    """The Job again, as an upgrade that sets a budget no release meets renders it: it must fail.

    The upgrade replaces the collector (a new pod, holding no report) and runs the Job with the
    upgrade's arguments (its pods keep their Secrets: a render here generates other tokens than
    the running release's, which an upgrade takes from the cluster).
    """
    print(f"chart-run: load test with the budget {BREACH_BUDGET}: the Job must fail")
    restart = await cluster.rollout(collector)
    ran = await cluster.run_job(replace(job, template=replace(job.template, args=args)))
    report = await _collector_report(cluster, collector)
    breached = f"budget breached: {BREACH_BUDGET}: "
    return {
        "budget": BREACH_BUDGET,
        "seconds": ran.seconds,
        "complete": ran.complete,
        "failure": ran.failure,
        "failed_pods": ran.failed_pods,
        "named_in": sorted(name for name, log in ran.logs.items() if breached in log),
        "collector_restart": [
            {"exit_code": t.exit_code, "killed": t.killed}
            for step in restart.steps
            for t in step.terminated.values()
        ],
        "collector": report if isinstance(report, str) else None,
        "thresholds": None if isinstance(report, str) else _thresholds(report),
        "logs": ran.logs,
    }


def _thresholds(report: LoadReport) -> list[dict[str, Any]]:
    return [t.model_dump() for t in report.thresholds]


#: What the checks and the page read of the merged report, and of each worker's figures.
REPORT_FIELDS = {
    "run", "loop", "target_rate", "concurrency", "requests", "ok", "errors", "errors_by_reason",
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
        "thresholds": _thresholds(merged),
    }


def load_test_problems(figures: dict[str, Any]) -> list[str]:
    """What did not hold of a load test's figures, and of its breach if it ran (empty: passed)."""
    problems = _run_problems(figures)
    if figures.get("breach") is not None:
        problems += breach_problems(figures["breach"])
    return problems


def _run_problems(figures: dict[str, Any]) -> list[str]:
    if not figures["complete"] or figures["failed_pods"]:
        return [
            f"load test: Job {figures['job']}: {figures['failure']}, failed {figures['failed_pods']}"
        ]
    report = figures["report"]
    if report is None:
        return [f"load test: the collector has no report: {figures.get('collector')}"]
    problems = _budget_problems(figures["budgets"], report["thresholds"])
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


def _budget_problems(asked: list[str], thresholds: list[dict[str, Any]]) -> list[str]:
    """The rendered budgets must all be judged on the merged report, and met."""
    expected = [b.text for b in parse_budgets(asked)]
    judged = [t["budget"] for t in thresholds]
    if judged != expected:
        return [f"load test: the report judged the budgets {judged}, the Job was given {expected}"]
    return [
        f"load test: budget {t['budget']} not met: {t['measured']} (verdict {t['passed']})"
        for t in thresholds
        if t["passed"] is not True
    ]


def breach_problems(breach: dict[str, Any]) -> list[str]:
    """What did not hold of the run whose budget was set to fail (empty: it failed as it must)."""
    what = f"load test with the budget {breach['budget']}"
    problems = []
    if breach["complete"]:
        problems.append(f"{what}: the Job completed; a breached budget must fail it")
    codes = sorted(set(breach["failed_pods"].values()))
    if codes != [EXIT_BREACHED]:
        problems.append(f"{what}: its pods exited {codes}, not {EXIT_BREACHED}")
    unnamed = sorted(set(breach["failed_pods"]) - set(breach["named_in"]))
    if unnamed:
        problems.append(f"{what}: the logs of {unnamed} do not name the breached budget")
    verdicts = [t["passed"] for t in breach["thresholds"] or [] if t["budget"] == breach["budget"]]
    if verdicts != [False]:
        problems.append(
            f"{what}: the collector's report does not mark it breached: "
            f"{breach['thresholds'] if breach['thresholds'] is not None else breach['collector']}"
        )
    for stop in breach["collector_restart"]:
        if stop["exit_code"] or stop["killed"]:
            problems.append(f"{what}: the replaced collector stopped with {stop}")
    return problems
