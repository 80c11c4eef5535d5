"""``rest``: score an MCP server's ``POST /search_nfcorpus`` directly, on whole splits."""

from __future__ import annotations

import argparse
from pathlib import Path

from services.green_agent.commands.shared import write_json
from services.green_agent.evaluation.rest import evaluate_rest, splits_argument, table
from services.green_agent.settings import GreenSettings

NAME = "rest"
SUMMARY = "score an MCP server's REST search on whole splits, no agent in between"
DESCRIPTION = """\
Ask an MCP server's POST /search_nfcorpus every query of the splits named and score the rankings
(trec_eval NDCG@5 and @10): the retrieval alone, without the purple agent.

  python -m services.green_agent rest --url http://127.0.0.1:8000 --splits dev,test
"""


def add_options(parser: argparse.ArgumentParser, settings: GreenSettings) -> None:
    """The server, the splits and how many queries at once."""
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the MCP server's base URL")
    parser.add_argument(
        "--splits", type=splits_argument, default=["dev", "test"], help="e.g. dev,test"
    )
    parser.add_argument("--concurrency", type=int, default=1, help="queries in flight")
    parser.add_argument("--out", type=Path, help="write the JSON report here")
    parser.add_argument(
        "--data-dir", type=Path, default=settings.data_dir, help="the NFCorpus folder (BEIR)"
    )


async def run(args: argparse.Namespace, _: GreenSettings) -> int:
    """Score the splits and print their table."""
    report = await evaluate_rest(args.url, args.splits, args.data_dir, args.concurrency)
    print(table(report))
    write_json({"url": args.url, "splits": report}, args.out)
    if args.out is not None:
        print(f"written to {args.out}")
    return 0
