"""How `make chart-run` runs a Job: as the Job controller does (harness/chart_run/release.py).

The containers here are scripted: each exits with the status its index is given, or runs until
it is stopped. What is under test is the controller's part (parallelism, one success per index,
replacement up to backoffLimit, the deadline); `make chart-run` runs the chart's load-test Job on
podman with the real image.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.chart_run.engine import EngineError
from harness.chart_run.release import Cluster
from harness.chart_run.spec import FieldRef, Job, PodSpec, Release, Security

INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
RUNS = -1  # a container that runs until it is stopped


class ScriptedEngine:
    """podman as far as running a Job uses it.

    The ``i``-th container of index ``n`` exits with ``script[n][i]`` (the last entry again if
    it is started more often); its index is read from its expanded ``--worker`` argument.
    """

    def __init__(self, script: Mapping[int, list[int]]) -> None:
        self.script = script
        self.started: list[tuple[str, int]] = []
        self.running: set[str] = set()
        self.most_at_once = 0
        self.exits: dict[str, int] = {}
        self._done: dict[str, asyncio.Event] = {}

    async def __call__(
        self, *args: str, timeout_s: float = 300.0, check: bool = True, **_: Any
    ) -> str:
        command = args[0]
        if command == "run":
            name = args[args.index("--name") + 1]
            # The index reaches the container as the downward API gives it: WORKER_INDEX.
            index = int(args[args.index("--worker") + 1])
            attempt = sum(1 for _, i in self.started if i == index)
            self.started.append((name, index))
            statuses = self.script[index]
            status = statuses[min(attempt, len(statuses) - 1)]
            self._done[name] = asyncio.Event()
            self.running.add(name)
            self.most_at_once = max(self.most_at_once, len(self.running))
            if status != RUNS:
                asyncio.get_running_loop().call_later(0.05, self._exit, name, status)
        elif command == "wait":
            try:
                await asyncio.wait_for(self._done[args[1]].wait(), timeout_s)
            except TimeoutError:
                raise EngineError("wait timed out") from None
        elif command == "kill":
            name = args[-1]
            if name in self.running:
                self._exit(name, 143 if "TERM" in args else 137)
        return ""

    def _exit(self, name: str, status: int) -> None:
        self.exits[name] = status
        self.running.discard(name)
        self._done[name].set()

    async def ip(self, container: str, network: str) -> str:
        return "10.0.0.1"

    async def exit_code(self, container: str) -> int:
        return self.exits[container]

    async def logs(self, container: str, tail: int = 40) -> str:
        return f"log of {container}"


def _job(completions: int, parallelism: int, backoff_limit: int, deadline: float | None) -> Job:
    template = PodSpec(
        name="gen",
        labels={"app": "gen"},
        image="img:1",
        command=("gen",),
        args=("--worker", "$(WORKER_INDEX)"),
        env=(("WORKER_INDEX", FieldRef(INDEX)),),
        ports={},
        startup=None,
        readiness=None,
        liveness=None,
        cpu_limit=None,
        memory_limit=None,
        security=Security(10001, 10001, None, True, True, True),
        volumes=(),
        pre_stop=None,
        grace_s=1.0,
        restart_policy="Never",
    )
    return Job("gen", template, completions, parallelism, True, backoff_limit, deadline)


def _run(tmp_path: Path, job: Job, script: Mapping[int, list[int]]) -> tuple[Any, ScriptedEngine]:
    engine = ScriptedEngine(script)
    cluster = Cluster(engine, Release("ns", (), (), ()), "img:1", tmp_path)  # type: ignore[arg-type]

    async def go() -> Any:
        try:
            return await cluster.run_job(job)
        finally:
            await cluster.kubelet.aclose()

    return asyncio.run(go()), engine


def test_every_index_succeeds_once_with_at_most_parallelism_pods(tmp_path: Path) -> None:
    ran, engine = _run(tmp_path, _job(3, 2, 0, None), {0: [0], 1: [0], 2: [0]})
    assert ran.complete and ran.succeeded == [0, 1, 2] and ran.failed_pods == {}
    assert sorted(i for _, i in engine.started) == [0, 1, 2]
    assert engine.most_at_once == 2


def test_a_failed_pod_is_replaced_for_its_index_within_the_backoff_limit(tmp_path: Path) -> None:
    ran, engine = _run(tmp_path, _job(3, 3, 1, None), {0: [0], 1: [1, 0], 2: [0]})
    assert ran.complete and ran.succeeded == [0, 1, 2]
    assert list(ran.failed_pods.values()) == [1]
    assert [i for _, i in engine.started].count(1) == 2


def test_failures_past_the_backoff_limit_fail_the_job_and_stop_its_pods(tmp_path: Path) -> None:
    ran, engine = _run(tmp_path, _job(2, 2, 1, None), {0: [RUNS], 1: [1, 1]})
    assert not ran.complete and ran.failure.startswith("BackoffLimitExceeded: 2 failed pods")
    assert not engine.running  # index 0's pod was stopped with the Job
    (running_one,) = [name for name, i in engine.started if i == 0]
    assert engine.exits[running_one] == 143  # SIGTERM, within its grace
    assert any(running_one.endswith(pod) for pod in ran.logs)  # its last lines are kept


def test_the_deadline_stops_a_job_that_runs_too_long(tmp_path: Path) -> None:
    ran, engine = _run(tmp_path, _job(2, 2, 0, 0.5), {0: [0], 1: [RUNS]})
    assert not ran.complete and ran.failure == "DeadlineExceeded: not complete after 0.5 s"
    assert ran.succeeded == [0] and not engine.running
