"""Production worker model: gunicorn with two uvicorn workers over one embedded index.

qdrant-edge lets one process open a shard; with RETRIEVAL_EDGE_PRIVATE_COPY each worker opens a
copy, and Prometheus multi-process mode sums the workers on /metrics, with the process metrics
of every process of the pod and exemplars.
"""

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.processes import ServerProcess, gunicorn_mcp_server
from tests.support.small_index import SmallIndex


@pytest.fixture(scope="module")
def gunicorn_mcp(
    small_index: SmallIndex, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    tmp_path = tmp_path_factory.mktemp("gunicorn")
    scratch = tmp_path / "tmp"  # the workers' temporary folder: their shard copies go here
    scratch.mkdir()
    env = {**small_index.env(private_copy=True), "TMPDIR": str(scratch)}
    server = gunicorn_mcp_server(env, tmp_path / "gunicorn.log", workers=2)
    server.start(timeout_s=90)
    try:
        yield server
    finally:
        server.stop(timeout_s=30)
    # Each worker removed its private shard copies on the way out (SIGTERM, graceful).
    assert list((scratch / "nfcorpus-shard-copies").iterdir()) == []


def test_two_workers_serve_one_index_and_sum_their_metrics(gunicorn_mcp: ServerProcess) -> None:
    url = gunicorn_mcp.base_url
    answers = set()
    # New connections each time, so both workers get requests.
    for _ in range(12):
        response = httpx.post(f"{url}/search_nfcorpus", json={"query": "soy milk", "top_k": 5})
        assert response.status_code == 200
        answers.add(tuple(r["doc_id"] for r in response.json()["results"]))
    assert len(answers) == 1  # every worker answers the same
    metrics = httpx.get(f"{url}/metrics").text
    line = next(
        m
        for m in metrics.splitlines()
        if m.startswith('mcp_searches_total{outcome="ok",via="rest"}')
    )
    assert float(line.split()[-1]) == 12.0


def test_the_pod_keeps_process_metrics_and_exemplars(gunicorn_mcp: ServerProcess) -> None:
    url = gunicorn_mcp.base_url
    # Exemplars name recorded traces: with no exporter, only the traces their callers sample.
    traced = {"traceparent": f"00-{'ab' * 16}-{'cd' * 8}-01"}
    for _ in range(6):
        httpx.post(f"{url}/search_nfcorpus", json={"query": "kale", "top_k": 3}, headers=traced)
    metrics = httpx.get(f"{url}/metrics").text
    pids = {
        line.split('pid="')[1].split('"')[0]
        for line in metrics.splitlines()
        if line.startswith("process_resident_memory_bytes{")
    }
    assert len(pids) == 3  # the master and both workers
    assert "process_cpu_seconds_total{" in metrics and "process_open_fds{" in metrics
    # Exemplars come from the worker that answers the scrape: ask until one that searched does.
    openmetrics = {"accept": "application/openmetrics-text; version=1.0.0"}
    for _ in range(20):
        scrape = httpx.get(f"{url}/metrics", headers=openmetrics)
        assert scrape.headers["content-type"].startswith("application/openmetrics-text")
        assert scrape.text.endswith("# EOF\n")
        if f'# {{trace_id="{"ab" * 16}"' in scrape.text:
            break
    else:
        raise AssertionError("no exemplar in 20 scrapes")


def _mapped_files(pid: int) -> set[str]:
    return {line.split(maxsplit=5)[5] for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
            if len(line.split(maxsplit=5)) == 6}  # fmt: skip


def test_workers_share_what_the_master_preloaded(gunicorn_mcp: ServerProcess) -> None:
    # The master imports the packages and loads the encoder before forking (preload_app), so
    # each worker starts with those pages shared. The mechanism is asserted here: the master
    # holds the runtime and the model's weights. How much each worker then keeps private depends
    # on the kernel (transparent huge pages split or not): devtools/bench/memory.py --gunicorn 2
    # reports it.
    master = gunicorn_mcp.pid
    assert master is not None
    workers = [int(p) for p in Path(f"/proc/{master}/task/{master}/children").read_text().split()]
    assert len(workers) == 2
    for pid in [master, *workers]:
        files = _mapped_files(pid)
        assert any("libonnxruntime" in f for f in files), pid
        assert any(f.endswith("model.onnx.data") for f in files), pid
