"""Embedded shards written compactly, for an image: files without their preallocated zero tails.

qdrant-edge preallocates its payload pages and vector chunks, and a store of a few thousand
points fills a fraction of them. On the disk that builds them the rest are holes, but an image
layer stores every byte, holes as written zeros (docs/image.md has the figures). A compacted shard
keeps each file only up to its last non-zero bytes and records the sizes the files had in
:data:`SIZES` beside them; the engine refuses files shorter than their pages, so a compacted
shard is opened only through a private copy (:mod:`.copies`), which gives every file its size
back as a hole: the same bytes, and no zeros on the disk of the copy.

``python -m services.retrieval.store.compact ROOT`` compacts every shard under a store's root
(the image's build does, once the index is built).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

#: The record of a compacted shard: file (relative to the shard) -> its size before compaction.
SIZES = "compacted-sizes.json"
#: Tails shorter than this stay: trimming them would save less than the record of their size.
MIN_TAIL = 64 * 1024
_CHUNK = 1 << 20


def data_end(path: Path) -> int:
    """The length of ``path`` without its trailing zero bytes."""
    with open(path, "rb") as f:
        end = os.fstat(f.fileno()).st_size
        while end > 0:
            start = max(0, end - _CHUNK)
            f.seek(start)
            kept = len(f.read(end - start).rstrip(b"\0"))
            if kept:
                return start + kept
            end = start
    return 0


def compact(shard: Path) -> int:
    """Trim the zero tails of the files of ``shard`` and record their sizes; bytes trimmed.

    The record is written first, whole (a temporary file renamed into place), then the files are
    trimmed: a compaction stopped half-way leaves files whose sizes the record still holds, and a
    second run, seeing the record, leaves them as they are.
    """
    if (shard / SIZES).exists():
        return 0  # already compacted: its files' tails are gone and their sizes recorded
    sizes: dict[str, int] = {}
    ends: dict[str, int] = {}
    for path in sorted(p for p in shard.rglob("*") if p.is_file() and not p.is_symlink()):
        size, end = path.stat().st_size, data_end(path)
        if size - end >= MIN_TAIL:
            name = path.relative_to(shard).as_posix()
            sizes[name], ends[name] = size, end
    with tempfile.NamedTemporaryFile("w", dir=shard, suffix=".tmp", delete=False) as tmp:
        tmp.write(json.dumps(sizes, indent=0, sort_keys=True) + "\n")
    os.replace(tmp.name, shard / SIZES)
    for name, end in ends.items():
        os.truncate(shard / name, end)
    return sum(sizes[name] - end for name, end in ends.items())


def is_compacted(shard: Path) -> bool:
    """Whether ``shard`` was compacted (and so opens only through a copy)."""
    return (shard / SIZES).is_file()


def trimmed(shard: Path) -> frozenset[str]:
    """The files (relative paths) that compacting ``shard`` trimmed: none if it was not."""
    if not is_compacted(shard):
        return frozenset()
    return frozenset(json.loads((shard / SIZES).read_text()))


def restore_sizes(shard: Path, copy: Path) -> None:
    """Give the files of ``copy``, a copy of the compacted ``shard``, their sizes back (holes)."""
    for name, size in json.loads((shard / SIZES).read_text()).items():
        os.truncate(copy / name, size)


def main() -> None:
    """Compact every shard under a store's root (an image's index, once built)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="the store's root (RETRIEVAL_EDGE_PATH)")
    args = parser.parse_args()
    for shard in sorted(p for p in args.root.iterdir() if (p / "segments").is_dir()):
        print(f"{shard.name}: {compact(shard) / 1e6:.1f} MB of zero tails trimmed")


if __name__ == "__main__":
    main()
