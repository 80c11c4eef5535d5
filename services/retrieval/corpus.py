"""The NFCorpus files in BEIR format: documents, queries and relevance judgements.

Files are read from a folder (``RETRIEVAL_DATA_DIR``), plain or gzipped. When the folder holds no
corpus, :func:`ensure_dataset` downloads the official BEIR archive, checks its md5 and unpacks it
there, so a connected machine needs nothing prepared by hand.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TextIO

import httpx

log = logging.getLogger(__name__)

Split = Literal["train", "dev", "test"]
#: query id -> doc id -> grade (BEIR qrels; NFCorpus grades are 1 and 2).
Qrels = dict[str, dict[str, int]]


@dataclass(frozen=True, slots=True)
class Document:
    """One corpus entry."""

    doc_id: str
    title: str
    text: str


def document_text(doc: Document) -> str:
    """What the dense model and BM25 read of a document: title, then abstract."""
    return f"{doc.title} {doc.text}".strip()


class DatasetError(RuntimeError):
    """The dataset is missing, corrupt or could not be fetched."""


def _open_text(folder: Path, name: str) -> TextIO:
    plain, packed = folder / name, folder / f"{name}.gz"
    if plain.exists():
        return open(plain, encoding="utf-8")
    if packed.exists():
        return gzip.open(packed, "rt", encoding="utf-8")
    raise DatasetError(f"{name} (or {name}.gz) not found in {folder}")


def _has_corpus(folder: Path) -> bool:
    return any((folder / n).exists() for n in ("corpus.jsonl", "corpus.jsonl.gz"))


def _iter_jsonl(folder: Path, name: str) -> Iterator[dict[str, object]]:
    with _open_text(folder, name) as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as e:
                raise DatasetError(f"{name} line {number}: not JSON ({e.msg})") from e


def load_corpus(folder: Path, limit: int | None = None) -> list[Document]:
    """All documents in file order (BEIR's extra ``metadata`` field is ignored)."""
    docs: list[Document] = []
    for row in _iter_jsonl(folder, "corpus.jsonl"):
        docs.append(Document(str(row["_id"]), str(row.get("title") or ""), str(row["text"])))
        if limit is not None and len(docs) >= limit:
            break
    return docs


def load_queries(folder: Path) -> dict[str, str]:
    """Query id -> query text, for every split."""
    return {str(row["_id"]): str(row["text"]) for row in _iter_jsonl(folder, "queries.jsonl")}


def load_qrels(folder: Path, split: Split) -> Qrels:
    """Judgements of one split; grade-0 lines are kept out (they mark nothing relevant)."""
    path = folder / "qrels" / f"{split}.tsv"
    if not path.exists():
        raise DatasetError(f"qrels file not found: {path}")
    qrels: Qrels = {}
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            fields = line.rstrip("\n").split("\t")
            if number == 1 and fields[0] == "query-id":
                continue
            if len(fields) != 3:
                raise DatasetError(f"{path} line {number}: expected 3 tab-separated fields")
            query_id, doc_id, grade = fields
            if int(grade) > 0:
                qrels.setdefault(query_id, {})[doc_id] = int(grade)
    return qrels


def corpus_fingerprint(docs: list[Document]) -> str:
    """A short hash of the documents' content: the cache key for anything computed from them."""
    digest = hashlib.sha256()
    for doc in docs:
        for part in (doc.doc_id, doc.title, doc.text):
            digest.update(part.encode())
            digest.update(b"\0")
    return digest.hexdigest()[:16]


def ensure_dataset(folder: Path, url: str, md5: str, timeout_s: float = 120.0) -> Path:
    """Return ``folder``, first downloading and unpacking the BEIR archive if it has no corpus."""
    if _has_corpus(folder):
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
    if not _has_corpus(folder):
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
