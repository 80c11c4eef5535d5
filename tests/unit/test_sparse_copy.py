"""Private shard copies stay sparse even when the original lost its holes (an image layer), a
compacted shard (an image's index) copies back to the bytes it was built with, and the files
the engine only reads are linked, not copied."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from services.retrieval.store import compact
from services.retrieval.store.base import StoreError
from services.retrieval.store.copies import copy_file_sparse, copy_tree_sparse
from services.retrieval.store.edge import EdgeStore
from services.retrieval.types import CollectionSpec, VectorQuery
from tests.support.toy_points import POINTS

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


def test_a_compacted_shard_keeps_its_data_and_copies_back_to_the_bytes_it_had(
    tmp_path: Path,
) -> None:
    shard = tmp_path / "shard"
    (shard / "segments" / "s").mkdir(parents=True)
    data = os.urandom(50_000) + b"\1"
    files = {
        "segments/s/page_0.dat": data + bytes(4 * MB),  # a preallocated page: its tail goes
        "segments/s/flags.dat": bytes(MB),  # nothing but zeros: nothing of it stays
        "segments/s/short.dat": data + bytes(1000),  # a tail too short to be worth a record
        "edge_config.json": b'{"wal_enabled": false}',
    }
    for name, body in files.items():
        (shard / name).write_bytes(body)
    original = {name: (shard / name).read_bytes() for name in files}

    trimmed = compact.compact(shard)

    assert trimmed == 5 * MB
    assert (shard / "segments/s/page_0.dat").read_bytes() == data
    assert (shard / "segments/s/flags.dat").stat().st_size == 0
    assert (shard / "segments/s/short.dat").read_bytes() == original["segments/s/short.dat"]
    assert compact.is_compacted(shard)
    assert compact.compact(shard) == 0  # once is enough: the sizes are recorded

    copy = tmp_path / "copy"
    copy_tree_sparse(shard, copy)
    assert {p.relative_to(copy).as_posix() for p in copy.rglob("*") if p.is_file()} == set(files)
    assert {name: (copy / name).read_bytes() for name in files} == original
    if _holes_supported(tmp_path):  # the sizes come back as holes, not as zeros on the disk
        assert os.stat(copy / "segments/s/page_0.dat").st_blocks * 512 < MB


def test_a_compacted_shard_opens_through_a_private_copy_only(tmp_path: Path) -> None:
    root = tmp_path / "store"
    writer = EdgeStore(root)
    writer.create_collection("c", CollectionSpec(dense_size=4))
    writer.upsert("c", POINTS)
    (before,) = writer.search("c", [VectorQuery([1, 0, 0, 0], 3)])
    writer.close()
    assert compact.compact(root / "c") > 0  # qdrant-edge preallocates its pages and chunks

    direct = EdgeStore(root)
    with pytest.raises(StoreError, match="RETRIEVAL_EDGE_PRIVATE_COPY"):
        direct.count("c")
    direct.close()

    reader = EdgeStore(root, private_copy=True, copies_root=tmp_path / "copies")
    try:
        assert reader.count("c") == len(POINTS)
        assert reader.search("c", [VectorQuery([1, 0, 0, 0], 3)]) == [before]
    finally:
        reader.close()


def test_a_file_compacting_trimmed_is_copied_never_linked(tmp_path: Path) -> None:
    shard = tmp_path / "shard"
    (shard / "segments" / "s").mkdir(parents=True)
    data = os.urandom(50_000) + b"\1"
    (shard / "segments/s/matrix.dat").write_bytes(data + bytes(4 * MB))  # trimmed below
    (shard / "segments/s/quantized.data").write_bytes(data)  # nothing to trim
    compact.compact(shard)
    copy = tmp_path / "copy"
    copy_tree_sparse(shard, copy)
    # Its size comes back in the copy, and the original stays as compacted.
    assert not (copy / "segments/s/matrix.dat").is_symlink()
    assert (copy / "segments/s/matrix.dat").read_bytes() == data + bytes(4 * MB)
    assert (shard / "segments/s/matrix.dat").read_bytes() == data
    assert (copy / "segments/s/quantized.data").is_symlink()
