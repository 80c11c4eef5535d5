"""``load-collect``: the server a split load run's workers hand their figures to.

It merges them as they come, serves the run's report and page live, and cuts short a worker
gone silent (:mod:`services.green_agent.load.collector`). Without a token it serves on a
loopback address only (:func:`~services.green_agent.load.collector_app.tokens_to_serve`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from services.green_agent.commands import Serving
from services.green_agent.load.collector import Collector
from services.green_agent.load.collector_app import create_collector_app, tokens_to_serve
from services.green_agent.settings import GreenSettings, load_settings

NAME = "load-collect"
SUMMARY = "collect and merge the figures of a load run's workers, live"
DESCRIPTION = """\
Serve POST /reports for the N workers of one load run (load --worker I --workers N --run NAME
--report-to URL): their figures as they run and their reports at the end are merged into the
run's report, served at GET /report and GET /report.html (a page that reloads itself until the
run is complete) and written to --out and --html. Needs GREEN_LOAD_COLLECTOR_TOKEN (or _FILE)
to serve beyond this machine.

  python -m services.green_agent load-collect --workers 3 --run r1 --out load.json --html load.html
"""


def add_options(parser: argparse.ArgumentParser, settings: GreenSettings) -> None:
    """The run it collects, where it listens and where the merge goes."""
    parser.add_argument("--workers", type=int, required=True, help="workers that make the run")
    parser.add_argument("--run", default="", help="the run whose reports it takes (load --run)")
    parser.add_argument("--host", default=settings.host, help="the address it listens on")
    parser.add_argument("--port", type=int, default=settings.port, help="the port it listens on")
    parser.add_argument("--out", type=Path, help="write the merged JSON report here")
    parser.add_argument("--html", type=Path, metavar="PATH", help="and its HTML page here")


def run(args: argparse.Namespace, settings: GreenSettings) -> Serving:
    """The collector's app; refused (ValueError) with an unusable token or none off loopback."""
    settings.check_token_purposes()  # an unusable token, or one in two purposes
    tokens = tokens_to_serve(args.host, settings.load_collector_tokens())
    collector = Collector(args.workers, args.run, args.out, args.html)
    hosts = settings.host_rules()  # the names it answers (GREEN_ALLOWED_HOSTS)
    app = create_collector_app(collector, tokens, settings.metrics_tokens(), hosts)
    where = load_settings(host=args.host, port=args.port)  # checked as the environment's are
    return Serving(app, where.host, where.port)
