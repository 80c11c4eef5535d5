"""ASGI entry point for gunicorn: ``gunicorn -k uvicorn_worker.UvicornWorker services.mcp_server.asgi:app``.

Settings come from the environment. With the embedded store and several workers, set
``RETRIEVAL_EDGE_PRIVATE_COPY=true`` so each worker opens its own copy of the shard.
"""

from services.mcp_server.app import create_app
from services.telemetry.logging import setup_logging

setup_logging()
app = create_app()
