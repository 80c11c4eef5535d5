"""Fetching the official BEIR NFCorpus archive into an empty data folder, md5-checked.

A connected machine needs nothing prepared by hand: when the folder holds no corpus,
:func:`ensure_dataset` downloads the archive, checks its md5 and unpacks it there.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import tempfile
import zipfile
from pathlib import Path

import httpx

from services.nfcorpus.dataset import DatasetError, has_corpus

log = logging.getLogger(__name__)


def ensure_dataset(folder: Path, url: str, md5: str, timeout_s: float = 120.0) -> Path:
    """Return ``folder``, first downloading and unpacking the BEIR archive if it has no corpus."""
    if has_corpus(folder):
        return folder
    log.info("no corpus in %s: downloading %s", folder, url)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        archive = Path(tmp) / "dataset.zip"
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
        _unpack(archive, folder)
    if not has_corpus(folder):
        raise DatasetError(f"the archive from {url} holds no corpus.jsonl")
    return folder


def _unpack(archive: Path, folder: Path) -> None:
    """Extract the archive's files into ``folder``, dropping its top-level directory."""
    with zipfile.ZipFile(archive) as zf:
        for member in zf.infolist():
            parts = Path(member.filename).parts
            if member.is_dir() or len(parts) < 2 or ".." in parts or parts[0].startswith("/"):
                continue
            target = folder.joinpath(*parts[1:])
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(member) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
