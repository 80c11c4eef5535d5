"""ASGI entry point for gunicorn.

``gunicorn services.purple_agent.asgi:app -k uvicorn_worker.UvicornWorker``

Settings come from the environment only (``PURPLE_*``); each worker builds its own app.
"""

from __future__ import annotations

from services.purple_agent.app import create_app
from services.purple_agent.settings import PurpleSettings
from services.telemetry.logging import setup_logging

setup_logging()
app = create_app(PurpleSettings())
