"""One logging set-up for every service: a single line per record, level from the environment."""

from __future__ import annotations

import logging
import os

# HTTP and protocol clients log every request at INFO: one line per MCP call or A2A query is
# noise at hundreds per second.
QUIET_LOGGERS = ("httpx", "httpx2", "mcp.client", "a2a.client")


def setup_logging(level: str | None = None) -> None:
    """Configure the root logger once; ``LOG_LEVEL`` overrides the default INFO."""
    logging.basicConfig(
        level=(level or os.environ.get("LOG_LEVEL", "INFO")).upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
