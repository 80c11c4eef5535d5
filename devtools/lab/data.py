"""The ranker lab's data: every judged query's candidates and feature rows, computed once.

Used by ``python -m devtools.lab.ranker_lab`` (``make ranker-lab``):

1. builds (or confirms) the train-only index of ``make eval-quality`` (``var/quality``: the kNN
   collection holds train queries only, so dev and test are unseen);
2. computes every train, dev and test query's candidates and feature rows once, exactly as the
   indexer does (a train query leaves itself out of its neighbours), and caches them in
   ``var/lab/candidates.pkl`` (``--fresh`` recomputes);
3. the experiments (:mod:`.experiments`) train rankers on these rows.

Every figure is trec_eval NDCG over all of a split's queries (a query without candidates scores
0). Settings are chosen on dev; test is printed beside it only to report, never to choose.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from devtools.eval.quality import HONEST, QUALITY_STORE
from harness.processes import REPO
from services.nfcorpus.dataset import Split, load_qrels, load_queries
from services.nfcorpus.measures import ndcg_at_k
from services.retrieval.encoders.dense import OnnxMiniLM
from services.retrieval.indexing.training import Grouped
from services.retrieval.query.features import FEATURES
from services.retrieval.query.pipeline import RankingPipeline
from services.retrieval.settings import RetrievalSettings
from services.retrieval.store import open_store

CACHE = REPO / "var" / "lab" / "candidates.pkl"
SPLITS: tuple[Split, ...] = ("train", "dev", "test")


@dataclass(frozen=True, slots=True)
class Query:
    """One query's candidates, their feature rows and its judgements (graded qrels)."""

    query_id: str
    text: str
    doc_ids: list[str]
    rows: npt.NDArray[np.float32]
    judged: dict[str, int]


Lab = dict[str, list[Query]]  # split -> queries


def _settings() -> RetrievalSettings:
    return RetrievalSettings().updated(
        supervision="train",
        store={"edge_path": QUALITY_STORE},
        mode="full",
        ranker={"enabled": False},
    )


def _build_index() -> None:
    cmd = [sys.executable, "-m", "services.retrieval.indexing.index"]
    subprocess.run(cmd, env={**os.environ, **HONEST}, cwd=REPO, check=True)


def collect() -> Lab:
    """Candidates and feature rows of every judged train, dev and test query."""
    settings = _settings()
    queries = load_queries(settings.data_dir)
    store = open_store(settings.store.model_copy(update={"edge_private_copy": True}))
    try:
        pipeline = RankingPipeline(store, OnnxMiniLM(threads=1), settings, leave_one_out=True)
        lab: Lab = {}
        for split in SPLITS:
            qrels = load_qrels(settings.data_dir, split)
            ids = sorted(q for q in qrels if q in queries)
            out = []
            for q in ids:
                encoded = pipeline.encode(queries[q])
                own = split == "train"  # train queries vote: each leaves itself out
                cs = pipeline.candidate_set(encoded, q if own else None, qrels[q] if own else None)
                out.append(Query(q, queries[q], cs.doc_ids, cs.features, dict(qrels[q])))
            lab[split] = out
            print(f"{split}: {len(out)} queries", flush=True)
        return lab
    finally:
        store.close()


def load(fresh: bool) -> Lab:
    """The cached candidates, computed (and the train-only index built) when missing.

    The cache belongs to one feature list: rows of other features are recomputed.
    """
    if CACHE.exists() and not fresh:
        cached = pickle.loads(CACHE.read_bytes())
        if isinstance(cached, dict) and cached.get("features") == FEATURES:
            lab: Lab = cached["lab"]
            return lab
    _build_index()  # builds it, or confirms in a second that it is current
    lab = collect()
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    CACHE.write_bytes(pickle.dumps({"features": FEATURES, "lab": lab}))
    return lab


def grouped(queries: list[Query], extra: list[npt.NDArray[np.float32]] | None = None) -> Grouped:
    """Training rows of ``queries`` (with ``extra`` columns per query, when given)."""
    kept = [i for i, q in enumerate(queries) if len(q.doc_ids)]
    rows = [_with(queries[i].rows, extra[i] if extra else None) for i in kept]
    labels = [
        np.array([queries[i].judged.get(d, 0) for d in queries[i].doc_ids], dtype=np.float32)
        for i in kept
    ]
    return Grouped(np.concatenate(rows), np.concatenate(labels), [len(r) for r in rows])


def _with(
    rows: npt.NDArray[np.float32], extra: npt.NDArray[np.float32] | None
) -> npt.NDArray[np.float32]:
    return rows if extra is None else np.hstack([rows, extra]).astype(np.float32)


def ndcg(queries: list[Query], scores: list[npt.NDArray[np.float64]]) -> tuple[float, float]:
    """Mean trec_eval NDCG@5 and @10 of ranking each query's candidates by ``scores``."""
    at5, at10 = [], []
    for q, s in zip(queries, scores, strict=True):
        order = sorted(range(len(q.doc_ids)), key=lambda i: (-s[i], q.doc_ids[i]))
        ranked = [q.doc_ids[i] for i in order[:10]]
        at5.append(ndcg_at_k(ranked, q.judged, 5))
        at10.append(ndcg_at_k(ranked, q.judged, 10))
    return float(np.mean(at5)), float(np.mean(at10))
