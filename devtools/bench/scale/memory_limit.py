"""A memory limit on one child process, as a pod's limit is: a memory cgroup of its own.

``make bench-scale-build`` builds its larger sizes a second time under a limit. The kernel
charges a cgroup for its anonymous memory and for the page cache it reads in, and under the
limit it reclaims that page cache (the store's mapped files) before it kills anything. A build
that completes under the limit therefore needs no more memory than the limit, whatever its
resident set grew to without one. A pod's memory limit is the same mechanism, so the figure is
the one an operator sizes the indexing Job by.

The cgroup is made under this process's own: in the v1 memory hierarchy, or in the unified
(v2) one where its memory controller is delegated. That takes write access there, which root
in a container has; where there is none, :class:`NoCgroup` says why and the limited run is left
out. Written here because no well-kept Python library sets cgroup limits; ``systemd-run -p
MemoryMax=`` does, but only where systemd runs, and these machines have none.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

MB = 2**20
log = logging.getLogger(__name__)


class NoCgroup(Exception):
    """No memory cgroup can be made here; the message says why."""


@dataclass(frozen=True)
class MemoryCgroup:
    """A memory cgroup that this process made, and may put a child into."""

    path: Path
    unified: bool

    def _file(self, v1: str, v2: str) -> Path:
        return self.path / (v2 if self.unified else v1)

    def join(self) -> None:
        """Move the calling process in: the child's ``preexec_fn``, before it runs anything."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def peak_mb(self) -> float | None:
        """The most memory charged at once, in MB (None where the kernel does not keep it)."""
        peak = self._file("memory.max_usage_in_bytes", "memory.peak")
        try:
            return int(peak.read_text()) / MB
        except (OSError, ValueError):
            return None

    def oom_kills(self) -> int:
        """How many processes the kernel killed in this cgroup for want of memory."""
        text = self._file("memory.oom_control", "memory.events").read_text()
        counts = dict(line.split() for line in text.splitlines() if len(line.split()) == 2)
        return int(counts.get("oom_kill", 0))


def _own_memory_cgroup() -> tuple[Path, bool]:
    """The memory cgroup of this process as a folder, and whether it is the unified one."""
    memberships = {}  # controllers ("" for v2) -> the cgroup's path within its hierarchy
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            memberships[controller] = path
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields, _, tail = line.partition(" - ")
        fstype, _, options = tail.split(" ", 2)
        root, mount = fields.split()[3:5]
        options_set = set(options.split(","))
        if fstype == "cgroup" and "memory" in options_set and "memory" in memberships:
            return Path(mount) / os.path.relpath(memberships["memory"], root), False
        if fstype == "cgroup2" and "" in memberships and "memory" not in memberships:
            return Path(mount) / os.path.relpath(memberships[""], root), True
    raise NoCgroup("no mounted memory cgroup hierarchy holds this process")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as e:
        raise NoCgroup(f"cannot read {path}: {e}") from e


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as e:
        raise NoCgroup(f"cannot write {value!r} to {path}: {e}") from e


@contextmanager
def memory_limit(name: str, limit_mb: int) -> Iterator[MemoryCgroup]:
    """A child cgroup ``name`` of this process's own, limited to ``limit_mb`` MB, no swap.

    It is removed on exit, once the processes put into it have ended (its page cache charges
    go to its parent).
    """
    if limit_mb < 1:
        raise ValueError(f"a memory limit must be at least 1 MB, not {limit_mb}")
    if "/" in name or name in ("", ".", ".."):
        raise ValueError(f"a cgroup's name is one path component, not {name!r}")
    try:
        parent, unified = _own_memory_cgroup()
    except (OSError, ValueError) as e:
        raise NoCgroup(f"cannot read this process's cgroups: {e}") from e
    if unified and "memory" not in _read(parent / "cgroup.subtree_control").split():
        raise NoCgroup(f"the memory controller is not delegated to {parent}'s children")
    path = parent / name
    try:
        path.mkdir()
    except OSError as e:
        raise NoCgroup(f"cannot make the cgroup {path}: {e}") from e
    try:
        limit = str(limit_mb * MB)
        cgroup = MemoryCgroup(path, unified)
        # Without a swap limit, a machine with swap would page the build out, not reclaim.
        if unified:
            _write(path / "memory.max", limit)
            if (path / "memory.swap.max").exists():
                _write(path / "memory.swap.max", "0")
        else:
            _write(path / "memory.limit_in_bytes", limit)
            if (path / "memory.memsw.limit_in_bytes").exists():
                _write(path / "memory.memsw.limit_in_bytes", limit)
        yield cgroup
    finally:
        try:
            path.rmdir()
        except OSError as e:  # a process still in it (the caller interrupted): say so, go on
            log.warning("the cgroup %s is left behind: %s", path, e)
