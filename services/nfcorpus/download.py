"""Fetching the official BEIR NFCorpus archive into a data folder, md5-checked, whole or not at all.

A connected machine needs nothing prepared by hand: when the folder lacks a file the loaders
read (:data:`~services.nfcorpus.dataset.DATASET_FILES`), :func:`ensure_dataset` downloads the
archive, checks its md5 and unpacks it into a staging folder beside the target (same parent, so
same filesystem). Only when every file is there does the staging folder take the target's name,
in one rename: a process killed on the way (an indexer pod evicted mid-unpack) leaves the target
as it was, and the next run starts over instead of accepting half a data set.

A target that exists but is not whole (files missing, or the leftovers of a download cut short by
an older version that unpacked in place) is logged, set aside beside it as
``<name>.incomplete-<random>`` and never deleted; an empty one is simply replaced. Staging folders
(``.<name>.download-<random>``) of downloads that were killed are removed, with a log line, once
they are old enough that no download can still be writing them.
"""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import shutil
import tempfile
import time
import zipfile
from pathlib import Path

import httpx

from services.nfcorpus.dataset import DatasetError, missing_files

log = logging.getLogger(__name__)

#: A staging folder untouched for this long belongs to a download that was killed: far longer
#: than any download runs (its timeout is per read, so a slow link keeps touching the folder).
STALE_STAGING_S = 6 * 3600


def ensure_dataset(folder: Path, url: str, md5: str, timeout_s: float = 120.0) -> Path:
    """Return ``folder``, first putting the BEIR archive's files there unless it holds them all."""
    problems = problems_of(folder)
    if not problems:
        return folder
    if folder.exists():
        log.warning("%s is not a whole data set (%s): downloading %s", folder, problems, url)
    else:
        log.info("no data set in %s: downloading %s", folder, url)
    folder.parent.mkdir(parents=True, exist_ok=True)
    _sweep_stale_staging(folder)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.download-", dir=folder.parent))
    try:
        archive = staging / "dataset.zip"
        _download(url, md5, archive, timeout_s)
        unpacked = staging / folder.name
        try:
            _unpack(archive, unpacked)
        except (zipfile.BadZipFile, EOFError, OSError) as e:
            raise DatasetError(f"the archive from {url} could not be unpacked: {e}") from e
        missing = missing_files(unpacked)
        if missing:
            raise DatasetError(f"the archive from {url} lacks {', '.join(missing)}")
        _place(unpacked, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def problems_of(folder: Path) -> str:
    """Why ``folder`` is not a whole data set ("" when it is): files it lacks, an unpack cut short.

    An older version of this module unpacked in place beside its archive, in ``tmp*/dataset.zip``
    inside the folder; that archive left behind means the unpack was cut short, even if every
    file exists (the last one may be truncated).
    """
    problems = [f"no {name}" for name in missing_files(folder)]
    problems += [f"unfinished download {p.parent.name}/" for p in folder.glob("tmp*/dataset.zip")]
    return ", ".join(problems)


def _download(url: str, md5: str, archive: Path, timeout_s: float) -> None:
    """Stream ``url`` into ``archive``; :class:`DatasetError` unless it arrives with ``md5``."""
    digest = hashlib.md5(usedforsecurity=False)
    try:
        with (
            httpx.stream("GET", url, timeout=timeout_s, follow_redirects=True) as response,
            open(archive, "wb") as out,
        ):
            response.raise_for_status()
            for chunk in response.iter_bytes(1 << 16):
                digest.update(chunk)
                out.write(chunk)
    except httpx.HTTPError as e:
        raise DatasetError(f"download of {url} failed: {e}") from e
    if digest.hexdigest() != md5:
        raise DatasetError(f"{url}: md5 {digest.hexdigest()} does not match expected {md5}")


def _unpack(archive: Path, folder: Path) -> None:
    """Extract the archive's files into ``folder``, dropping its top-level directory."""
    folder.mkdir()
    with zipfile.ZipFile(archive) as zf:
        for member in zf.infolist():
            parts = Path(member.filename).parts
            if member.is_dir() or len(parts) < 2 or ".." in parts or parts[0].startswith("/"):
                continue
            target = folder.joinpath(*parts[1:])
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(member) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
                # On disk before the rename publishes the folder: a node that loses power must
                # not come back with the folder in place and its files empty.
                dst.flush()
                os.fsync(dst.fileno())


def _place(unpacked: Path, folder: Path) -> None:
    """Give ``unpacked`` the name ``folder`` in one rename, setting aside a target not whole."""
    try:
        os.rename(unpacked, folder)  # also replaces an empty folder: nothing there to keep
        return
    except OSError as e:
        if not folder.exists():
            raise DatasetError(f"could not move the data set into {folder}: {e}") from e
        if folder.is_dir() and not problems_of(folder):
            # Another process's download landed first (two pods on one volume): use it.
            log.info("%s was filled by another download meanwhile: keeping it", folder)
            return
    # A unique empty folder to rename onto: the name cannot be taken by anyone else meanwhile.
    aside = Path(tempfile.mkdtemp(prefix=f"{folder.name}.incomplete-", dir=folder.parent))
    try:
        os.rename(folder, aside)
    except OSError as e:
        aside.rmdir()
        raise DatasetError(
            f"could not set aside {folder} to put the downloaded data set there ({e}): the "
            "folder is replaced by a rename, so it must not be a mount point itself"
        ) from e
    log.warning("set aside the incomplete %s as %s (kept: remove it by hand)", folder, aside)
    try:
        os.rename(unpacked, folder)
    except OSError as e:
        if folder.is_dir() and not problems_of(folder):
            log.info("%s was filled by another download meanwhile: keeping it", folder)
            return
        raise DatasetError(f"could not move the data set into {folder}: {e}") from e


def _sweep_stale_staging(folder: Path) -> None:
    """Remove the staging folders of ``folder``'s downloads that were killed long ago."""
    now = time.time()
    for staging in folder.parent.glob(f".{glob.escape(folder.name)}.download-*"):
        try:
            touched = max(p.stat().st_mtime for p in (staging, *staging.iterdir()))
        except OSError:
            continue  # gone meanwhile, or not a folder: not ours to judge
        if now - touched > STALE_STAGING_S:
            log.warning("removing %s, left by a download that never finished", staging)
            shutil.rmtree(staging, ignore_errors=True)
