"""The NFCorpus files in BEIR format: documents, queries and relevance judgements.

Files are read from a folder, plain or gzipped; by default the shared copy beside the repository
(``../shared/data/nfcorpus``), never a copy inside it. :mod:`services.nfcorpus.download` fills an
empty folder from the official archive.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TextIO

# The official archive; services.nfcorpus.download fetches it (its HTTP client is imported only
# there, so a server that reads these settings does not load it).
BEIR_NFCORPUS_URL = (
    "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/nfcorpus.zip"
)
BEIR_NFCORPUS_MD5 = "a89dba18a62ef92f7d323ec890a0d38d"

#: The shared BEIR folder beside the repository (``../shared/data/nfcorpus``).
DEFAULT_DATA_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "nfcorpus"

Split = Literal["train", "dev", "test"]
#: query id -> doc id -> grade (BEIR qrels; NFCorpus grades are 1 and 2).
Qrels = dict[str, dict[str, int]]
#: Every file the loaders below read, as the BEIR archive lays them out; the jsonl files may be
#: gzipped instead. A folder lacking any of them is not a dataset (a download cut short, say).
DATASET_FILES = (
    "corpus.jsonl",
    "queries.jsonl",
    "qrels/train.tsv",
    "qrels/dev.tsv",
    "qrels/test.tsv",
)


@dataclass(frozen=True, slots=True)
class Document:
    """One corpus entry."""

    doc_id: str
    title: str
    text: str


class DatasetError(RuntimeError):
    """The dataset is missing, corrupt or could not be fetched."""


def _open_text(folder: Path, name: str) -> TextIO:
    plain, packed = folder / name, folder / f"{name}.gz"
    if plain.exists():
        return open(plain, encoding="utf-8")
    if packed.exists():
        return gzip.open(packed, "rt", encoding="utf-8")
    raise DatasetError(f"{name} (or {name}.gz) not found in {folder}")


def missing_files(folder: Path) -> list[str]:
    """The files of :data:`DATASET_FILES` that ``folder`` lacks (a gzipped jsonl file counts)."""
    return [
        name
        for name in DATASET_FILES
        if not (folder / name).is_file()
        and not (name.endswith(".jsonl") and (folder / f"{name}.gz").is_file())
    ]


def has_dataset(folder: Path) -> bool:
    """Whether ``folder`` holds every file the loaders read (:data:`DATASET_FILES`)."""
    return not missing_files(folder)


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
