"""On-disk cache of encoded texts held whole (the training queries), keyed by model and content.

Encoding the voting and held-out queries takes a while on 2 cores; the cache makes re-runs on
the same machine take seconds. It is only ever an accelerator: a missing, unreadable or
mis-shaped file is ignored and the vectors are computed again. The corpus's documents are
never held whole: their vectors are checkpointed chunk by chunk (:mod:`.chunks`).
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from services.retrieval.encoders.dense import Matrix

log = logging.getLogger(__name__)


def cached_vectors(cache_dir: Path, key: str, rows: int, compute: Callable[[], Matrix]) -> Matrix:
    """``compute()``'s result, read from ``cache_dir/key.npy`` when a valid copy is there."""
    path = cache_dir / f"{key}.npy"
    try:
        vectors: Matrix = np.load(path)
        if vectors.shape[0] == rows and vectors.dtype == np.float32:
            log.info("document vectors from cache %s", path)
            return vectors
        log.warning(
            "cache %s has shape %s, expected %d rows: recomputing", path, vectors.shape, rows
        )
    except (OSError, ValueError) as e:
        log.info("no usable vector cache at %s (%s)", path, type(e).__name__)
    vectors = compute()
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        # Write then rename: a concurrent reader never sees a half-written file.
        with tempfile.NamedTemporaryFile(dir=cache_dir, suffix=".npy", delete=False) as tmp:
            np.save(tmp, vectors)
        os.replace(tmp.name, path)
    except OSError as e:
        log.warning("could not write vector cache %s: %s", path, e)
    return vectors
