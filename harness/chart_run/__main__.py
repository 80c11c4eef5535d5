"""``make chart-run``: the chart's pods started as rendered, under podman, on the real image.

1. ``helm template`` of one scenario (default ``ci/embedded-values.yaml``), the image under test
   named in it; every reference resolved, anything the runner cannot honour refused by name.
2. One proxy per Service (its names as network aliases), every Deployment at its replica count
   (the HPA's minReplicas when it has one), all at once; a pod counts once its probes say Ready.
3. The chart's helm test pod, as rendered.
4. The green agent, all 323 test queries over A2A 0.3 through the purple agent's Service name:
   no failure, NDCG@5 at least ``--min-ndcg5``.
5. Under the green agent's load through the same name, a rolling restart of each Deployment
   (new pod Ready, then the old one leaves the endpoints, runs its preStop, gets SIGTERM):
   0 failed requests, every old pod drained within its grace period (exit 0, never killed).
6. The chart's load test (``loadTest``, on in the scenario): its Indexed Job's generator pods,
   run as the Job controller runs them (in a cluster the Job starts with the release; here after
   the rollouts, so that it measures a settled release), each handing its report to the
   collector; the merged report must be its workers' sum, with no failed request and every budget
   met. Then the Job again with a budget set to fail: the Job must fail, and name it.
7. Every pod terminated the same way; the figures in ``--out`` (reports/chart-run.json) and
   as a page beside it (reports/chart-run.md).

    python -m harness.chart_run --image NAME:TAG [--values FILE] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from harness.chart_run.engine import Engine
from harness.chart_run.kubelet import Pod
from harness.chart_run.load_test import BREACH_VALUES, generator_job, run_load_test
from harness.chart_run.manifests import load_release
from harness.chart_run.release import Cluster, Rollout
from harness.chart_run.spec import Deployment, PodSpec, Release
from harness.chart_run.summary import verdict, write

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "nfcorpus-retrieval"
# Generous bounds for a hung run; never figures the run is judged by.
HELM_TEST_TIMEOUT_S = 300.0
WAIT_S = 300.0
# Answers the purple pods must have given before the rollouts start and after they end: the
# load reaches the old pods first and the new ones last.
LOAD_ANSWERS = 20


def render(helm: Path, values: Path, release: str, namespace: str, image: str, *extra: str) -> str:
    """``helm template`` of ``values``, the image under test named in it (``extra``: flags)."""
    repository, _, tag = image.rpartition(":")
    command = [
        str(helm), "template", release, str(CHART), "--namespace", namespace,
        "--values", str(values), "--set", f"image.repository={repository}",
        "--set-string", f"image.tag={tag}", *extra,
    ]  # fmt: skip
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def service_url(release: Release, component: str) -> str:
    """The in-cluster URL of the API's Service of ``component`` (its fully qualified name).

    The API's: the one whose port targets ``http``, not the metrics port's Service.
    """
    for service in release.services:
        if service.selector.get("app.kubernetes.io/component") == component:
            for port, target in service.ports.items():
                if target == "http":
                    return f"http://{service.names[-1]}:{port}/"
    raise SystemExit(f"chart-run: the render has no Service for {component}")


def scrape_port(spec: PodSpec) -> int:
    """The pod's port the ServiceMonitors scrape: its metrics port (``SERVER_METRICS_PORT``).

    That port serves /metrics alone, and the API port answers /metrics with 404.
    """
    if "metrics" not in spec.ports:
        raise SystemExit(f"chart-run: {spec.name} declares no metrics port to scrape")
    return spec.ports["metrics"]


def scrape_headers(spec: PodSpec) -> dict[str, str]:
    """What a scrape of the pod sends: the scrape token it mounts, as the ServiceMonitor does.

    Nothing when the pod names no ``*_METRICS_TOKEN_FILE`` (authentication off).
    """
    for name, value in spec.env:
        if name.endswith("_METRICS_TOKEN_FILE") and isinstance(value, str):
            token = spec.mounted_file(value)
            if token is None:
                raise SystemExit(f"chart-run: {spec.name} mounts nothing at {name}={value}")
            return {"authorization": f"Bearer {token.decode().strip()}"}
    return {}


async def answered(pods: list[Pod]) -> float:
    """Requests the purple agent pods have completed (their /metrics, as Prometheus scrapes)."""
    total = 0.0
    prefix = 'purple_request_duration_seconds_count{outcome="completed"} '
    async with httpx.AsyncClient(timeout=5) as http:
        for pod in pods:
            url = f"http://{pod.ip}:{scrape_port(pod.spec)}/metrics"
            scrape = await http.get(url, headers=scrape_headers(pod.spec))
            if scrape.status_code == 401:  # a refused scrape fails the run, never counts zero
                raise SystemExit(f"chart-run: {pod.name} refused the scrape: {scrape.text}")
            text = scrape.text
            total += sum(
                float(x.removeprefix(prefix)) for x in text.splitlines() if x.startswith(prefix)
            )
    return total


async def until(condition: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll ``condition``; a clear error after ``WAIT_S``."""
    deadline = time.monotonic() + WAIT_S
    while not await condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"chart-run: no {what} after {WAIT_S:g} s")
        await asyncio.sleep(0.5)


async def evaluate(
    cluster: Cluster, url: str, test_pod: PodSpec, queries: int, out: Path
) -> dict[str, Any]:
    """The green agent's evaluation through ``url``, run as the test pod is."""
    args = ["eval", "--agent", url, "--protocol", "0.3", "--num-queries", str(queries)]
    args += ["--top-k", "10", "--seed", "42", "--concurrency", "4", "--out", "/out/eval.json"]
    await cluster.client("eval", args, test_pod, out)
    evaluation = json.loads((out / "eval.json").read_text())
    return {
        "agent": url,
        "queries": evaluation["num_queries"],
        "failed": evaluation["failed"],
        "ndcg@5": round(evaluation["metrics"]["ndcg@5"], 4),
        "ndcg@10": round(evaluation["metrics"]["ndcg@10"], 4),
    }


async def rollouts_under_load(
    cluster: Cluster, url: str, test_pod: PodSpec, purple: Deployment, concurrency: int, out: Path
) -> tuple[list[Rollout], dict[str, Any]]:
    """A rolling restart of each Deployment while the green agent loads the purple Service."""
    args = ["load", "--agent", url, "--protocol", "0.3", "--concurrency", str(concurrency)]
    args += ["--duration", "3600", "--out", "/out/load.json"]  # until SIGTERM
    load = await cluster.client("load", args, test_pod, out, detach=True)
    old = list(cluster.pods[purple.name])
    await until(lambda: _answered_at_least(old, LOAD_ANSWERS), "answers to the load")
    rollouts = []
    for deployment in cluster.release.deployments:
        print(f"chart-run: rolling restart of {deployment.name} under load")
        rollouts.append(await cluster.rollout(deployment))
    new = list(cluster.pods[purple.name])
    await until(lambda: _answered_at_least(new, LOAD_ANSWERS), "answers from the new pods")
    await cluster.engine("kill", "--signal", "TERM", load)
    await cluster.engine("wait", load, timeout_s=WAIT_S)
    report = json.loads((out / "load.json").read_text())
    kept = ("requests", "ok", "errors", "errors_by_reason", "error_samples", "throughput_rps")
    figures = {k: report[k] for k in kept}
    return rollouts, figures | {
        "p50_s": report["latency"]["p50_s"],
        "p95_s": report["latency"]["p95_s"],
    }


async def _answered_at_least(pods: list[Pod], count: int) -> bool:
    return await answered(pods) >= count


def breach_args(args: argparse.Namespace) -> tuple[str, ...] | None:
    """The generators' arguments, as the chart renders them, with a budget set to fail.

    None: the scenario has no load test.
    """
    rendered = render(
        args.helm, args.values, args.release, args.namespace, args.image, *BREACH_VALUES
    )
    job = generator_job(load_release(rendered, args.namespace))
    return None if job is None else job.template.args


async def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Every step of the run; its report (``problems`` lists what did not hold)."""
    release = load_release(
        render(args.helm, args.values, args.release, args.namespace, args.image), args.namespace
    )
    (test_pod,) = release.test_pods
    purple = next(d for d in release.deployments if d.name.endswith("purple-agent"))
    url = service_url(release, "purple-agent")
    report: dict[str, Any] = {
        "image": args.image,
        "values": str(args.values.relative_to(ROOT)),
        "not_run": release.not_run,
        "deployments": {d.name: d.replicas for d in release.deployments},
        "services": {s.name: list(s.names) for s in release.services},
    }
    engine = Engine()
    if not await engine.image_exists(args.image):
        raise SystemExit(f"chart-run: no image {args.image} here: build it first (make image)")
    cluster = Cluster(engine, release, args.image, work)
    began = time.monotonic()
    try:
        await cluster.open()
        print(f"chart-run: {len(release.services)} Services, starting {report['deployments']}")
        report["ready_s"] = await cluster.start_all()
        print(f"chart-run: every pod Ready {report['ready_s']}")
        status, output = await cluster.run_pod(test_pod, HELM_TEST_TIMEOUT_S)
        report["helm_test"] = {"exit_code": status, "output": output.strip().splitlines()[-3:]}
        print(f"chart-run: helm test pod exited {status}: {output.strip()}")
        if status:
            raise SystemExit("chart-run: FAILED: the helm test pod failed")
        report["eval"] = await evaluate(cluster, url, test_pod, args.queries, work / "out")
        print(f"chart-run: evaluation through {url}: {report['eval']}")
        cluster.check()
        report["rollouts"], report["load"] = await rollouts_under_load(
            cluster, url, test_pod, purple, args.load, work / "out"
        )
        print(f"chart-run: load during the rollouts: {report['load']}")
        report["load_test"] = await run_load_test(cluster, breach_args(args))
        print(f"chart-run: load test: {json.dumps(report['load_test'], default=str)[:2000]}")
        cluster.check()
        report["scratch_bytes"] = cluster.scratch()
        serving_until = time.time()
        report["final_termination"] = await cluster.stop_all()
        report["traffic"] = await cluster.traffic(serving_until)
        report["seconds"] = time.monotonic() - began
        report["problems"] = verdict(report, args.min_ndcg5)
        return report
    finally:
        if not args.keep:
            await cluster.close()


def main() -> int:
    """Parse the command line, run, write the report; the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m harness.chart_run", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--image", required=True, help="the image under test, e.g. nfcorpus-retrieval:0.1.0"
    )
    parser.add_argument("--values", type=Path, default=CHART / "ci" / "embedded-values.yaml")
    parser.add_argument("--helm", type=Path, default=ROOT / ".tools" / "bin" / "helm")
    parser.add_argument("--release", default="nfcorpus-retrieval")
    parser.add_argument("--namespace", default="nfcorpus-retrieval")
    parser.add_argument("--queries", type=int, default=323, help="test queries to evaluate")
    parser.add_argument("--load", type=int, default=4, help="load concurrency during rollouts")
    parser.add_argument(
        "--min-ndcg5",
        type=float,
        required=True,
        help="the quality floor (make chart-run: MIN_NDCG5)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "chart-run.json")
    parser.add_argument("--keep", action="store_true", help="leave the containers for inspection")
    args = parser.parse_args()
    args.values = args.values.resolve()
    with tempfile.TemporaryDirectory(prefix="chart-run-") as work:
        report = asyncio.run(run(args, Path(work)))
    write(report, args.out)
    summary = {k: report[k] for k in ("eval", "load", "seconds", "problems")}
    print(json.dumps(summary, default=str, indent=2))
    if report["problems"]:
        print("chart-run: FAILED: " + "; ".join(report["problems"]), file=sys.stderr)
        return 1
    print(f"chart-run: OK, figures in {args.out} and {args.out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
