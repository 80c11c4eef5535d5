"""``make bench-scale-build`` at a small size: it builds from scratch, reads every vector from the
checkpoints, records each phase, and measures the encoding split over two processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from devtools.figures import FROM_REPORT
from harness.processes import BASE_ENV, REPO

BASE, SIZES, SPLIT, CHUNK = 60, (90, 150), 64, 16


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("bench-scale-build")
    argv = [
        sys.executable, "-m", "devtools.bench.scale.build", "--base-docs", str(BASE),
        "--sizes", ",".join(map(str, SIZES)), "--mode", "zero-shot", "--measure", "5",
        "--split-docs", str(SPLIT), "--work", str(root / "work"), "--out", str(root / "out.json"),
    ]  # fmt: skip
    env = {**os.environ, **BASE_ENV, "RETRIEVAL_INDEX_CHUNK": str(CHUNK)}
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads((root / "out.json").read_text()))


def test_each_size_is_built_from_scratch_from_the_checkpoints(report: dict[str, Any]) -> None:
    assert [r["documents"] for r in report["records"]] == list(SIZES)
    for record in report["records"]:
        assert record["encoded_chunks"] == 0  # every vector from the prepared checkpoints
        # Measured, whatever their values here: present, as numbers.
        assert isinstance(record["wall_s"], float) and isinstance(record["peak_rss_mb"], float)
        assert {"plan", "scan", "write", "optimize"} <= set(record["phases_s"])
        assert set(record["phases_mb"]) == set(record["phases_s"])  # the memory after each


def test_each_larger_size_is_built_again_under_a_limit_of_the_smallest_peak(
    report: dict[str, Any],
) -> None:
    smallest, *larger = report["records"]
    assert "limited" not in smallest
    limit_mb = round(report["limit_ratio"] * smallest["peak_rss_mb"])
    for record in larger:
        limited = record["limited"]
        assert limited["limit_mb"] == limit_mb
        if "skipped" in limited:  # no writable memory cgroup on this machine
            assert limited["skipped"]
            continue
        assert limited["completed"] and limited["oom_kills"] == 0
        assert limited["phases_s"].keys() == record["phases_s"].keys()
        # Read back from the cgroup (None where the kernel keeps no peak); that the limit holds
        # is tests/integration/test_memory_limit.py's.
        assert limited["cgroup_peak_mb"] is None or limited["cgroup_peak_mb"] > 0


def test_the_split_encodes_the_same_documents_in_one_and_in_two_processes(
    report: dict[str, Any],
) -> None:
    split = report["split"]
    assert split["documents"] == SPLIT
    assert split["wall_s_1_proc"] > 0 and split["wall_s_2_procs"] > 0
    assert split["encode_speedup_2_procs"] == split["wall_s_1_proc"] / split["wall_s_2_procs"]


def test_the_figures_section_quotes_every_size(report: dict[str, Any]) -> None:
    _, headline = FROM_REPORT["scale_build"]
    figures = headline(report)
    for n in SIZES:
        assert {f"n{n}_wall_s", f"n{n}_peak_rss_mb", f"n{n}_write_s"} <= set(figures)
    assert {"peak_rss_x", "encode_speedup_2_procs", "encode_docs_per_s_1_proc"} <= set(figures)
