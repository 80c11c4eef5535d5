"""Production worker model: gunicorn with two uvicorn workers over one embedded index.

qdrant-edge lets one process open a shard; with RETRIEVAL_EDGE_PRIVATE_COPY each worker opens a
copy, and Prometheus multi-process mode sums the workers on /metrics.
"""

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import SmallIndex
from tests.support.servers import REPO, free_port, wait_until_ready


@pytest.fixture
def gunicorn_mcp(small_index: SmallIndex, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    env = {
        **os.environ,
        **small_index.env(),
        "RETRIEVAL_EDGE_PRIVATE_COPY": "true",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
        "PYTHONPATH": str(REPO),
        "OPENBLAS_NUM_THREADS": "1",
    }
    cmd = [
        sys.executable, "-m", "gunicorn", "--config", str(REPO / "scripts/k8s/gunicorn.conf.py"),
        "--workers", "2", "--bind", f"127.0.0.1:{port}", "services.mcp_server.asgi:app",
    ]  # fmt: skip
    with open(tmp_path / "gunicorn.log", "wb") as log:
        proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(f"{base}/readyz", 90.0, proc)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_two_workers_serve_one_index_and_sum_their_metrics(gunicorn_mcp: str) -> None:
    answers = set()
    # New connections each time, so both workers get requests.
    for _ in range(12):
        response = httpx.post(
            f"{gunicorn_mcp}/search_nfcorpus", json={"query": "soy milk", "top_k": 5}
        )
        assert response.status_code == 200
        answers.add(tuple(r["doc_id"] for r in response.json()["results"]))
    assert len(answers) == 1  # every worker answers the same
    metrics = httpx.get(f"{gunicorn_mcp}/metrics").text
    line = next(
        m
        for m in metrics.splitlines()
        if m.startswith('mcp_searches_total{outcome="ok",via="rest"}')
    )
    assert float(line.split()[-1]) == 12.0
