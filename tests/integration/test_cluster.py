"""Two MCP servers and two purple agents behind HAProxy: replicas restart and hang under load.

The short variant of ``make reliability`` (``devtools/reliability.py``), on the small index.
What is asserted is the mechanism, never how much the machine managed in a given time: the load
runs until the operation is done (the green agent's load mode ends on SIGTERM with its report),
every wait polls for an event under a bound that only a hang reaches, and HAProxy's counters
show which replica answered when.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from harness.local_cluster import DRAIN_S, LocalCluster, Replica
from harness.processes import BASE_ENV, REPO
from services.common.limits import HARD_DEADLINE_S
from tests.support.polling import wait_for
from tests.support.small_index import SmallIndex

HANG_S = 120.0  # bound of every wait: far over what a replica's start or drain takes


@pytest.fixture(scope="module")
def cluster(
    small_index: SmallIndex, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    workdir = tmp_path_factory.mktemp("cluster")
    scratch = workdir / "tmp"
    scratch.mkdir()
    local = LocalCluster(workdir, {**small_index.env(), "TMPDIR": str(scratch)})
    local.start()
    try:
        yield local
    finally:
        local.stop()
    assert list((scratch / "nfcorpus-shard-copies").iterdir()) == []  # no copy outlives its owner


def _served(cluster: LocalCluster, replica: Replica) -> int:
    """Answers of ``replica`` so far (2xx, as HAProxy counts them, across its restarts)."""
    return int(cluster.stats(replica)["hrsp_2xx"])


def _until_served(cluster: LocalCluster, replica: Replica, when: str) -> None:
    """Wait until ``replica`` answers a request it had not answered before this call."""
    before = _served(cluster, replica)
    wait_for(lambda: _served(cluster, replica) > before, HANG_S, f"answer of {replica.name} {when}")


@contextmanager
def _under_load(cluster: LocalCluster, name: str) -> Iterator[dict[str, Any]]:
    """Four clients of the green agent's load mode on the purple front while the block runs
    (answering already when it starts); the yielded dict holds the load's report afterwards."""
    out = cluster.workdir / f"{name}.json"
    command = [sys.executable, "-m", "services.green_agent", "load", "--agent", cluster.purple_url]
    command += ["--concurrency", "4", "--duration", "3600", "--top-k", "10", "--out", str(out)]
    env = {**os.environ, **BASE_ENV, "LOG_LEVEL": "WARNING"}
    report: dict[str, Any] = {}
    with subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.DEVNULL) as load:
        try:
            _until_served(cluster, cluster.purple[0], "to the load")
            yield report
        finally:
            load.send_signal(signal.SIGTERM)  # it stops starting requests, ends those in flight
            load.wait(HANG_S)
    assert load.returncode == 0
    report.update(json.loads(out.read_text()))


def test_a_rolling_restart_of_every_replica_fails_no_request(cluster: LocalCluster) -> None:
    with _under_load(cluster, "rolling") as report:
        for tier in (cluster.mcp, cluster.purple):
            for replica in tier:
                (sibling,) = (r for r in tier if r is not replica)
                replica.process.stop(timeout_s=DRAIN_S + HANG_S)  # SIGTERM: drains, then exits
                _until_served(cluster, sibling, f"while {replica.name} is down")
                replica.process.start()
                cluster.wait_until_balanced(replica, HANG_S)  # as a rolling update waits
                _until_served(cluster, replica, "once back")
    assert report["errors"] == 0, json.dumps(report["error_samples"])
    assert report["ok"] > 0


def test_a_hung_mcp_server_costs_at_most_its_requests_in_flight(cluster: LocalCluster) -> None:
    hung, other = cluster.mcp
    with _under_load(cluster, "hang") as report:
        hung.process.signal(signal.SIGSTOP)  # it holds its connections and answers nothing
        try:
            wait_for(
                lambda: cluster.stats(hung)["status"].startswith("DOWN"),
                HANG_S,
                "health checks taking the hung server out",
            )
            taken_out = cluster.stats(hung)
            stuck = int(taken_out["scur"])  # sent to it before it was taken out
            _until_served(cluster, other, f"while {hung.name} hangs")
            # Nothing more went to it (its open sessions may only end, by HAProxy's timeouts).
            assert cluster.stats(hung)["stot"] == taken_out["stot"]
        finally:
            hung.process.signal(signal.SIGCONT)
    # Only the requests the hung server held may fail; the rest were answered by the other.
    assert report["errors"] <= stuck, json.dumps(report["error_samples"])
    assert report["ok"] > 0
    assert report["latency"]["max_s"] < HARD_DEADLINE_S  # no request outlived the agents' bound
