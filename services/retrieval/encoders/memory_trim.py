"""What stays resident: the C heap's free pages and the pages of the model's weights file.

Both are hints to glibc and to the kernel that change no computed value, only which pages the
process keeps in memory. Elsewhere than Linux with glibc they do nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
from dataclasses import dataclass
from pathlib import Path


def release_free_heap() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``).

    Loading the model folds its int8 weights into fp32 copies through tens of megabytes of
    temporaries, and building the app frees more; glibc keeps that freed memory in the process,
    where it would count against the pod's memory for as long as it runs. It is cheap enough to
    call at start-up (docs/performance.md has what it returns).
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


def _mappings(path: Path) -> list[tuple[int, int]]:
    """Address ranges at which this process maps ``path``."""
    target = str(path.resolve())
    ranges = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5] == target:
            start, end = (int(x, 16) for x in fields[0].split("-"))
            ranges.append((start, end - start))
    return ranges


def read_pages_on_demand(path: Path) -> int:
    """Keep only the pages of ``path`` that are read resident; the number of mappings advised.

    For the model's weights file, mapped by onnxruntime: of the int8 word table a query reads a
    dozen 384-byte rows, but a page fault maps or reads whole neighbourhoods around the page (up
    to the disk's read-ahead, or the cached neighbours), so the whole table would become
    resident within a few hundred queries. ``MADV_RANDOM`` stops the read-ahead; dropping the
    file's cached pages that nobody maps makes each fault read only its own page (once: later
    faults find it cached). docs/performance.md has what stays resident either way.
    """
    advised = 0
    with contextlib.suppress(OSError, AttributeError, ValueError):
        madvise = ctypes.CDLL(None, use_errno=True).madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        for start, size in _mappings(path):
            advised += madvise(start, size, mmap.MADV_RANDOM) == 0
        if advised:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    return advised


@dataclass(frozen=True, slots=True)
class Mapping:
    """One of this process's mappings of a file, as ``/proc/self/smaps`` describes it."""

    rss_kb: int
    flags: tuple[str, ...]  # VmFlags: "rr" is MADV_RANDOM applied

    @property
    def random(self) -> bool:
        """Whether the kernel was told to read this mapping's pages on demand only."""
        return "rr" in self.flags


def mappings_of(path: Path) -> list[Mapping]:
    """The mappings of ``path`` in this process, with resident size and flags (tests, benches)."""
    target, found = str(path.resolve()), []
    current, rss_kb = "", 0
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and not fields[0].endswith(":"):  # a mapping's header line
            current = fields[5] if len(fields) > 5 else ""
        elif current == target and fields[0] == "Rss:":
            rss_kb = int(fields[1])
        elif current == target and fields[0] == "VmFlags:":  # the last line of a mapping
            found.append(Mapping(rss_kb=rss_kb, flags=tuple(fields[1:])))
    return found
