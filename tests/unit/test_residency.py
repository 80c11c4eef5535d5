"""Residency hints: the pages of a mapped file are read on demand, the bytes read stay the same."""

from __future__ import annotations

import mmap
from pathlib import Path

from services.retrieval.residency import read_pages_on_demand, release_free_heap


def _vm_flags(path: Path) -> list[list[str]]:
    """The ``VmFlags`` of each of this process's mappings of ``path``."""
    flags, current = [], ""
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and not fields[0].endswith(":"):
            current = fields[5] if len(fields) > 5 else ""
        elif fields[0] == "VmFlags:" and current == str(path.resolve()):
            flags.append(fields[1:])
    return flags


def test_a_mapped_file_is_advised_random_and_reads_the_same(tmp_path: Path) -> None:
    path = tmp_path / "weights.data"
    content = bytes(range(256)) * 64 * 1024  # 16 MB
    path.write_bytes(content)
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        assert _vm_flags(path) and all("rr" not in flags for flags in _vm_flags(path))
        assert read_pages_on_demand(path) == 1
        assert _vm_flags(path) and all("rr" in flags for flags in _vm_flags(path))
        assert mapped[5_000_000:5_000_384] == content[5_000_000:5_000_384]
        assert mapped[:] == content


def test_a_file_nobody_maps_or_a_missing_one_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "weights.data"
    path.write_bytes(b"\0" * 8192)
    assert read_pages_on_demand(path) == 0
    assert read_pages_on_demand(tmp_path / "missing.data") == 0
    release_free_heap()  # and trimming the heap is harmless at any time
