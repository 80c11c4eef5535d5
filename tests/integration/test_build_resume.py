"""The indexer as its users run it, in processes: killed and started again, and spread over
slices. Both must end with the collection an uninterrupted serial build writes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness.processes import REPO
from services.retrieval.settings import StoreSettings
from services.retrieval.store import open_store
from tests.support.served_collection import served_collection
from tests.support.small_index import make_subset

DOCS = 96
CHUNK = 16
CHUNKS = DOCS // CHUNK
INDEXER = [sys.executable, "-m", "services.retrieval.indexing.index", "--max-docs", str(DOCS)]
ENCODED = "encoded chunk"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("data")
    make_subset(folder)
    return folder


def _env(data: Path, root: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", str(root)),
        "OPENBLAS_NUM_THREADS": "1",
        "PYTHONPATH": str(REPO),
        "RETRIEVAL_DATA_DIR": str(data),
        "RETRIEVAL_EDGE_PATH": str(root / "edge"),
        "RETRIEVAL_CACHE_DIR": str(root / "cache"),
        "RETRIEVAL_MODE": "zero-shot",
        "RETRIEVAL_INDEX_CHUNK": str(CHUNK),
        **extra,
    }


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*INDEXER, *args], env=env, capture_output=True, text=True, timeout=600, check=False
    )


def _collection(edge: Path, data: Path) -> dict[str, Any]:
    """What the embedded store under ``edge`` serves (:func:`served_collection`)."""
    return served_collection(StoreSettings(edge_path=edge), data)


@pytest.fixture(scope="module")
def serial(data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The uninterrupted serial build's collection, with its own checkpoints."""
    root = tmp_path_factory.mktemp("serial")
    done = _run(_env(data, root))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.count(ENCODED) == CHUNKS
    found = _collection(root / "edge", data)
    assert len(found["points"]) == DOCS
    return found


def test_a_build_killed_and_started_again_ends_as_an_uninterrupted_one(
    data: Path, serial: dict[str, Any], tmp_path: Path
) -> None:
    env = _env(data, tmp_path)
    chunks = tmp_path / "cache" / "vectors" / "chunks"
    log = tmp_path / "killed.log"
    with open(log, "w") as out:
        build = subprocess.Popen(INDEXER, env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300
        # Killed once two chunks are in: the collection is then half written too.
        while len(list(chunks.glob("*.npy"))) < 2 and build.poll() is None:
            assert time.monotonic() < deadline, "the build wrote no checkpoint"
            time.sleep(0.05)
        build.send_signal(signal.SIGKILL)
        build.wait(timeout=30)
    assert build.returncode == -signal.SIGKILL, "the build finished before it could be killed"
    kept = len(list(chunks.glob("*.npy")))
    assert 2 <= kept < CHUNKS
    again = _run(env)
    assert again.returncode == 0, again.stderr[-3000:]
    # Every chunk encoded once, and at most the one the build was on encoded twice.
    encoded = log.read_text().count(ENCODED) + again.stderr.count(ENCODED)
    assert CHUNKS <= encoded <= CHUNKS + 1
    assert again.stderr.count(ENCODED) <= CHUNKS - kept + 1
    assert _collection(tmp_path / "edge", data) == serial


def test_a_build_spread_over_slices_ends_as_the_serial_one(
    data: Path, serial: dict[str, Any], tmp_path: Path
) -> None:
    env = _env(data, tmp_path, RETRIEVAL_INDEX_SLICES="2")
    # The finishing step alone, before any slice ran: it names the slices it lacks, writes nothing.
    early = _run(env, "--finish")
    assert early.returncode != 0 and "slice(s) [1, 2] of 2 did not finish" in early.stderr
    store = open_store(StoreSettings(edge_path=tmp_path / "edge"))
    try:
        assert store.list_collections() == [] and store.resolve_alias("nfcorpus") is None
    finally:
        store.close()
    # One slice, as a pod of an Indexed Job runs it: only its chunks are encoded.
    one = _run({**env, "JOB_COMPLETION_INDEX": "1"})
    assert one.returncode == 0, one.stderr[-3000:]
    assert one.stderr.count(ENCODED) == CHUNKS // 2
    missing = _run(env, "--finish")
    assert missing.returncode != 0 and "slice(s) [1] of 2 did not finish" in missing.stderr
    # make index's way: every slice in a process of its own, then the finishing step.
    shutil.rmtree(tmp_path / "cache" / "vectors")
    both = _run(env)
    assert both.returncode == 0, both.stderr[-3000:]
    assert both.stderr.count(ENCODED) == CHUNKS and "slice 2 of 2" in both.stderr
    assert _collection(tmp_path / "edge", data) == serial


def test_a_finishing_step_started_first_waits_for_the_slices(
    data: Path, serial: dict[str, Any], tmp_path: Path
) -> None:
    # As on a cluster: the finishing step's pod starts beside the slices' pods and waits.
    env = _env(data, tmp_path, RETRIEVAL_INDEX_SLICES="2", RETRIEVAL_INDEX_WAIT_SECONDS="300")
    finish = subprocess.Popen(
        [*INDEXER, "--finish"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    slices = [_run({**env, "JOB_COMPLETION_INDEX": str(i)}) for i in range(2)]
    assert [s.returncode for s in slices] == [0, 0], [s.stderr[-2000:] for s in slices]
    _, err = finish.communicate(timeout=600)
    assert finish.returncode == 0, err[-3000:]
    assert "waiting for" in err and ENCODED not in err
    assert _collection(tmp_path / "edge", data) == serial
