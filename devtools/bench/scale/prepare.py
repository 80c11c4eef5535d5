"""Each size's BEIR folder and its vectors in the indexer's cache, ready for the ordinary indexer.

For every size: the real documents (a prefix of NFCorpus, all of it by default) and as many
distractors as the size lacks, written by :mod:`.corpus`; their vectors (real for the real
documents, composed for the distractors, :mod:`.vectors`) written as the indexer's own
checkpoints of that folder's chunks. The distractors of all sizes come from one draw, so a smaller size's
distractors are the first of a larger one's and the pool's parts are encoded once for all.
The composition's error is measured once, on the first distractors.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from devtools.bench.scale.corpus import (
    Folder,
    Params,
    Pool,
    distractor_documents,
    recipes,
    source_fingerprint,
    write_folder,
)
from devtools.bench.scale.vectors import (
    compose,
    composition_error,
    encoded,
    real_vectors,
    used_parts,
    write_for_indexer,
)
from services.nfcorpus.dataset import iter_corpus, load_corpus, load_qrels, load_queries
from services.retrieval.encoders.dense import DenseEncoder, Matrix
from services.retrieval.settings import RetrievalSettings
from services.retrieval.text import document_text

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Plan:
    """What to build: sizes, the real documents they start with, and the generator's settings."""

    source: Path
    work: Path
    cache_dir: Path
    sizes: tuple[int, ...]
    base_documents: int | None = None
    seed: int = 53
    sentences: tuple[int, int] = (4, 12)
    measure: int = 1000


@dataclass(frozen=True, slots=True)
class Prepared:
    """The folders by size, the chunks of vectors each one's indexer reads, the measured error."""

    base_documents: int
    folders: dict[int, Folder]
    chunks: dict[int, int]
    error: dict[str, Any]


def size_folder(work: Path, size: int) -> Path:
    """Where one size's data, stores and logs live."""
    return work / f"n{size}"


def test_query_vectors(encoder: DenseEncoder, source: Path, cache_dir: Path) -> Matrix:
    """The judged test queries' vectors, in sorted id order (cached like any encoded texts)."""
    queries = load_queries(source)
    ids = sorted(q for q in load_qrels(source, "test") if q in queries)
    return encoded(encoder, [queries[q] for q in ids], cache_dir, "queries")


def prepare(plan: Plan, encoder: DenseEncoder) -> Prepared:
    """Write every size's folder and vectors; measure the composed vectors' error."""
    source_docs = load_corpus(plan.source)
    base = source_docs[: plan.base_documents] if plan.base_documents else source_docs
    too_small = [n for n in plan.sizes if n < len(base)]
    if too_small:
        raise ValueError(f"sizes {too_small} are below the {len(base)} real documents")
    pool = Pool.of(base)
    drawn = recipes(pool, max(plan.sizes) - len(base), plan.seed, plan.sentences)
    log.info("pool: %d texts; %d distractors drawn at most", len(pool.texts), len(drawn))
    chunk = RetrievalSettings().index_chunk
    base_vectors = real_vectors(encoder, base, plan.cache_dir, chunk)
    parts = used_parts(drawn)
    part_vectors = encoded(encoder, [pool.texts[i] for i in parts], plan.cache_dir, "parts")
    composed = compose(drawn, pool, parts, part_vectors)
    error = measure_error(plan, encoder, pool, drawn, composed, base_vectors)
    folders, chunks = {}, {}
    fingerprint = source_fingerprint(base)
    for size in sorted(plan.sizes):
        extra = size - len(base)
        params = Params(len(base), extra, plan.seed, *plan.sentences, fingerprint)
        folder = write_folder(
            size_folder(plan.work, size) / "data", plan.source, base, pool, drawn[:extra], params
        )
        vectors = np.concatenate([base_vectors, composed[:extra]]).astype(np.float32)
        chunks[size] = write_for_indexer(
            plan.cache_dir, encoder, iter_corpus(folder.path), vectors, chunk
        )
        folders[size] = folder
    return Prepared(len(base), folders, chunks, error)


def measure_error(
    plan: Plan,
    encoder: DenseEncoder,
    pool: Pool,
    drawn: Sequence[Any],
    composed: Matrix,
    base_vectors: Matrix,
) -> dict[str, Any]:
    """The first ``plan.measure`` distractors encoded for real against their composed vectors."""
    count = min(plan.measure, len(drawn))
    if count == 0:
        return {"measured": 0}
    texts = [document_text(d) for d in distractor_documents(pool, drawn[:count])]
    real = encoded(encoder, texts, plan.cache_dir, "distractors")
    queries = test_query_vectors(encoder, plan.source, plan.cache_dir)
    error = composition_error(composed[:count], real, base_vectors, queries)
    log.info("composed vectors against real ones: %s", error)
    return error
