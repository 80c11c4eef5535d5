"""The indexer's pods as `helm template` renders them, run as local processes: with
indexer.parallelism the slices and the finishing step, started together as the Job controller
starts them, write the collection the single Job of indexer.parallelism=1 writes.

Each pod's command and env are the render's (tests/k8s/pod_processes.py); what names the cluster is
replaced: the claim by a folder (one per release, shared by its pods), each pod's /tmp by its own,
and the Qdrant Service and its key by qdrant-client's local mode on a folder (the same backend,
RETRIEVAL_STORE=server, as rendered). The wait for Qdrant's /readyz (the finishing step's init
container) has no server to wait for and is not run. The corpus is small (a slice of NFCorpus,
its first 96 documents in chunks of 8, zero-shot), set through the chart's values as a user would.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.retrieval.settings import StoreSettings
from tests.k8s.pod_processes import pod_process
from tests.k8s.rendering import CHART, Doc, render
from tests.support.served_collection import served_collection
from tests.support.small_index import make_subset

PARALLEL = "ci/parallel-indexer-values.yaml"
SLICES = 4
DOCS = 96
CHUNK = 8
#: A small build: the chart's own values for the indexer's settings (RETRIEVAL_<KEY>).
SMALL = {
    "retrieval__settings__MAX_DOCS": str(DOCS),
    "retrieval__settings__INDEX_CHUNK": str(CHUNK),
    "retrieval__settings__MODE": "zero-shot",
}
STAGE = "indexer"  # the Dockerfile stage of indexer.image
TIMEOUT_S = 600
ENCODED = "encoded chunk"


class Release:
    """One release's claim (the corpus on it, in the scenario's subPath), its pods' logs and its
    store."""

    def __init__(self, root: Path) -> None:
        self.root = root
        subpath = yaml.safe_load((CHART / PARALLEL).read_text())["indexer"]["data"]["subPath"]
        self.claim = root / "claim" / subpath  # what the pods mount at /data
        self.data = self.claim / "nfcorpus"
        make_subset(self.data)
        self.store = root / "qdrant"
        self.running: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, job: Doc, pod: str, index: int | None = None) -> None:
        """Start ``pod`` of ``job`` (an Indexed Job's with its ``index``)."""
        tmp = self.root / "pods" / pod / "tmp"
        tmp.mkdir(parents=True)
        # The Qdrant Service's URL and its key's Secret name the cluster: local mode instead.
        store = {
            "RETRIEVAL_QDRANT_URL": None,
            "RETRIEVAL_QDRANT_API_KEY": None,
            "RETRIEVAL_QDRANT_PATH": str(self.store),
        }
        process = pod_process(job, {"data": self.claim, "tmp": tmp}, store, STAGE, index)
        with open(self.root / "pods" / pod / "log", "wb") as log:
            self.running[pod] = subprocess.Popen(
                process.argv, env=process.env, cwd=process.cwd, stdout=log, stderr=log
            )

    def wait(self, *pods: str) -> dict[str, str]:
        """Each of ``pods``' logs once it exited 0, in that order."""
        logs = {}
        for pod in pods:
            status = self.running[pod].wait(timeout=TIMEOUT_S)
            logs[pod] = (self.root / "pods" / pod / "log").read_text()
            assert status == 0, f"{pod} exited {status}:\n{logs[pod][-3000:]}"
        return logs

    def __enter__(self) -> Release:
        return self

    def __exit__(self, *_: object) -> None:
        """Kill what still runs: a test that failed leaves no finishing step waiting."""
        for process in self.running.values():
            if process.poll() is None:
                process.kill()
                process.wait()

    def collection(self) -> dict[str, Any]:
        settings = StoreSettings(backend="server", qdrant_path=str(self.store))
        return served_collection(settings, self.data)


def _job(component: str, **sets: object) -> Doc:
    (job,) = render(PARALLEL, **SMALL, **sets).component("Job", component)
    return job


@pytest.fixture(scope="module")
def serial(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The collection the single Job (indexer.parallelism=1) writes."""
    with Release(tmp_path_factory.mktemp("serial")) as release:
        release.start(_job("indexer", indexer__parallelism=1), "indexer")
        assert release.wait("indexer")["indexer"].count(ENCODED) == DOCS // CHUNK
    found = release.collection()
    assert found["name"].startswith("nfcorpus-") and len(found["points"]) == DOCS
    return found


def test_the_rendered_slices_and_finishing_step_write_the_single_job_s_collection(
    serial: dict[str, Any], tmp_path: Path
) -> None:
    with Release(tmp_path) as release:
        slices = _job("indexer-slices")
        assert slices["spec"]["completions"] == SLICES
        # The finishing step first, as a cluster may start it: it waits for the slices' vectors.
        slices_pods = [f"slice-{i}" for i in range(SLICES)]
        release.start(_job("indexer"), "finish")
        for i, pod in enumerate(slices_pods):
            release.start(slices, pod, index=i)
        logs = release.wait(*slices_pods)
        # Each slice encoded its own chunks (every SLICES-th of them): all are on the claim.
        per_slice = DOCS // CHUNK // SLICES
        assert [logs[pod].count(ENCODED) for pod in slices_pods] == [per_slice] * SLICES
        checkpoints = release.claim / "cache" / "vectors" / "chunks"  # RETRIEVAL_CACHE_DIR's
        assert len(list(checkpoints.glob("*.npy"))) == DOCS // CHUNK
        # The finishing step encoded none of them.
        assert ENCODED not in release.wait("finish")["finish"]
        assert release.collection() == serial
