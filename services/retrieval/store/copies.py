"""Private copies of embedded shards: sparse, owned by one process, swept once it is gone.

qdrant-edge lets one process open a shard directory, so each server worker reads its own copy.
Shard files are mostly holes (their apparent size is several times their data), so copies keep
the holes instead of filling them in. A copy lives under ``<tmp>/nfcorpus-shard-copies/<pid>-<start>/``:
the owner removes it when it closes the store, and any process that makes copies first removes
those whose owner has exited (killed with SIGKILL, or a container restarted with /tmp kept),
recognised by a pid that no longer runs with the recorded start time. Each store of a process
copies into a folder of its own there. A copy of a compacted shard (:mod:`.compact`, an image's
index) gets its files' sizes back as holes, so it opens as the shard was built.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import BinaryIO

from services.retrieval.store import compact

log = logging.getLogger(__name__)

COPIES_ROOT = Path(tempfile.gettempdir()) / "nfcorpus-shard-copies"
#: Files of a rebuilt (immutable) segment that qdrant-edge opens read-only, whatever the calls
#: made on it: the dense vectors, their int8 copies, the HNSW graph and the BM25 inverted index
#: (checked with the files made immutable, which refuses any opening for writing;
#: docs/scale.md). The payload pages and the stored sparse vectors are mapped for writing,
#: though never written by a search, so they are copied.
SHARED_FILES = frozenset(
    {"matrix.dat", "quantized.data", "graph.bin", "links_compressed.bin", "inverted_index.dat"}
)
_BLOCK = 64 * 1024  # the granularity at which zeros become holes
_ZEROS = bytes(_BLOCK)
_CHUNK = 1 << 20


def _start_time(pid: int) -> str | None:
    """When ``pid`` started (clock ticks since boot), or None if no such process runs."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22; the command name (field 2) may hold spaces, so count after its closing ")".
    return stat.rsplit(")", 1)[1].split()[19]


def owner_tag(pid: int | None = None) -> str:
    """``<pid>-<start time>`` of a process: unique even when pids are reused."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}-{_start_time(pid) or 'unknown'}"


def _owner_alive(tag: str) -> bool:
    pid, _, started = tag.partition("-")
    if not pid.isdigit():
        return False
    return _start_time(int(pid)) == started


def sweep(root: Path = COPIES_ROOT) -> int:
    """Remove the copies of processes that no longer run; returns how many folders went."""
    if not root.is_dir():
        return 0
    removed = 0
    for folder in root.iterdir():
        if folder.is_dir() and not _owner_alive(folder.name):
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    if removed:
        log.info("removed %d shard copies left by exited processes under %s", removed, root)
    return removed


def private_folder(root: Path = COPIES_ROOT) -> Path:
    """A new folder for one store's copies, under this process's own folder."""
    owner = root / owner_tag()
    owner.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="store-", dir=owner))


def remove(folder: Path) -> None:
    """Remove a store's copies, and its process's folder once no other store uses it."""
    shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):  # another store of this process still has copies there
        folder.parent.rmdir()


def copy_file_sparse(source: Path, target: Path) -> None:
    """Copy one file's data regions only; its holes stay holes (same size, same bytes).

    Blocks of zeros inside data regions become holes too: a shard baked into an image layer has
    lost its holes (the layer stores them as written zeros, docs/image.md), and each server's
    private copy under /tmp would otherwise hold them in full.
    """
    with open(source, "rb") as src, open(target, "wb") as dst:
        size = os.fstat(src.fileno()).st_size
        offset = 0
        while offset < size:
            try:
                start = os.lseek(src.fileno(), offset, os.SEEK_DATA)
            except OSError:  # ENXIO: only a hole is left
                break
            end = os.lseek(src.fileno(), start, os.SEEK_HOLE)
            src.seek(start)
            dst.seek(start)
            remaining = end - start
            while remaining > 0:
                chunk = src.read(min(_CHUNK, remaining))
                if not chunk:
                    break
                _write_holey(dst, chunk)
                remaining -= len(chunk)
            offset = end
        dst.truncate(size)


def _write_holey(dst: BinaryIO, chunk: bytes) -> None:
    """Write ``chunk`` at the current offset, skipping (leaving holes for) all-zero blocks."""
    for at in range(0, len(chunk), _BLOCK):
        block = chunk[at : at + _BLOCK]
        if block == _ZEROS[: len(block)]:
            dst.seek(len(block), os.SEEK_CUR)
        else:
            dst.write(block)


def copy_tree_sparse(source: Path, target: Path) -> None:
    """``shutil.copytree`` with :func:`copy_file_sparse` for every file, or a link to it.

    The files the engine maps read-only (:data:`SHARED_FILES`) are linked, not copied: every
    worker then shares one copy of them in the page cache, and a worker's start-up and its
    share of ``/tmp`` grow only with what the engine may write. A compacted ``source`` is copied
    without its record of sizes, and its files get their sizes back in the copy
    (:func:`.compact.restore_sizes`); a file it trimmed is copied, never linked.
    """
    trimmed = compact.trimmed(source)

    def copy(src: str, dst: str) -> str:
        path = Path(src)
        if path.name in SHARED_FILES and path.relative_to(source).as_posix() not in trimmed:
            os.symlink(path.resolve(), dst)
            return dst
        copy_file_sparse(path, Path(dst))
        shutil.copystat(src, dst)
        return dst

    def ignore(folder: str, names: list[str]) -> list[str]:
        return [compact.SIZES] if Path(folder) == source else []

    shutil.copytree(source, target, copy_function=copy, ignore=ignore)
    if compact.is_compacted(source):
        compact.restore_sizes(source, target)
