"""A small NFCorpus slice for fast tests: the documents judged for the first test queries."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from services.nfcorpus.dataset import DEFAULT_DATA_DIR, load_corpus, load_qrels

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
