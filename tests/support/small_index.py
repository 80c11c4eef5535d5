"""A small NFCorpus slice for fast tests (the documents judged for the first test queries) and
its index in an embedded store."""

from __future__ import annotations

import gzip
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from services.nfcorpus.dataset import DEFAULT_DATA_DIR, load_corpus, load_qrels
from services.retrieval.encoders.dense import OnnxMiniLM
from services.retrieval.indexing.index import build_index
from services.retrieval.settings import ExperimentSettings, RetrievalSettings, StoreSettings
from services.retrieval.store import open_store

SHARED_DATA = DEFAULT_DATA_DIR
SUBSET_QUERIES = 30
# Judged documents kept per query, best grades first: encoding is the slow part of a cold run
# (about 17 documents a second on 2 cores), so the slice stays near 450 documents.
JUDGED_PER_QUERY = 12
DISTRACTORS = 100


def make_subset(target: Path, source: Path = SHARED_DATA) -> list[str]:
    """Write a BEIR folder with judged docs of the first test queries plus distractors.

    Returns those test query ids.
    """
    qrels = load_qrels(source, "test")
    query_ids = sorted(qrels)[:SUBSET_QUERIES]
    keep = {
        d
        for q in query_ids
        for d in sorted(qrels[q], key=lambda d: (-qrels[q][d], d))[:JUDGED_PER_QUERY]
    }
    docs = load_corpus(source)
    extra = [d.doc_id for d in docs if d.doc_id not in keep][:DISTRACTORS]
    keep.update(extra)
    target.mkdir(parents=True, exist_ok=True)
    with gzip.open(target / "corpus.jsonl.gz", "wt", encoding="utf-8") as out:
        for d in docs:
            if d.doc_id in keep:
                out.write(json.dumps({"_id": d.doc_id, "title": d.title, "text": d.text}) + "\n")
    for name in ("queries.jsonl.gz",):
        shutil.copy(source / name, target / name)
    (target / "qrels").mkdir(exist_ok=True)
    for split in ("train", "dev", "test"):
        shutil.copy(source / "qrels" / f"{split}.tsv", target / "qrels" / f"{split}.tsv")
    return query_ids


@dataclass(frozen=True)
class SmallIndex:
    """A BEIR folder with an NFCorpus slice, indexed into an embedded store."""

    settings: RetrievalSettings
    query_ids: list[str]

    def env(self, private_copy: bool = False) -> dict[str, str]:
        """Settings of a server over this index; a second server needs a private copy (the
        suite's shared MCP server holds the shard itself open)."""
        s = self.settings
        return {
            "RETRIEVAL_DATA_DIR": str(s.data_dir),
            "RETRIEVAL_STORE": "embedded",
            "RETRIEVAL_EDGE_PATH": str(s.store.edge_path),
            "RETRIEVAL_CACHE_DIR": str(s.cache_dir),
            "RETRIEVAL_EDGE_PRIVATE_COPY": str(private_copy).lower(),
        }


def build_small_index(root: Path, encoder: OnnxMiniLM) -> SmallIndex:
    """The slice under ``root/data``, indexed into ``root/edge``."""
    query_ids = make_subset(root / "data")
    # The vector cache lives outside the repo and survives between runs (keyed by content).
    # A slice of the training queries keeps the ranker's training to seconds.
    settings = RetrievalSettings(
        data_dir=root / "data",
        store=StoreSettings(edge_path=root / "edge"),
        experiment=ExperimentSettings(max_train_queries=500),
    )
    store = open_store(settings.store)
    try:
        build_index(settings, store, encoder)
    finally:
        store.close()
    return SmallIndex(settings, query_ids)
