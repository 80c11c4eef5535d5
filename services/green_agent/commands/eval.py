"""``eval``: score an agent on NFCorpus test queries, over A2A as the evaluator asks them.

Exits 1 when any query failed (an unreachable agent, a failed task or a broken answer
contract), so it can gate a pipeline.
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from services.green_agent.commands.shared import add_client_options, write_json
from services.green_agent.evaluation.client import connect
from services.green_agent.evaluation.dataset import fetch_test_set, sample_query_ids
from services.green_agent.evaluation.evaluator import QueryOutcome, evaluate
from services.green_agent.evaluation.report import build_report, eval_tables
from services.green_agent.settings import GreenSettings

NAME = "eval"
SUMMARY = "score an agent on NFCorpus test queries (NDCG@5, @10), as the evaluator asks"
DESCRIPTION = """\
Ask an agent the NFCorpus test queries over A2A, check every answer against the evaluator's
contract (exactly top-k known, distinct ids) and score the rankings (trec_eval NDCG@5 and @10).
Exits 1 when any query failed, 0 otherwise; 2 on a bad setting or an unreachable agent.

  python -m services.green_agent eval --agent http://127.0.0.1:9010 --out eval.json
"""


def add_options(parser: argparse.ArgumentParser, settings: GreenSettings) -> None:
    """The agent, the sample of queries and how many at once."""
    add_client_options(parser, settings)
    parser.add_argument("--num-queries", type=int, help="queries to sample (default: all 323)")
    parser.add_argument(
        "--concurrency", type=int, default=settings.concurrency, help="queries in flight"
    )


async def run(args: argparse.Namespace, settings: GreenSettings) -> int:
    """Evaluate; 1 when a query failed."""
    test_set = fetch_test_set(args.data_dir, settings.download_url, settings.download_md5)
    query_ids = sample_query_ids(test_set.query_ids, args.num_queries, args.seed)
    client = await connect(
        args.agent,
        args.protocol,
        settings.timeout_s,
        args.concurrency,
        authorization=settings.agent_authorization(),
        bounds=settings.answer_bounds(),
    )
    stderr = Console(stderr=True)
    columns = (TextColumn("queries"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    try:
        with Progress(*columns, console=stderr) as progress:
            bar = progress.add_task("queries", total=len(query_ids))

            async def advance(_: QueryOutcome) -> None:
                progress.advance(bar)

            outcomes, wall_s = await evaluate(
                client,
                test_set,
                query_ids,
                args.top_k,
                args.concurrency,
                legacy=args.protocol == "0.3",
                on_result=advance,
            )
    finally:
        await client.aclose()
    report = build_report(
        outcomes,
        test_set.qrels,
        agent=args.agent,
        protocol=args.protocol,
        top_k=args.top_k,
        seed=args.seed,
        wall_s=wall_s,
    )
    write_json(report, args.out)
    Console().print(eval_tables(report))
    return 1 if report.failed else 0
