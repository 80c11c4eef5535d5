"""The benchmark's memory limit holds a real child process, with the kernel's own cgroups."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from devtools.bench.scale.memory_limit import MemoryCgroup, NoCgroup, memory_limit


@contextmanager
def limited(limit_mb: int) -> Iterator[MemoryCgroup]:
    try:
        with memory_limit(f"test-memory-limit-{limit_mb}", limit_mb) as cgroup:
            yield cgroup
    except NoCgroup as e:
        pytest.skip(f"no memory cgroup can be made here: {e}")


def allocate(cgroup: MemoryCgroup, mb: int) -> int:
    """A child that writes ``mb`` MB of its own memory, in ``cgroup``: its exit code."""
    code = f"block = b'x' * ({mb} << 20); print(len(block))"
    child = subprocess.run(
        [sys.executable, "-c", code], preexec_fn=cgroup.join, capture_output=True, timeout=60
    )
    return child.returncode


def test_a_child_within_the_limit_completes_and_its_peak_is_charged() -> None:
    with limited(256) as cgroup:
        assert allocate(cgroup, 64) == 0
        peak = cgroup.peak_mb()
        assert cgroup.oom_kills() == 0
        path = cgroup.path
    if peak is not None:  # the unified hierarchy keeps it only from Linux 5.19
        assert 64 <= peak <= 256
    assert not path.exists()  # removed once its process ended


def test_a_child_beyond_the_limit_is_killed_not_swapped() -> None:
    with limited(96) as cgroup:
        assert allocate(cgroup, 256) == -9  # SIGKILL from the kernel's OOM killer
        assert cgroup.oom_kills() == 1


def test_a_limit_below_one_megabyte_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1 MB"), memory_limit("never-made", 0):
        pass


@pytest.mark.parametrize("name", ["", "..", "../escape", "a/b"])
def test_a_name_that_is_not_one_path_component_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="one path component"), memory_limit(name, 64):
        pass


def test_a_cgroup_still_in_use_is_left_behind_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    with limited(128) as cgroup:
        child = subprocess.Popen(sleep, preexec_fn=cgroup.join)  # still running at the exit
    try:
        assert cgroup.path.exists()
        assert "left behind" in caplog.text
    finally:
        child.kill()
        child.wait()
        cgroup.path.rmdir()
