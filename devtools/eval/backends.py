"""The purple agent over each search backend, scored on the same test queries through A2A.

Starts our MCP server on the built index and, in this process, a server that speaks only the
seed's REST wire (``harness/fakes/seed_rest.py``) over our server's REST search. Then, for each
way of naming the search server (our MCP endpoint, our base URL, the REST-only server's base
URL), a purple agent is started with that ``--mcp-url`` and evaluated over 0.3 like a green
agent of the seed: NDCG@5/@10, failures and the backend its ``/readyz`` names. Writes
``reports/backends.{json,md}``.

    PYTHONPATH=. .venv/bin/python -m devtools.eval.backends --num-queries 323
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import httpx

from harness.fakes.mcp_toy import serve_app
from harness.fakes.seed_rest import forwarding_to, seed_rest_app
from harness.processes import ServerProcess
from services.green_agent.evaluation.client import connect
from services.green_agent.evaluation.dataset import load_test_set, sample_query_ids
from services.green_agent.evaluation.evaluator import evaluate
from services.green_agent.evaluation.report import build_report
from services.nfcorpus.dataset import DEFAULT_DATA_DIR


async def _score(name: str, url: str, args: argparse.Namespace) -> dict[str, Any]:
    test_set = load_test_set(DEFAULT_DATA_DIR)
    query_ids = sample_query_ids(test_set.query_ids, args.num_queries, args.seed)
    with ServerProcess.module("services.purple_agent", env={"PURPLE_MCP_URL": url}) as purple:
        async with httpx.AsyncClient() as http:
            backend = (await http.get(purple.base_url + "/readyz")).json()["mcp"]
        client = await connect(purple.base_url, "0.3", 60.0, args.concurrency)
        try:
            outcomes, wall_s = await evaluate(
                client, test_set, query_ids, args.top_k, args.concurrency, legacy=True
            )
        finally:
            await client.aclose()
    report = build_report(
        outcomes,
        test_set.qrels,
        agent=purple.base_url,
        protocol="0.3",
        top_k=args.top_k,
        seed=args.seed,
        wall_s=wall_s,
    )
    return {
        "as named": name,
        "--mcp-url": url,
        "backend": backend,
        "queries": report.num_queries,
        "failed": report.failed,
        "ndcg@5": round(report.metrics["ndcg@5"], 4),
        "ndcg@10": round(report.metrics["ndcg@10"], 4),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-queries", type=int, default=323)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--out", type=Path, default=Path("reports/backends"))
    args = parser.parse_args()
    rows = []
    mcp = ServerProcess.module("services.mcp_server")
    with mcp, serve_app(seed_rest_app(forwarding_to(mcp.base_url))) as seed:
        forms = [
            ("our MCP endpoint", mcp.base_url + "/mcp"),
            ("our base URL (the seed's form)", mcp.base_url),
            ("a REST-only server of the seed's wire, base URL", seed),
        ]
        for name, url in forms:
            rows.append(await _score(name, url, args))
            print(json.dumps(rows[-1]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=2) + "\n")
    keys = list(rows[0])
    table = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    table += ["| " + " | ".join(str(row[k]) for k in keys) + " |" for row in rows]
    args.out.with_suffix(".md").write_text("\n".join(table) + "\n")
    print("\n".join(table))


if __name__ == "__main__":
    asyncio.run(main())
