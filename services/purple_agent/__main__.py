"""Run the purple agent: ``python -m services.purple_agent --host H --port P --card-url URL``.

Command-line values override the ``PURPLE_*`` environment; production runs ``asgi:app`` under
gunicorn instead.
"""

from __future__ import annotations

import argparse
from typing import get_args

from services.common.server import freeze_shared_objects, serve
from services.purple_agent.app import create_app
from services.purple_agent.search import SearchProtocol
from services.purple_agent.settings import PurpleSettings
from services.telemetry.logging import setup_logging


def main(argv: list[str] | None = None) -> None:
    """Parse the command line, build settings and app, serve."""
    parser = argparse.ArgumentParser(prog="python -m services.purple_agent", description=__doc__)
    parser.add_argument("--host", help="bind address (PURPLE_HOST, default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="bind port (PURPLE_PORT, default 9010)")
    parser.add_argument("--card-url", help="URL in the agent card (PURPLE_CARD_URL)")
    parser.add_argument(
        "--mcp-url",
        help="search server: MCP endpoint, base URL or REST endpoint (PURPLE_MCP_URL)",
    )
    parser.add_argument(
        "--search-protocol",
        choices=get_args(SearchProtocol),
        help="how to call it: auto (ask the server), mcp or rest (PURPLE_SEARCH_PROTOCOL)",
    )
    args = parser.parse_args(argv)
    overrides = {k: v for k, v in vars(args).items() if v is not None}
    settings = PurpleSettings(**overrides)
    setup_logging()
    app = create_app(settings)
    freeze_shared_objects()
    serve(app, settings.host, settings.port)


if __name__ == "__main__":
    main()
