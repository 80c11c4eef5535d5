"""What the ranker's feature groups and its models cost per query, in-process, on the served index.

``python -m devtools.bench.feature_cost`` times, over every test query's real candidate set
(located once, as the served ranking reads it), the lexical kNN votes, the document columns, the
judged-by field, the nudged cosines and the ranker's scoring (all its models), then the whole
ranking as served (right after the query's encoding, its caches cold: top 10 with abstracts, and
as the purple agent asks, top 20 without) and again at once (warm), medians; the process's CPU
per ranking (every thread: the store's too); and the CPU of encoding a query alone and in passes
of 8, as the MCP server batches concurrent queries. Run it on a quiet machine;
``RETRIEVAL_COLLECTION=<version>`` times another index version of the same store.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from services.nfcorpus.dataset import load_qrels, load_queries
from services.retrieval.encoders.dense import OnnxMiniLM
from services.retrieval.indexing.training import SEEDS
from services.retrieval.query.pipeline import RankingPipeline
from services.retrieval.settings import RetrievalSettings
from services.retrieval.store import open_store

#: What the purple agent asks the MCP server for: 20 candidates, titles without abstracts.
PURPLE_TOP_K = 20


def _timed(run: Callable[..., object], *args: Any) -> float:
    start = time.perf_counter()
    run(*args)
    return time.perf_counter() - start


def _encode_cpu(pipeline: RankingPipeline, texts: list[str], batch: int) -> float:
    """CPU ms per query of encoding ``texts`` in passes of ``batch`` (the MCP server's batching)."""
    started = time.process_time()
    for i in range(0, len(texts), batch):
        pipeline.encode_many(texts[i : i + batch])
    return (time.process_time() - started) * 1000 / len(texts)


def main() -> None:
    settings = RetrievalSettings()
    store = open_store(settings.store.model_copy(update={"edge_private_copy": True}))
    try:
        pipeline = RankingPipeline(store, OnnxMiniLM(threads=1), settings)
        sup = pipeline.tables
        if sup is None or sup.ranker is None:
            raise SystemExit("the served index has no supervised side: run make index")
        queries = load_queries(settings.data_dir)
        lexical, docs, judged, nudged, model, cold, warm, lean = [], [], [], [], [], [], [], []
        for q in sorted(load_qrels(settings.data_dir, "test")):
            encoded = pipeline.encode(queries[q])
            cs = pipeline.candidate_set(encoded)
            terms, at = encoded.terms, cs.candidates.located
            lexical.append(_timed(sup.lexical.columns, terms, at))
            docs.append(_timed(sup.doc_table.columns, cs.candidates, terms))
            judged.append(_timed(sup.judged_by.scores, terms, at))
            nudged.append(_timed(sup.nudged.cosines, encoded.dense, at))
            model.append(_timed(sup.ranker.score, cs.features))
            encoded = pipeline.encode(queries[q])  # the model's arithmetic evicts the caches
            cold.append(_timed(pipeline.rank, encoded, 10))
            warm.append(_timed(pipeline.rank, encoded, 10))
            encoded = pipeline.encode(queries[q])
            lean.append(_timed(pipeline.rank, encoded, PURPLE_TOP_K, False))
        encodings = [
            pipeline.encode(queries[q]) for q in sorted(load_qrels(settings.data_dir, "test"))
        ]
        started = time.process_time()
        for encoded in encodings:
            pipeline.rank(encoded, 10)
        cpu_ms = (time.process_time() - started) * 1000 / len(encodings)
        texts = [queries[q] for q in sorted(load_qrels(settings.data_dir, "test"))]
        alone_ms, batched_ms = _encode_cpu(pipeline, texts, 1), _encode_cpu(pipeline, texts, 8)
    finally:
        store.close()
    ms = {name: statistics.median(v) * 1000 for name, v in
          (("lexical votes", lexical), ("document columns", docs), ("judged-by field", judged),
           ("nudged cosines", nudged), (f"the ranker ({len(SEEDS)} models)", model),
           ("ranking after encoding", cold), ("the same ranking again", warm),
           (f"ranking after encoding, top {PURPLE_TOP_K} without abstracts", lean))}  # fmt: skip
    for name, value in ms.items():
        print(f"{name}: {value:.3f} ms median over {len(model)} test queries")
    print(
        f"process CPU per ranking (every thread): {cpu_ms:.3f} ms, mean over {len(model)} queries"
    )
    print(f"encoding CPU per query: alone {alone_ms:.3f} ms, in passes of 8 {batched_ms:.3f} ms")


if __name__ == "__main__":
    main()
