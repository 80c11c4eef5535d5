"""Command line of the green agent: ``eval``, ``load``, ``serve`` and ``rest``.

``eval`` exits 1 when any query failed (unreachable agent, failed task or broken contract), so it
can gate a pipeline; ``load`` gates one with budgets (``--threshold 'p99<2s,errors<1%'``,
:mod:`services.green_agent.load.thresholds`): it and ``load-merge`` exit 3 when the run breached
one (the report names it), else 0 whatever the error count; SIGTERM or Ctrl-C ends a load early
with its report. Every command exits 2 on a bad setting or an unreachable agent.

``load --html PATH`` also writes the report as one self-contained HTML page (throughput and latency
over time, latency histogram, failures), e.g. ``load --agent URL --duration 30 --concurrency 4
--html load.html``, and ``--csv PREFIX`` Locust's three CSV files of the run
(:mod:`services.green_agent.load.csv_files`); ``load --stages`` runs a load shape instead (steps
and ramps, ``--warmup`` first: :mod:`services.green_agent.load.options`) and a progress line goes
to stderr every ``--progress`` seconds. ``load --workers N`` runs N generator processes sharing the
pace and the queries, and merges their reports into one (:mod:`services.green_agent.load.workers`);
``load --worker I --workers N`` runs worker I only (a pod of an Indexed Job; ``--report-to URL``
hands its report to a ``load-collect`` server, which merges the run's reports as they come; given
budgets, the worker then judges them on the collector's complete merge:
:mod:`services.green_agent.load.verdict`), and ``load-merge`` merges workers' reports. ``rest``
scores an MCP server's ``POST /search_nfcorpus`` directly, on whole splits.

``eval``, ``load`` and ``rest`` call the URLs a person typed: they send the token to that agent
and follow the URL its card names, unchecked, since that person chose the agent.
``GREEN_ALLOWED_ORIGINS`` binds ``serve``, whose URLs come from whoever reaches it (``egress``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from services.common.files import atomic_write_text
from services.common.server import serve
from services.green_agent.assessment.app import create_app
from services.green_agent.evaluation.client import (
    A2AVersion,
    TransportFailure,
    connect,
)
from services.green_agent.evaluation.dataset import fetch_test_set, sample_query_ids
from services.green_agent.evaluation.evaluator import QueryOutcome, evaluate
from services.green_agent.evaluation.report import build_report, eval_tables
from services.green_agent.evaluation.rest import evaluate_rest, splits_argument, table
from services.green_agent.load.collector import Collector
from services.green_agent.load.collector_app import create_collector_app, tokens_to_serve
from services.green_agent.load.commands import interval_argument, load, load_merge
from services.green_agent.load.options import (
    LOAD_HELP,
    add_pace_options,
    shape_of,
)
from services.green_agent.load.outputs import (
    add_report_options,
)
from services.green_agent.load.run import QueryPool
from services.green_agent.settings import GreenSettings, load_settings
from services.telemetry.logging import setup_logging
from services.telemetry.tracing import setup_tracing

MAX_LOAD_SECONDS = 3600.0


def _write(report: BaseModel | dict[str, Any], out: Path | None) -> None:
    if out is None:
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    text = (
        report.model_dump_json(indent=2)
        if isinstance(report, BaseModel)
        else json.dumps(report, indent=2)
    )
    atomic_write_text(out, text + "\n")


async def _eval(args: argparse.Namespace, settings: GreenSettings) -> int:
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
    _write(report, args.out)
    Console().print(eval_tables(report))
    return 1 if report.failed else 0


async def _rest(args: argparse.Namespace, _: GreenSettings) -> int:
    report = await evaluate_rest(args.url, args.splits, args.data_dir, args.concurrency)
    print(table(report))
    _write({"url": args.url, "splits": report}, args.out)
    if args.out is not None:
        print(f"written to {args.out}")
    return 0


def _parser(settings: GreenSettings) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m services.green_agent", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    def client_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--agent", required=True, help="base URL of the retrieval agent")
        sub.add_argument("--top-k", type=int, default=5, choices=range(1, 101), metavar="1..100")
        sub.add_argument("--seed", type=int, default=42, help="sampling seed")
        protocols: list[A2AVersion] = ["1.0", "0.3"]
        sub.add_argument("--protocol", choices=protocols, default=settings.protocol)
        sub.add_argument("--out", type=Path, help="write the JSON report here")
        sub.add_argument("--data-dir", type=Path, default=settings.data_dir)

    run_eval = commands.add_parser("eval", help="evaluate an agent on sampled test queries")
    client_options(run_eval)
    run_eval.add_argument("--num-queries", type=int, help="queries to sample (default: all 323)")
    run_eval.add_argument("--concurrency", type=int, default=settings.concurrency)

    run_load = commands.add_parser(
        "load",
        help="load an agent for a duration, or along stages",
        description=LOAD_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    client_options(run_load)
    add_pace_options(run_load)
    run_load.add_argument("--max-in-flight", type=int, default=256, help="open-loop cap")
    run_load.add_argument(
        "--queries",
        choices=get_args(QueryPool),
        default="all",
        help="every NFCorpus query (train, dev, test; the default) or the 323 test queries only",
    )
    run_load.add_argument(
        "--mcp-url", help="the MCP server behind the agent: its cache hit ratio is reported"
    )
    run_load.add_argument(
        "--html",
        type=Path,
        metavar="PATH",
        help="also write the report as one self-contained HTML page (charts, failures) here",
    )
    run_load.add_argument(
        "--workers",
        type=int,
        default=1,
        help="generator processes sharing the pace and the queries; their reports merge into one",
    )
    run_load.add_argument(
        "--worker",
        type=int,
        help="run as this worker (0..workers-1) only, e.g. a Job pod's JOB_COMPLETION_INDEX",
    )

    run_load.add_argument(
        "--run",
        default="",
        help="name of the run its report belongs to (a collector takes only its own run's)",
    )
    run_load.add_argument(
        "--wait-agent",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="first wait this long at most for the agent's card (a Job started with its release)",
    )
    run_load.add_argument(
        "--report-to",
        metavar="URL",
        help="POST the report to a load collector's /reports when the run ends (load-collect)",
    )
    run_load.add_argument(
        "--report-every",
        type=interval_argument,
        default=5.0,
        metavar="SECONDS",
        help="with --report-to: also hand the collector the figures so far this often, so its "
        "report and page are live and a generator that dies loses at most one interval; 0: none",
    )
    add_report_options(run_load, worker=True)

    collect = commands.add_parser("load-collect", help="collect and merge a run's worker reports")
    collect.add_argument("--workers", type=int, required=True, help="reports that make the run")
    collect.add_argument("--run", default="", help="the run whose reports it takes (load --run)")
    collect.add_argument("--host", default=settings.host)
    collect.add_argument("--port", type=int, default=settings.port)
    collect.add_argument("--out", type=Path, help="write the merged JSON report here")
    collect.add_argument("--html", type=Path, metavar="PATH", help="and its HTML page here")

    merge = commands.add_parser("load-merge", help="merge the reports of a run's workers")
    merge.add_argument("reports", type=Path, nargs="+", help="the workers' JSON reports")
    merge.add_argument("--out", type=Path, help="write the merged JSON report here")
    merge.add_argument("--html", type=Path, metavar="PATH", help="and its HTML page here")
    add_report_options(merge)

    serve = commands.add_parser("serve", help="serve the evaluator over A2A")
    serve.add_argument("--host", default=settings.host)
    serve.add_argument("--port", type=int, default=settings.port)
    serve.add_argument("--card-url", default=settings.card_url)
    serve.add_argument("--data-dir", type=Path, default=settings.data_dir)
    serve.add_argument("--allowed-origins", help="where assessments may point (comma list)")

    rest = commands.add_parser("rest", help="score an MCP server's REST search on whole splits")
    rest.add_argument("--url", default="http://127.0.0.1:8000", help="MCP server base URL")
    rest.add_argument(
        "--splits", type=splits_argument, default=["dev", "test"], help="e.g. dev,test"
    )
    rest.add_argument("--concurrency", type=int, default=1)
    rest.add_argument("--out", type=Path, help="write the JSON report here")
    rest.add_argument("--data-dir", type=Path, default=settings.data_dir)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns the exit status (2: a bad setting or an unreachable agent)."""
    try:
        settings = load_settings()
        parser = _parser(settings)
        args = parser.parse_args(argv)
        if args.command == "serve":  # its flags are checked as the environment is
            flags = ("host", "port", "card_url", "data_dir", "allowed_origins")
            settings = load_settings(**{f: v for f in flags if (v := getattr(args, f)) is not None})
        setup_logging()
        if args.command == "serve":
            app = create_app(settings)  # reads the tokens: an unusable one stops the start
        elif args.command == "load-collect":
            settings.check_token_purposes()  # an unusable token, or one in two purposes
            tokens = tokens_to_serve(args.host, settings.load_collector_tokens())
            collector = Collector(args.workers, args.run, args.out, args.html)
            hosts = settings.host_rules()  # the names it answers (GREEN_ALLOWED_HOSTS)
            app = create_collector_app(collector, tokens, settings.metrics_tokens(), hosts)
            settings = load_settings(host=args.host, port=args.port)
        else:
            if args.command == "load":
                args.shape = shape_of(args, parser, MAX_LOAD_SECONDS)
            setup_tracing("green-agent")
            if args.command == "load-merge":
                return load_merge(args)
            if args.command == "load" and args.workers < 1:
                parser.error("--workers must be at least 1")
            runner = {"eval": _eval, "load": load, "rest": _rest}[args.command]
            return asyncio.run(runner(args, settings))
    except (TransportFailure, ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    serve(app, settings.host, settings.port)
    return 0
