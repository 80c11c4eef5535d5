"""The NFCorpus files in BEIR format: documents, queries and relevance judgements.

Files are read from a folder, plain or gzipped; by default the shared copy beside the repository
(``../shared/data/nfcorpus``), never a copy inside it. :mod:`services.nfcorpus.download` fills an
empty folder from the official archive.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterable, Iterator
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


def iter_corpus(folder: Path, limit: int | None = None) -> Iterator[Document]:
    """The documents in file order, one at a time (BEIR's extra ``metadata`` is ignored).

    Only the document being read is held: a build streams a corpus of any size through this.
    """
    if limit is not None and limit <= 0:
        return
    for count, row in enumerate(_iter_jsonl(folder, "corpus.jsonl"), start=1):
        yield Document(str(row["_id"]), str(row.get("title") or ""), str(row["text"]))
        if limit is not None and count >= limit:
            return


def load_corpus(folder: Path, limit: int | None = None) -> list[Document]:
    """All documents in file order, as a list (:func:`iter_corpus` streams them)."""
    return list(iter_corpus(folder, limit))


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


class Fingerprint:
    """A short hash of documents' content, fed one document at a time.

    The key of anything computed from those documents (a version's name, a chunk's vectors).
    """

    def __init__(self, salt: str = "") -> None:
        """An empty fingerprint; a ``salt`` (a model's name, say) is hashed first."""
        self._digest = hashlib.sha256()
        if salt:
            self._digest.update(salt.encode())
            self._digest.update(b"\0")

    def add(self, doc: Document) -> None:
        """Hash one more document (its id, title and text, each ended by a NUL)."""
        for part in (doc.doc_id, doc.title, doc.text):
            self._digest.update(part.encode())
            self._digest.update(b"\0")

    def hex(self) -> str:
        """The fingerprint of the documents added so far (16 hex digits)."""
        return self._digest.hexdigest()[:16]


def corpus_fingerprint(docs: Iterable[Document]) -> str:
    """The :class:`Fingerprint` of these documents, in order."""
    fingerprint = Fingerprint()
    for doc in docs:
        fingerprint.add(doc)
    return fingerprint.hex()
