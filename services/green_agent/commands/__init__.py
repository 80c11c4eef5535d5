"""The green agent's subcommands, one module each: its options, their checks, and what it runs.

Each module names its command (``NAME``), says in one line what it is for (``SUMMARY``, the
line ``--help`` lists) and what it does at length (``DESCRIPTION``, its own ``--help``), adds its
options (``add_options``) and runs (``run``): an exit status, or a server to serve
(:class:`Serving`). :mod:`services.green_agent.cli` puts them together; :mod:`.shared` holds the
options several commands take.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.types import ASGIApp


@dataclass(frozen=True, slots=True)
class Serving:
    """A command that serves: the app, and where (the server runs once the command has set up)."""

    app: ASGIApp
    host: str
    port: int
