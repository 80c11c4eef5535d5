"""Writing a file so that a reader, or a restart, finds the old version or the new one whole.

A process killed in the middle of a plain ``write_text`` (a pod evicted, a container restarted)
leaves a truncated file behind; whoever reads it next gets half a document. Here the text goes
to a temporary file in the same folder (a rename is atomic only within one file system), is
flushed to the disk, and is renamed over the target.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

#: Temporary files are ``.<name>.<random>`` + this, beside their target: a writer killed before
#: its rename leaves one, which :func:`leftover_temporaries` finds.
TEMPORARY_SUFFIX = ".tmp"
# The process's umask, read once (reading it means setting it): a temporary file is created
# 0600, and the file written should have the mode a plain ``open`` would give it.
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def atomic_write_text(path: Path, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` whole or not at all, creating its folder.

    The data is fsync'd before the rename (else a crash of the machine could leave the new name
    on an empty file), and the folder after it, so the rename itself lasts.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMPORARY_SUFFIX)
    try:
        with os.fdopen(fd, "w", encoding=encoding) as tmp:
            os.fchmod(tmp.fileno(), 0o666 & ~_UMASK)
            tmp.write(text)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
    _sync_folder(path.parent)


def leftover_temporaries(path: Path) -> list[Path]:
    """Temporary files of :func:`atomic_write_text` for ``path`` that a killed writer left."""
    return sorted(path.parent.glob(f".{path.name}.*{TEMPORARY_SUFFIX}"))


def _sync_folder(folder: Path) -> None:
    # Some file systems cannot open or sync a directory; the file itself is already written.
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
