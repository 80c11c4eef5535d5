"""Two MCP servers and two purple agents behind HAProxy: replicas restart under load.

The short variant of ``make reliability`` (``devtools/reliability.py``), on the small index.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from devtools.cluster import LocalCluster
from tests.conftest import SmallIndex


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


def _under_load(cluster: LocalCluster, seconds: float, action: Any) -> dict[str, Any]:
    worker = threading.Thread(target=action, daemon=True)
    worker.start()
    report = cluster.load(seconds, ["--concurrency", "4"], f"load-{seconds:g}")
    worker.join()
    return report


def test_a_rolling_restart_of_every_replica_fails_no_request(cluster: LocalCluster) -> None:
    def rolling() -> None:
        for replica in cluster.replicas:
            cluster.restart(replica)

    report = _under_load(cluster, 25.0, rolling)
    assert report["ok"] > 100
    assert report["errors"] == 0, json.dumps(report["error_samples"])


def test_a_hung_mcp_server_costs_at_most_its_requests_in_flight(cluster: LocalCluster) -> None:
    report = _under_load(cluster, 10.0, lambda: cluster.hang(cluster.mcp[0], 4.0))
    assert report["errors"] <= 4, json.dumps(report["error_samples"])  # the clients' concurrency
    assert report["latency"]["max_s"] < 60
