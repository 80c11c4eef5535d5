"""A build's second pass: the corpus in chunks, each chunk's vectors checkpointed on disk.

Encoding is nearly all of a build's time (minutes for NFCorpus on 2 cores, hours for a million
documents). Each chunk's dense vectors are written to the cache, keyed by the model and the
chunk's content, before anything is written to the store; a build killed at any point and
started again reads every finished chunk back and encodes at most the one it was on. The same
files let several processes (or pods) encode disjoint slices of the chunks while one finishing
step writes the collection (:mod:`.index`).
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from services.nfcorpus.dataset import Document, Fingerprint
from services.retrieval.encoders.dense import DenseEncoder, Matrix
from services.retrieval.text import document_text

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Chunk:
    """Documents ``start`` to ``start + len(documents)`` of the corpus, the ``number``-th chunk."""

    number: int
    start: int
    documents: list[Document]


def chunked(documents: Iterable[Document], size: int) -> Iterator[Chunk]:
    """The documents in chunks of ``size`` (the last one shorter), holding one chunk at a time."""
    if size < 1:
        raise ValueError(f"chunk size must be at least 1, not {size}")
    batch: list[Document] = []
    number = start = 0
    for doc in documents:
        batch.append(doc)
        if len(batch) == size:
            yield Chunk(number, start, batch)
            number, start, batch = number + 1, start + size, []
    if batch:
        yield Chunk(number, start, batch)


@dataclass(frozen=True, slots=True)
class Slice:
    """Slice ``index`` of ``count``: the chunks whose number is ``index`` modulo ``count``.

    Chunks are dealt round-robin, so slices stay even whatever the corpus's length.
    """

    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ValueError(f"no slice {self.index} of {self.count}")

    def holds(self, chunk: Chunk) -> bool:
        """Whether ``chunk`` is this slice's to encode."""
        return chunk.number % self.count == self.index


def checkpoint_folder(cache_dir: Path) -> Path:
    """Where builds using the cache folder ``cache_dir`` keep their encoded chunks."""
    return cache_dir / "vectors" / "chunks"


class Checkpoints:
    """Encoded chunks as ``.npy`` files, named by the model and the chunk's content.

    A file is written to a temporary name and renamed into place, so a reader (a resumed build,
    another slice) sees a whole chunk or none; a missing, unreadable or mis-shaped file is
    ignored and the chunk encoded again.
    """

    def __init__(self, folder: Path, encoder: DenseEncoder, batch_size: int) -> None:
        """Checkpoints under ``folder`` of ``encoder``'s vectors, encoded ``batch_size`` at a time."""
        self.folder = folder
        self._encoder = encoder
        self._batch_size = batch_size

    def path(self, chunk: Chunk) -> Path:
        """Where ``chunk``'s vectors are kept."""
        key = Fingerprint(salt=self._encoder.model_id)
        for doc in chunk.documents:
            key.add(doc)
        return self.folder / f"{self._encoder.model_id}-{key.hex()}.npy"

    def load(self, chunk: Chunk) -> Matrix | None:
        """The chunk's vectors if a whole, well-shaped file holds them."""
        path = self.path(chunk)
        try:
            vectors: Matrix = np.load(path)
        except (OSError, ValueError):
            return None
        wanted = (len(chunk.documents), self._encoder.dimension)
        if vectors.shape != wanted or vectors.dtype != np.float32:
            log.warning(
                "checkpoint %s has shape %s, not %s: encoding again", path, vectors.shape, wanted
            )
            return None
        return vectors

    def save(self, chunk: Chunk, vectors: Matrix) -> None:
        """Write the chunk's vectors (atomically: a temporary file renamed into place)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=self.folder, suffix=".tmp", delete=False) as tmp:
            try:
                np.save(tmp, vectors)
            except BaseException:
                os.unlink(tmp.name)
                raise
        os.replace(tmp.name, self.path(chunk))

    def vectors(self, chunk: Chunk) -> Matrix:
        """The chunk's vectors: its checkpoint, or encoded now and checkpointed."""
        found = self.load(chunk)
        if found is not None:
            return found
        texts = [document_text(d) for d in chunk.documents]
        vectors = self._encoder.encode(texts, batch_size=self._batch_size).astype(np.float32)
        self.save(chunk, vectors)
        log.info("encoded chunk %d (%d documents)", chunk.number, len(texts))
        return vectors
