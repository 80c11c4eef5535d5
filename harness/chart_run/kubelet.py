"""What a kubelet does for one pod, done with podman: volumes, start, probes, stop.

Probes in the kubelet's order (an HTTP GET on a new connection each time; 2xx and 3xx pass; a
probe changes state after ``successThreshold`` passes or ``failureThreshold`` failures in a row): the startup probe every ``periodSeconds`` until
it passes, then readiness and liveness, each on its own period. A pod is Ready from the first
passing readiness probe until ``failureThreshold`` failures in a row.

A restart is where a healthy chart has a bug (a probe path or port that never answers, a
process that dies), so the runner does not restart: the pod is marked failed with the reason,
and the run stops with the container's last lines.

Stopping follows a pod's termination: it leaves the Services' endpoints at once, its preStop
command runs in the container, then SIGTERM, and SIGKILL if it is still running when
``terminationGracePeriodSeconds`` (counted from the start of the preStop) has passed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from harness.chart_run.engine import Engine, EngineError, Placement, run_args
from harness.chart_run.spec import PodSpec, Probe

USER_AGENT = "kube-probe/1.29"


@dataclass
class ProbeTally:
    """Consecutive results of one probe and the state they give, as the kubelet counts them."""

    probe: Probe
    passing: bool
    successes: int = 0
    failures: int = 0

    def record(self, ok: bool) -> bool:
        """Count one result; True when it changed the state."""
        if ok:
            self.successes, self.failures = self.successes + 1, 0
            if not self.passing and self.successes >= self.probe.success_threshold:
                self.passing = True
                return True
        else:
            self.successes, self.failures = 0, self.failures + 1
            if self.passing and self.failures >= self.probe.failure_threshold:
                self.passing = False
                return True
        return False

    @property
    def exhausted(self) -> bool:
        """As many failures in a row as the probe allows (the kubelet restarts the container)."""
        return self.failures >= self.probe.failure_threshold


async def http_probe(client: httpx.AsyncClient, ip: str, probe: Probe) -> str | None:
    """One probe; None when it passes, else what went wrong."""
    try:
        response = await client.get(
            f"http://{ip}:{probe.port}{probe.path}",
            timeout=probe.timeout_s,
            headers={"User-Agent": USER_AGENT, "Connection": "close"},
        )
    except httpx.HTTPError as e:
        return f"GET {probe.path}: {type(e).__name__} {e}".strip()
    if 200 <= response.status_code < 400:
        return None
    return f"GET {probe.path}: HTTP {response.status_code} {response.text[:200]}"


@dataclass
class Termination:
    """How one pod stopped."""

    pre_stop_s: float
    sigterm_to_exit_s: float
    exit_code: int
    killed: bool


@dataclass
class Pod:
    """One running pod: its container, address and probe state."""

    name: str
    spec: PodSpec
    container: str
    volume_dirs: dict[str, Path]
    created: float = field(default_factory=time.monotonic)
    ip: str = ""
    started_at: float | None = None
    ready_at: float | None = None
    ready: bool = False
    terminating: bool = False
    failure: str | None = None
    probes: asyncio.Task[None] | None = None

    @property
    def ready_after_s(self) -> float | None:
        """Seconds from creation to the first Ready."""
        return None if self.ready_at is None else self.ready_at - self.created


class Kubelet:
    """Runs pods as containers on one network; calls ``on_change`` when a pod's readiness does."""

    def __init__(
        self,
        engine: Engine,
        root: Path,
        network: str,
        namespace: str,
        labels: dict[str, str],
        on_change: Callable[[], None],
    ) -> None:
        self.engine = engine
        self.root = root
        self.network = network
        self.namespace = namespace
        self.labels = labels
        self.on_change = on_change
        self.client = httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0))
        self.failed = asyncio.Event()

    async def start(
        self,
        spec: PodSpec,
        name: str,
        probe: bool = True,
        annotations: dict[str, str] | None = None,
    ) -> Pod:
        """Create the pod's volumes and start its container; probes run in the background.

        ``annotations`` are the ones a controller gives the pod (a Job's completion index).
        """
        pod = Pod(
            name,
            spec,
            container=f"{self.network}-{name}",
            volume_dirs=self.make_volumes(spec, name),
        )
        where = Placement(
            pod=name,
            namespace=self.namespace,
            container=pod.container,
            network=self.network,
            volume_dirs=pod.volume_dirs,
            labels=self.labels,
            annotations=annotations or {},
        )
        await self.engine(*run_args(spec, where))
        pod.ip = await self.engine.ip(pod.container, self.network)
        if probe:
            pod.probes = asyncio.create_task(self._probe(pod), name=f"probes {name}")
        return pod

    def make_volumes(self, spec: PodSpec, pod: str) -> dict[str, Path]:
        """Host folders of the pod's volumes, owned and moded as a kubelet makes them."""
        dirs = {}
        group = spec.security.fs_group
        for volume in spec.volumes:
            path = self.root / "pods" / pod / volume.name
            path.mkdir(parents=True)
            if volume.files is None:
                # An emptyDir is world-writable; with an fsGroup it belongs to that group (setgid).
                path.chmod(0o777)
                if group is not None:
                    os.chown(path, 0, group)
                    path.chmod(0o2777)
            else:
                for relative, data in volume.files.items():
                    target = path / relative
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                    target.chmod(volume.mode)
                    if group is not None:
                        os.chown(target, 0, group)
            dirs[volume.name] = path
        return dirs

    async def _probe(self, pod: Pod) -> None:
        spec = pod.spec
        try:
            if spec.startup is not None:
                await asyncio.sleep(spec.startup.initial_delay_s)
                tally = ProbeTally(spec.startup, passing=False)
                while True:
                    problem = await http_probe(self.client, pod.ip, spec.startup)
                    tally.record(problem is None)
                    if problem is None:
                        break
                    if tally.exhausted or not await self.engine.running(pod.container):
                        raise _PodFailed(f"startup probe failed {tally.failures} times: {problem}")
                    await asyncio.sleep(spec.startup.period_s)
            pod.started_at = time.monotonic()
            loops = [
                self._watch(pod, p, live)
                for p, live in ((spec.readiness, False), (spec.liveness, True))
                if p
            ]
            await asyncio.gather(*loops)
        except _PodFailed as e:
            pod.failure = str(e)
            self._set_ready(pod, False)
            self.failed.set()

    async def _watch(self, pod: Pod, probe: Probe, liveness: bool) -> None:
        if not liveness and pod.spec.startup is None:
            await asyncio.sleep(probe.initial_delay_s)
        tally = ProbeTally(probe, passing=liveness)
        while not pod.terminating:
            problem = await http_probe(self.client, pod.ip, probe)
            if pod.terminating:
                return
            changed = tally.record(problem is None)
            if liveness and tally.exhausted:
                raise _PodFailed(f"liveness probe failed {tally.failures} times: {problem}")
            if not liveness and changed:
                self._set_ready(pod, tally.passing)
            await asyncio.sleep(probe.period_s)

    def _set_ready(self, pod: Pod, ready: bool) -> None:
        if ready and pod.ready_at is None:
            pod.ready_at = time.monotonic()
        if pod.ready != ready:
            pod.ready = ready
            self.on_change()

    async def wait_ready(self, pods: list[Pod], timeout_s: float) -> None:
        """Until every pod is Ready; a failed pod or ``timeout_s`` raises (with its log)."""
        deadline = time.monotonic() + timeout_s
        while not all(p.ready for p in pods):
            for p in pods:
                if p.failure:
                    raise PodError(p, p.failure, await self.engine.logs(p.container))
            if time.monotonic() > deadline:
                late = next(p for p in pods if not p.ready)
                raise PodError(
                    late, f"not Ready after {timeout_s:g} s", await self.engine.logs(late.container)
                )
            await asyncio.sleep(0.1)

    async def stop(self, pod: Pod) -> Termination:
        """Terminate ``pod`` as the kubelet does: endpoints, preStop, SIGTERM, grace, SIGKILL."""
        began = time.monotonic()
        pod.terminating = True
        self._set_ready(pod, False)
        if pod.probes is not None:
            pod.probes.cancel()
        if pod.spec.pre_stop:
            await self.engine(
                "exec", pod.container, *pod.spec.pre_stop, timeout_s=pod.spec.grace_s, check=False
            )
        pre_stop_s = time.monotonic() - began
        termed = time.monotonic()
        await self.engine("kill", "--signal", "TERM", pod.container, check=False)
        remaining = max(0.0, pod.spec.grace_s - (termed - began))
        killed = False
        try:
            await self.engine("wait", pod.container, timeout_s=remaining)
        except EngineError:
            killed = True
            await self.engine("kill", "--signal", "KILL", pod.container, check=False)
            await self.engine("wait", pod.container, check=False)
        exit_s = time.monotonic() - termed
        return Termination(pre_stop_s, exit_s, await self.engine.exit_code(pod.container), killed)

    async def remove(self, pod: Pod) -> None:
        """Remove the container and its volumes' folders."""
        await self.engine("rm", "--force", "--time", "0", pod.container, check=False)
        shutil.rmtree(self.root / "pods" / pod.name, ignore_errors=True)

    async def aclose(self) -> None:
        """Close the probes' HTTP client."""
        await self.client.aclose()


class _PodFailed(Exception):
    """A probe gave up on the pod (the kubelet would restart its container)."""


class PodError(RuntimeError):
    """A pod failed; the message carries the reason and the container's last lines."""

    def __init__(self, pod: Pod, reason: str, log: str) -> None:
        super().__init__(f"pod {pod.name}: {reason}\n--- last lines of {pod.container}\n{log}")
        self.pod = pod
