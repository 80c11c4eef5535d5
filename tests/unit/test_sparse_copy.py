"""Private shard copies stay sparse even when the original lost its holes (an image layer)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from services.retrieval.store.copies import copy_file_sparse

MB = 1 << 20


def _holes_supported(folder: Path) -> bool:
    probe = folder / "probe"
    with open(probe, "wb") as f:
        f.truncate(4 * MB)
    return os.stat(probe).st_blocks == 0


def test_written_zeros_become_holes_and_the_bytes_stay_the_same(tmp_path: Path) -> None:
    if not _holes_supported(tmp_path):
        pytest.skip("this file system stores no holes")
    source = tmp_path / "segment"
    data = os.urandom(100_000)
    # Written in full, as a layer stores it: data, a run of zeros, data, zeros to the end.
    source.write_bytes(data + bytes(8 * MB) + data + bytes(3 * MB + 123))
    target = tmp_path / "copy"
    copy_file_sparse(source, target)
    assert target.read_bytes() == source.read_bytes()
    # The copy holds the data, not the zeros (up to a ``_BLOCK`` of copies.py around each data run).
    assert os.stat(target).st_blocks * 512 < os.stat(source).st_blocks * 512 / 4
