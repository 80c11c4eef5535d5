"""The corpus's dense vectors, written into the indexer's own vector cache.

Encoding a few hundred thousand documents with MiniLM on two cores takes hours, so a distractor's
vector is *composed*: every title and sentence of the pool is encoded once with the project's own
encoder, and a distractor's vector is the normalised, length-weighted mean of its parts' vectors.
The model itself mean-pools its tokens, so a part weighs what its tokens do (words stand in for
tokens), and parts past the model's token budget are dropped as the model truncates them. The
real documents are always encoded for real (the chunks an NFCorpus index encoded are reused).

The error is measured, not assumed: :func:`composition_error` encodes the first distractors for
real and reports the cosine between composed and real vectors, and what swapping one for the other
does to a dense top 10 of the test queries.

The vectors are written where the indexer looks, as its own checkpoints of the corpus's chunks
(:class:`~services.retrieval.indexing.chunks.Checkpoints`), so the ordinary
``python -m services.retrieval.indexing.index`` builds the index without encoding a document.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse

from devtools.bench.scale.corpus import Pool, Recipe, digest
from services.nfcorpus.dataset import Document
from services.retrieval.encoders.dense import MAX_TOKENS, DenseEncoder, Matrix
from services.retrieval.indexing.chunks import Checkpoints, checkpoint_folder, chunked
from services.retrieval.indexing.vector_cache import cached_vectors

log = logging.getLogger(__name__)

#: Word pieces per whitespace word, for the model's token budget in words. Chosen as the best
#: cosine of a few values on a sample of distractors (the tokenizer's own ratio is higher, but a
#: document's last tokens weigh less in context than their count); each run reports its error.
TOKENS_PER_WORD = 1.5
WORD_BUDGET = int((MAX_TOKENS - 2) / TOKENS_PER_WORD)  # less [CLS] and [SEP]
BATCH = 32
TOP = 10


def vectors_dir(cache_dir: Path) -> Path:
    """Where the indexer keeps its vector cache."""
    return cache_dir / "vectors"


def encoded(encoder: DenseEncoder, texts: Sequence[str], cache_dir: Path, kind: str) -> Matrix:
    """``texts`` encoded, read from the vector cache when a run encoded the same texts before."""
    key = f"{kind}-{encoder.model_id}-{digest(texts)}"
    return cached_vectors(
        vectors_dir(cache_dir), key, len(texts), lambda: encoder.encode(list(texts), BATCH)
    )


def real_vectors(
    encoder: DenseEncoder, base: list[Document], cache_dir: Path, chunk: int
) -> Matrix:
    """The real documents' vectors, encoded for real, chunk by chunk as the indexer encodes.

    Each chunk goes through the indexer's own checkpoints: the chunks an index of NFCorpus
    already encoded are read back, the others encoded and kept for the indexer.
    """
    kept = Checkpoints(checkpoint_folder(cache_dir), encoder, BATCH)
    parts = [kept.vectors(c) for c in chunked(base, chunk)]
    return np.concatenate(parts) if parts else np.zeros((0, encoder.dimension), np.float32)


def used_parts(drawn: Sequence[Recipe]) -> list[int]:
    """The pool texts some distractor uses, in pool order (only these are encoded)."""
    return sorted({i for r in drawn for i in (r.title, *r.body)})


def weights(drawn: Sequence[Recipe], pool: Pool, column: dict[int, int]) -> scipy.sparse.csr_array:
    """Distractors x used parts: each part's share of its distractor's tokens, within budget."""
    words = [len(t.split()) for t in pool.texts]
    rows, cols, values = [], [], []
    for row, recipe in enumerate(drawn):
        left = WORD_BUDGET
        for part in (recipe.title, *recipe.body):
            take = min(words[part], left)
            if take <= 0:
                break
            rows.append(row)
            cols.append(column[part])
            values.append(float(take))
            left -= take
    shape = (len(drawn), len(column))
    return scipy.sparse.csr_array((values, (rows, cols)), shape=shape, dtype=np.float32)


def compose(drawn: Sequence[Recipe], pool: Pool, parts: list[int], part_vectors: Matrix) -> Matrix:
    """The composed vectors of ``drawn``: normalised weighted means of their parts' vectors."""
    column = {part: j for j, part in enumerate(parts)}
    summed = np.asarray(weights(drawn, pool, column) @ part_vectors, dtype=np.float32)
    norms = np.linalg.norm(summed, axis=1, keepdims=True)
    return np.asarray(summed / np.clip(norms, 1e-12, None), dtype=np.float32)


def write_for_indexer(
    cache_dir: Path,
    encoder: DenseEncoder,
    documents: Iterable[Document],
    vectors: Matrix,
    chunk: int,
) -> int:
    """Put ``vectors`` (one row per document) in the indexer's checkpoints; how many chunks.

    A checkpoint is named by its chunk's content, not by how its vectors were made: one from
    another composition would pass the indexer's shape check, so anything but these exact
    rows is replaced (written to a temporary file and renamed over it, as the indexer does).
    """
    kept = Checkpoints(checkpoint_folder(cache_dir), encoder, BATCH)
    count = 0
    for part in chunked(documents, chunk):
        rows = vectors[part.start : part.start + len(part.documents)]
        found = kept.load(part)
        if found is None or not np.array_equal(found, rows):
            kept.save(part, np.ascontiguousarray(rows, dtype=np.float32))
        count += 1
    log.info("vectors of %d documents written as %d chunks", len(vectors), count)
    return count


def _top(queries: Matrix, corpus: Matrix, k: int = TOP) -> np.ndarray:
    """Each query's ``k`` nearest rows of ``corpus`` by cosine (exact), as sets of row numbers."""
    scores = queries @ corpus.T
    return np.argpartition(-scores, k - 1, axis=1)[:, :k]


def composition_error(
    composed: Matrix, real: Matrix, base_vectors: Matrix, query_vectors: Matrix
) -> dict[str, float | int]:
    """How far composed vectors are from real ones, and what that does to a dense top 10.

    ``composed`` and ``real`` are the same distractors' vectors. The cosines say how close each
    vector is; the retrieval effect is measured on a corpus of the real documents plus these
    distractors, searched exactly for the test queries once with composed and once with real
    distractor vectors: the mean overlap of the two top 10s, and the distractors each top 10
    holds (a composed vector that attracts queries more, or less, than the real one shows here).
    """
    cosines = np.sum(composed * real, axis=1)
    n = len(base_vectors)
    with_composed = _top(query_vectors, np.vstack([base_vectors, composed]))
    with_real = _top(query_vectors, np.vstack([base_vectors, real]))
    overlap = [len(set(a) & set(b)) / TOP for a, b in zip(with_composed, with_real, strict=True)]
    return {
        "measured": len(composed),
        "cosine_mean": float(np.mean(cosines)),
        "cosine_p5": float(np.percentile(cosines, 5)),
        "cosine_min": float(np.min(cosines)),
        "dense_top10_overlap": float(np.mean(overlap)),
        "dense_top10_distractors_composed": float(np.mean(np.sum(with_composed >= n, axis=1))),
        "dense_top10_distractors_real": float(np.mean(np.sum(with_real >= n, axis=1))),
        "queries": len(query_vectors),
    }
