"""ASGI entry point for gunicorn.

``gunicorn services.purple_agent.asgi:app -k uvicorn_worker.UvicornWorker``

Settings come from the environment only (``PURPLE_*``). Under gunicorn's ``preload_app`` the
packages are imported once in the master and shared; each worker builds its own app (clients,
task store) after the fork (:mod:`services.common.server`).
"""

from __future__ import annotations

from services.common.server import BuiltInWorker, freeze_shared_objects
from services.purple_agent.app import create_app
from services.purple_agent.settings import PurpleSettings
from services.telemetry.logging import setup_logging

setup_logging()
freeze_shared_objects()
app = BuiltInWorker(lambda: create_app(PurpleSettings()))
