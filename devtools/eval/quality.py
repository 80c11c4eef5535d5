"""Ablation table of the ranking stages on dev and test, measured through the real servers.

``python -m devtools.eval.quality`` (``make eval-quality``):

1. builds an index whose supervised parts learn from **train only** (``RETRIEVAL_SUPERVISION=
   train``) in ``var/quality``, so dev stays unseen and measures every stage honestly;
2. for each stage, starts the MCP server with that stage's settings and scores every dev and
   test query through ``POST /search_nfcorpus``;
3. scores the served configuration (dev queries vote too: the default index of ``make index``)
   on test through ``POST /search_nfcorpus`` and through A2A (purple agent + green agent);
4. writes the table into its section of ``docs/quality.md`` and to ``reports/quality.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from typing import Any

from devtools.eval.doc_sections import replace_section
from devtools.figures import record
from harness.processes import BASE_ENV, REPO, ServerProcess
from services.green_agent.evaluation.rest import evaluate_rest
from services.nfcorpus.dataset import DEFAULT_DATA_DIR, Split

PY = sys.executable
QUALITY_STORE = REPO / "var" / "quality"
HONEST = {"RETRIEVAL_SUPERVISION": "train", "RETRIEVAL_EDGE_PATH": str(QUALITY_STORE)}
STAGES: list[tuple[str, dict[str, str]]] = [
    ("BM25", {"RETRIEVAL_MODE": "zero-shot", "RETRIEVAL_FUSION": "zscore",
              "RETRIEVAL_DENSE_WEIGHT": "0.0", "RETRIEVAL_FEEDBACK_DOCS": "0"}),
    ("BM25 + RM3", {"RETRIEVAL_MODE": "zero-shot", "RETRIEVAL_FUSION": "zscore",
                    "RETRIEVAL_DENSE_WEIGHT": "0.0"}),
    ("MiniLM dense", {"RETRIEVAL_MODE": "zero-shot", "RETRIEVAL_FUSION": "zscore",
                      "RETRIEVAL_DENSE_WEIGHT": "1.0"}),
    ("hybrid: dense + BM25-RM3, DBSF in Qdrant (zero-shot mode)", {"RETRIEVAL_MODE": "zero-shot"}),
    ("+ kNN votes of training queries (z-score fusion)", {"RETRIEVAL_USE_RANKER": "false"}),
    ("+ learned ranker (LightGBM lambdarank): co-relevance, lexical kNN votes, document fields, "
     "judged-by field, nudged documents", {}),
]  # fmt: skip


def _rest(env: dict[str, str], splits: list[Split]) -> dict[str, dict[str, float]]:
    with ServerProcess.module("services.mcp_server", env=env) as server:
        return asyncio.run(evaluate_rest(server.base_url, splits, DEFAULT_DATA_DIR, concurrency=2))


def _a2a() -> dict[str, Any]:
    out = REPO / "reports" / "quality_a2a.json"
    with ServerProcess.module("services.mcp_server") as mcp:
        args = ["--mcp-url", f"{mcp.base_url}/mcp"]
        with ServerProcess.module("services.purple_agent", args) as purple:
            cmd = [PY, "-m", "services.green_agent", "eval", "--agent", purple.base_url,
                   "--num-queries", "323", "--top-k", "10", "--seed", "42", "--concurrency", "4",
                   "--out", str(out)]  # fmt: skip
            subprocess.run(cmd, env={**os.environ, **BASE_ENV}, cwd=REPO, check=True)
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def main() -> None:
    subprocess.run([PY, "-m", "services.retrieval.indexing.index"],
                   env={**os.environ, **BASE_ENV, **HONEST}, cwd=REPO, check=True)  # fmt: skip
    subprocess.run([PY, "-m", "services.retrieval.indexing.index"], env={**os.environ, **BASE_ENV},
                   cwd=REPO, check=True)  # fmt: skip
    rows = []
    for label, env in STAGES:
        print(f"== {label}", flush=True)
        rows.append((label, _rest({**HONEST, **env}, ["dev", "test"])))
    print("== served (dev queries vote too)", flush=True)
    served = _rest({}, ["test"])
    a2a = _a2a()
    write(rows, served, a2a)


def write(rows: list[tuple[str, dict[str, dict[str, float]]]], served: dict[str, dict[str, float]],
          a2a: dict[str, Any]) -> None:  # fmt: skip
    def cells(m: dict[str, float] | None) -> str:
        return f"{m['ndcg@5']:.4f} | {m['ndcg@10']:.4f}" if m else "– | –"

    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} with `make eval-quality` (`python "
        "devtools/eval/quality.py`): every number comes from the real MCP server "
        "(`POST /search_nfcorpus`, top 10) over **all** dev (324) and test (323) queries, "
        "standard trec_eval NDCG. Stages 1-6 use an index whose kNN collection and ranker "
        "learn from the **train** split only, so dev is unseen; every setting was chosen on dev.",
        "",
        "| stage | dev NDCG@5 | dev NDCG@10 | test NDCG@5 | test NDCG@10 |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for i, (label, m) in enumerate(rows, 1):
        lines.append(f"| {i}. {label} | {cells(m['dev'])} | {cells(m['test'])} |")
    lines.append(
        f"| 7. served: + dev queries vote and teach the ranker (default index) | {cells(None)} "
        f"| {cells(served['test'])} |"
    )
    metrics = a2a["metrics"]
    lines += [
        "",
        f"Served configuration through A2A (green agent -> purple agent -> MCP server, all 323 "
        f"test queries, top_k=10): **NDCG@5 {metrics['ndcg@5']:.4f}, NDCG@10 "
        f"{metrics['ndcg@10']:.4f}**, {a2a['answered']}/{a2a['num_queries']} answered, "
        f"p50 {a2a['latency']['p50_s'] * 1000:.1f} ms at concurrency 4.",
    ]
    replace_section(REPO / "docs" / "quality.md", "ablation", "\n".join(lines))
    record(
        "served",
        {
            "queries": a2a["num_queries"],
            "answered": a2a["answered"],
            "ndcg@5": metrics["ndcg@5"],
            "ndcg@10": metrics["ndcg@10"],
            "p50_ms": a2a["latency"]["p50_s"] * 1000,
        },
        "make eval-quality",
    )
    out = REPO / "reports" / "quality.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"stages": rows, "served": served, "a2a": metrics}, indent=2) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
