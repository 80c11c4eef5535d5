"""The served ranking of every test query, and one digest of them all: "rankings unchanged" as a file.

``python -m devtools.eval.rankings --out reports/rankings.json`` runs the in-process pipeline (the code
the MCP server serves, on the index ``make index`` built) over all 323 NFCorpus test queries and
writes each query's top ``--depth`` doc ids plus a SHA-256 over all of them. A change that must
not touch ranking keeps the digest; ``--expect DIGEST`` checks it and exits 1 on a difference,
naming the first queries that differ. Only ids are hashed: scores may move in the last float bit
when arithmetic is reordered, the order they give may not.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from services.nfcorpus.dataset import load_qrels, load_queries
from services.retrieval.encoders.dense import OnnxMiniLM
from services.retrieval.query.pipeline import RankingPipeline
from services.retrieval.settings import RetrievalSettings
from services.retrieval.store import open_store

DEPTH = 100  # deeper than any caller asks (MAX_TOP_K): a change below the top 10 shows too


def test_rankings(settings: RetrievalSettings, depth: int = DEPTH) -> dict[str, list[str]]:
    """Query id -> the pipeline's top ``depth`` doc ids, for every test query."""
    queries = load_queries(settings.data_dir)
    store = open_store(settings.store.model_copy(update={"edge_private_copy": True}))
    try:
        pipeline = RankingPipeline(store, OnnxMiniLM(threads=1), settings)
        return {
            q: [r["doc_id"] for r in pipeline.search(queries[q], depth)]
            for q in sorted(load_qrels(settings.data_dir, "test"))
        }
    finally:
        store.close()


def digest(rankings: dict[str, list[str]]) -> str:
    """SHA-256 over every query's ranked ids, in query id order."""
    text = "\n".join(f"{q}\t{' '.join(ids)}" for q, ids in sorted(rankings.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("reports/rankings.json"))
    parser.add_argument("--depth", type=int, default=DEPTH)
    parser.add_argument(
        "--expect",
        help="the digest a ranking-neutral change must keep ('recorded': docs/figures.json's)",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="write the digest to docs/figures.json (make rankings)",
    )
    args = parser.parse_args()
    if args.expect == "recorded":
        from devtools.figures import load  # not in the image, where this file also runs

        args.expect = load()["rankings"]["sha256"]
    rankings = test_rankings(RetrievalSettings(), args.depth)
    found = digest(rankings)
    if args.out.exists() and args.expect:
        before = json.loads(args.out.read_text())["rankings"]
        changed = [q for q in sorted(rankings) if before.get(q) != rankings[q]]
        print(f"queries ranked differently from {args.out}: {len(changed)} {changed[:10]}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    body = {"queries": len(rankings), "depth": args.depth, "sha256": found, "rankings": rankings}
    args.out.write_text(json.dumps(body, indent=0) + "\n")
    print(f"{len(rankings)} test queries, top {args.depth}: sha256 {found}")
    if args.expect and args.expect != found:
        sys.exit(f"rankings changed: expected {args.expect}")
    if args.record:
        # Imported here: the image runs this file alone (make test-image), without devtools.
        from devtools.figures import record

        record(
            "rankings",
            {"queries": len(rankings), "depth": args.depth, "sha256": found},
            "make rankings",
        )


if __name__ == "__main__":
    main()
