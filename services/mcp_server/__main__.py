"""``python -m services.mcp_server --host 127.0.0.1 --port 8000``: the development server."""

from __future__ import annotations

import argparse

from services.common.server import freeze_shared_objects, serve
from services.mcp_server.app import create_app
from services.mcp_server.settings import McpServerSettings
from services.telemetry.logging import setup_logging


def main() -> None:
    """Parse flags (defaults from the environment) and serve with uvicorn."""
    defaults = McpServerSettings()
    parser = argparse.ArgumentParser(description="NFCorpus MCP search server")
    parser.add_argument("--host", default=defaults.host)
    parser.add_argument("--port", type=int, default=defaults.port)
    args = parser.parse_args()
    setup_logging()
    settings = defaults.model_copy(update={"host": args.host, "port": args.port})
    app = create_app(settings)
    freeze_shared_objects()
    serve(app, settings.host, settings.port)


if __name__ == "__main__":
    main()
