"""A release's workloads running under podman: its Services, its Deployments' pods, rollouts, Jobs.

One podman network of the run's own holds everything; a Service is reachable there by each of
its names (``services.py``), a pod by its name. Deployments scale and roll as the Deployment
controller does: a rollout starts at most ``maxSurge`` new pods above the replica count, waits
until they are Ready, and only then terminates old ones (at most ``maxUnavailable`` below it).
A Job runs as the Job controller runs it: ``parallelism`` pods at a time until ``completions``
succeeded (each index once, when Indexed), a failed pod replaced until ``backoffLimit`` failures,
every pod deleted (terminated with its grace) when ``activeDeadlineSeconds`` passes.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
import time
from dataclasses import dataclass, replace
from pathlib import Path

from harness.chart_run.engine import Engine, EngineError, Placement, memory_bytes, run_args
from harness.chart_run.kubelet import Kubelet, Pod, PodError, Termination
from harness.chart_run.services import ServiceProxy, Traffic, read_traffic, start_proxy
from harness.chart_run.spec import Deployment, Job, PodSpec, Release

#: The annotation in which the Job controller gives an Indexed Job's pod its index.
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


@dataclass
class Step:
    """One step of a rollout: the pods it started and the ones it terminated."""

    started: dict[str, float]
    terminated: dict[str, Termination]


@dataclass
class Rollout:
    """A rolling restart of one Deployment, with its figures."""

    deployment: str
    seconds: float
    steps: list[Step]


@dataclass
class JobRun:
    """How one Job ran: which indexes succeeded, which pods failed, and whether it completed."""

    job: str
    seconds: float
    succeeded: list[int]
    failed_pods: dict[str, int]
    failure: str | None
    logs: dict[str, str]

    @property
    def complete(self) -> bool:
        """Every completion succeeded (the Job's Complete condition)."""
        return self.failure is None


class Cluster:
    """The run's network, Service proxies and pods; ``close`` removes every one of them."""

    def __init__(self, engine: Engine, release: Release, image: str, root: Path) -> None:
        self.engine = engine
        self.release = release
        self.image = image
        self.root = root
        self.run_id = f"chart-run-{secrets.token_hex(3)}"
        self.labels = {"io.nfcorpus.chart-run": self.run_id}
        self.network = self.run_id
        self.kubelet = Kubelet(
            engine, root, self.network, release.namespace, self.labels, self.publish
        )
        self.proxies: list[ServiceProxy] = []
        self.pods: dict[str, list[Pod]] = {d.name: [] for d in release.deployments}
        self.retired: list[Pod] = []
        self.serving_since: float | None = None
        self._names = itertools.count()

    async def open(self) -> None:
        """The network and one proxy per Service (no endpoints until pods are Ready)."""
        label_flags = [a for k, v in self.labels.items() for a in ("--label", f"{k}={v}")]
        await self.engine("network", "create", *label_flags, self.network)
        for service in self.release.services:
            proxy = await start_proxy(
                self.engine, service, self.image, self.network, self.root, self.labels
            )
            self.proxies.append(proxy)

    def publish(self) -> None:
        """Every Service's endpoints, from the pods' readiness now."""
        live = [p for pods in self.pods.values() for p in pods]
        for proxy in self.proxies:
            proxy.publish(live)

    def _pod_name(self, deployment: Deployment) -> str:
        return f"{deployment.name}-{next(self._names):04d}{secrets.token_hex(2)}"

    async def scale_up(self, deployment: Deployment, count: int) -> list[Pod]:
        """Start ``count`` pods of ``deployment`` and wait until they are Ready."""
        spec = deployment.template
        pods = [await self.kubelet.start(spec, self._pod_name(deployment)) for _ in range(count)]
        self.pods[deployment.name].extend(pods)
        await self.kubelet.wait_ready(pods, deployment.progress_deadline_s)
        return pods

    async def start_all(self) -> dict[str, float]:
        """Every Deployment at its replica count, all at once; seconds each pod took to Ready."""
        await asyncio.gather(*(self.scale_up(d, d.replicas) for d in self.release.deployments))
        self.serving_since = time.time()
        return {p.name: p.ready_after_s or 0.0 for pods in self.pods.values() for p in pods}

    async def terminate(self, deployment: str, pod: Pod) -> Termination:
        """Terminate one pod of ``deployment`` (it leaves the endpoints first)."""
        ended = await self.kubelet.stop(pod)
        self.pods[deployment].remove(pod)
        self.retired.append(pod)
        return ended

    async def rollout(self, deployment: Deployment) -> Rollout:
        """A rolling restart (``kubectl rollout restart``): every pod replaced by a new one."""
        began = time.monotonic()
        old = list(self.pods[deployment.name])
        steps = []
        while old:
            surge = min(deployment.max_surge, len(old))
            new = await self.scale_up(deployment, surge) if surge else []
            take = min(len(old), surge + deployment.max_unavailable)
            victims, old = old[:take], old[take:]
            ended = await asyncio.gather(*(self.terminate(deployment.name, v) for v in victims))
            # Pods the unavailability budget let go before their replacements: replaced now.
            late = await self.scale_up(deployment, take - surge) if take > surge else []
            started = {p.name: p.ready_after_s or 0.0 for p in [*new, *late]}
            steps.append(Step(started, dict(zip((v.name for v in victims), ended, strict=True))))
            self.check()
        return Rollout(deployment.name, time.monotonic() - began, steps)

    async def stop_all(self) -> dict[str, Termination]:
        """Terminate every pod at once, as ``helm uninstall`` leaves them; how each stopped."""
        last = [(d, p) for d, pods in self.pods.items() for p in pods]
        ended = await asyncio.gather(*(self.terminate(d, p) for d, p in last))
        return {p.name: t for (_, p), t in zip(last, ended, strict=True)}

    def check(self) -> None:
        """Raise if a probe gave up on a pod since the last check."""
        for pod in (p for pods in self.pods.values() for p in pods):
            if pod.failure:
                raise PodError(pod, pod.failure, "(see podman logs " + pod.container + ")")

    async def run_pod(self, spec: PodSpec, timeout_s: float) -> tuple[int, str]:
        """A run-to-completion pod (the helm test pod): its exit status and its output."""
        pod = await self.kubelet.start(spec, spec.name, probe=False)
        try:
            await self.engine("wait", pod.container, timeout_s=timeout_s)
            return await self.engine.exit_code(pod.container), await self.engine.logs(
                pod.container, 200
            )
        finally:
            await self.kubelet.remove(pod)

    async def run_job(self, job: Job) -> JobRun:
        """Run ``job`` to its end, as the Job controller does; the last lines of each pod."""
        began = time.monotonic()
        deadline = began + job.active_deadline_s if job.active_deadline_s else None
        pending, succeeded = list(range(job.completions)), []
        failed: dict[str, int] = {}
        logs: dict[str, str] = {}
        running: dict[asyncio.Task[int], tuple[int, Pod]] = {}
        started: list[Pod] = []
        failure = None
        try:
            while pending or running:
                while pending and len(running) < job.parallelism:
                    index = pending.pop(0)
                    pod = await self._job_pod(job, index)
                    started.append(pod)
                    wait = asyncio.create_task(self._exit_code(pod))
                    running[wait] = (index, pod)
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                done, _ = await asyncio.wait(running, timeout=left, return_when="FIRST_COMPLETED")
                if not done:
                    failure = f"DeadlineExceeded: not complete after {job.active_deadline_s:g} s"
                    break
                for task in done:
                    index, pod = running.pop(task)
                    logs[pod.name] = await self.engine.logs(pod.container, 20)
                    if task.result() == 0:
                        succeeded.append(index)
                        continue
                    failed[pod.name] = task.result()
                    if len(failed) > job.backoff_limit:
                        failure = f"BackoffLimitExceeded: {len(failed)} failed pods"
                    else:
                        pending.append(index)  # a new pod for the same index
                if failure:
                    break
        finally:
            # A Job that ends (failed, or its deadline passed) deletes the pods it still runs.
            for task, (_, pod) in running.items():
                task.cancel()
                await self.kubelet.stop(pod)
                logs[pod.name] = await self.engine.logs(pod.container, 20)
            for pod in started:
                await self.kubelet.remove(pod)
        return JobRun(job.name, time.monotonic() - began, sorted(succeeded), failed, failure, logs)

    async def _job_pod(self, job: Job, index: int) -> Pod:
        name = f"{job.name}-{index}-{secrets.token_hex(3)}"
        annotations = {COMPLETION_INDEX: str(index)} if job.indexed else {}
        return await self.kubelet.start(job.template, name, probe=False, annotations=annotations)

    async def _exit_code(self, pod: Pod) -> int:
        await self.engine("wait", pod.container, timeout_s=24 * 3600)
        return await self.engine.exit_code(pod.container)

    async def client(
        self, name: str, args: list[str], like: PodSpec, out: Path, detach: bool = False
    ) -> str:
        """A green agent container (not part of the chart), run as the chart's test pod is.

        It has the test pod's user, volumes and token file, a tmpfs ``/tmp``, and ``out``
        mounted at ``/out`` for its report. Returns the container's name.
        """
        container = f"{self.network}-{name}"
        _writable(out)
        env = dict(like.env)
        token_file = env.get("A2A_TOKEN_FILE")
        extra = {"GREEN_AGENT_TOKEN_FILE": token_file} if isinstance(token_file, str) else {}
        spec = _client_spec(like, args, extra)
        where = Placement(
            pod=name,
            namespace=self.release.namespace,
            container=container,
            network=self.network,
            volume_dirs=self.kubelet.make_volumes(spec, name),
            labels=self.labels,
        )
        flags = run_args(spec, where)
        # Our harness, not the chart's: a scratch /tmp and the report folder.
        flags[1:1] = ["--tmpfs", "/tmp:size=64m", "--volume", f"{out}:/out:rw"]
        await self.engine(*flags)
        if not detach:
            await self.engine("wait", container, timeout_s=3600)
            status = await self.engine.exit_code(container)
            if status:
                log = await self.engine.logs(container, 60)
                raise EngineError(f"{name} exited with {status}:\n{log}")
        return container

    async def traffic(self, until: float) -> dict[str, Traffic]:
        """What each Service's proxy did, with refusals counted from every pod Ready to ``until``."""
        window = (self.serving_since or until, until)
        return {p.service.name: await read_traffic(self.engine, p, window) for p in self.proxies}

    def scratch(self) -> dict[str, dict[str, tuple[int, int | None]]]:
        """Bytes written to each emptyDir of the running pods, and its sizeLimit in bytes.

        Allocated blocks, as the kubelet's eviction counts them: a sparse file counts what it holds.
        """
        use = {}
        for pod in (p for pods in self.pods.values() for p in pods):
            use[pod.name] = {
                v.name: (
                    sum(f.lstat().st_blocks * 512 for f in pod.volume_dirs[v.name].rglob("*")),
                    memory_bytes(v.size_limit) if v.size_limit else None,
                )
                for v in pod.spec.volumes
                if v.files is None
            }
        return use

    async def close(self) -> None:
        """Stop and remove every container of the run, then its network and folders."""
        listed = await self.engine(
            "ps", "--all", "--quiet", "--filter", f"label=io.nfcorpus.chart-run={self.run_id}",
            check=False,
        )  # fmt: skip
        ids = listed.split()
        if ids:
            await self.engine("rm", "--force", "--time", "0", *ids, check=False)
        await self.engine("network", "rm", "--force", self.network, check=False)
        await self.kubelet.aclose()


def _writable(folder: Path) -> None:
    """A folder any container user may write its report into."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o777)


def _client_spec(like: PodSpec, args: list[str], env: dict[str, str]) -> PodSpec:
    return replace(
        like,
        name="client",
        command=("python", "-m", "services.green_agent"),
        args=tuple(args),
        env=(*like.env, *env.items()),
        cpu_limit=None,
        memory_limit=None,
    )
