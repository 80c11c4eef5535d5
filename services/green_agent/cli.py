"""The green agent's command line: ``python -m services.green_agent COMMAND``.

Each command is a module of :mod:`services.green_agent.commands` (its options, their checks and
what it runs); this puts them together, reads the settings (``GREEN_*``), and turns what goes
wrong into an exit status. Every command exits 2 on a bad setting or an unreachable agent;
``eval`` exits 1 when a query failed; ``load`` and ``load-merge`` exit 3 when the run breached a
budget. ``serve`` and ``load-collect`` serve until stopped.

``eval``, ``load`` and ``rest`` call the URLs a person typed: they send the token to that agent
and follow the URL its card names, unchecked, since that person chose the agent.
``GREEN_ALLOWED_ORIGINS`` binds ``serve``, whose URLs come from whoever reaches it (``egress``).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import sys
from types import ModuleType

from services.common.server import serve
from services.green_agent.commands import Serving
from services.green_agent.commands import eval as eval_command
from services.green_agent.commands import load as load_command
from services.green_agent.commands import load_collect as load_collect_command
from services.green_agent.commands import load_merge as load_merge_command
from services.green_agent.commands import rest as rest_command
from services.green_agent.commands import serve as serve_command
from services.green_agent.evaluation.client import TransportFailure
from services.green_agent.settings import GreenSettings, load_settings
from services.telemetry.logging import setup_logging
from services.telemetry.tracing import setup_tracing

#: The commands, in the order ``--help`` lists them.
COMMANDS: tuple[ModuleType, ...] = (
    eval_command,
    load_command,
    load_collect_command,
    load_merge_command,
    rest_command,
    serve_command,
)
DESCRIPTION = """\
The evaluator of NFCorpus retrieval agents: score an agent (eval), load it (load, and
load-collect and load-merge for a load split across processes or pods), score an MCP server's
search alone (rest), or serve the evaluator to assessments over A2A (serve).
"""
EPILOG = """\
exit status: 0 done; 1 a query failed (eval); 2 a bad setting or an unreachable agent;
3 a budget breached (load, load-merge). Settings come from GREEN_* variables (the README lists
them); `python -m services.green_agent COMMAND --help` says what each command does.
"""


def build_parser(settings: GreenSettings) -> argparse.ArgumentParser:
    """Every command's parser, its defaults from ``settings``."""
    parser = argparse.ArgumentParser(
        prog="python -m services.green_agent",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        sub = commands.add_parser(
            command.NAME,
            help=command.SUMMARY,
            description=command.DESCRIPTION,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.add_options(sub, settings)
        sub.set_defaults(module=command)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns the exit status (2: a bad setting or an unreachable agent)."""
    try:
        settings = load_settings()
        parser = build_parser(settings)
        args = parser.parse_args(argv)
        command: ModuleType = args.module
        if hasattr(command, "check"):
            command.check(args, parser)
        setup_logging()
        outcome = command.run(args, settings)
        if inspect.iscoroutine(outcome):
            setup_tracing("green-agent")
            outcome = asyncio.run(outcome)
    except (TransportFailure, ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if isinstance(outcome, Serving):
        serve(outcome.app, outcome.host, outcome.port)
        return 0
    return int(outcome)
