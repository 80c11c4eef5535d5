"""``serve``: the evaluator as an A2A agent (the green agent an assessment talks to).

Its URLs come from whoever reaches it: ``GREEN_ALLOWED_ORIGINS`` (or ``--allowed-origins``)
binds where an assessment may point (:mod:`services.green_agent.evaluation.egress`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from services.green_agent.assessment.app import create_app
from services.green_agent.commands import Serving
from services.green_agent.settings import GreenSettings, load_settings

NAME = "serve"
SUMMARY = "serve the evaluator over A2A (AgentBeats' green agent)"
DESCRIPTION = """\
Serve the evaluator as an A2A agent: an assessment request names the purple agent to evaluate
and the evaluator's config; the answer is its scores. The flags override the GREEN_* settings.

  python -m services.green_agent serve --host 127.0.0.1 --port 9009 --card-url http://127.0.0.1:9009/
"""


def add_options(parser: argparse.ArgumentParser, settings: GreenSettings) -> None:
    """Where it listens, the card's URL, the data and where assessments may point."""
    parser.add_argument("--host", default=settings.host, help="the address it listens on")
    parser.add_argument("--port", type=int, default=settings.port, help="the port it listens on")
    parser.add_argument("--card-url", default=settings.card_url, help="the URL its card names")
    parser.add_argument(
        "--data-dir", type=Path, default=settings.data_dir, help="the NFCorpus folder (BEIR)"
    )
    parser.add_argument("--allowed-origins", help="where assessments may point (comma list)")


def run(args: argparse.Namespace, _: GreenSettings) -> Serving:
    """The app, its settings checked as the environment's are (an unusable token stops it)."""
    flags = ("host", "port", "card_url", "data_dir", "allowed_origins")
    settings = load_settings(**{f: v for f in flags if (v := getattr(args, f)) is not None})
    return Serving(create_app(settings), settings.host, settings.port)
