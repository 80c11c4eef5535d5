"""Residency hints: the pages of a mapped file are read on demand, the bytes read stay the same."""

from __future__ import annotations

import mmap
from pathlib import Path

from services.retrieval.encoders.memory_trim import (
    mappings_of,
    read_pages_on_demand,
    release_free_heap,
)


def test_a_mapped_file_is_advised_random_and_reads_the_same(tmp_path: Path) -> None:
    path = tmp_path / "weights.data"
    content = bytes(range(256)) * 64 * 1024
    path.write_bytes(content)
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        assert mappings_of(path) and not any(m.random for m in mappings_of(path))
        assert read_pages_on_demand(path) == 1
        assert mappings_of(path) and all(m.random for m in mappings_of(path))
        assert mapped[5_000_000:5_000_384] == content[5_000_000:5_000_384]
        assert mapped[:] == content


def test_a_file_nobody_maps_or_a_missing_one_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "weights.data"
    path.write_bytes(b"\0" * 8192)
    assert read_pages_on_demand(path) == 0
    assert read_pages_on_demand(tmp_path / "missing.data") == 0
    release_free_heap()  # and trimming the heap is harmless at any time
