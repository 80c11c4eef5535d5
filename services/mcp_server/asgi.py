"""ASGI entry point for gunicorn: ``gunicorn -k uvicorn_worker.UvicornWorker services.mcp_server.asgi:app``.

Settings come from the environment. With the embedded store and several workers, set
``RETRIEVAL_EDGE_PRIVATE_COPY=true`` so each worker opens its own copy of the shard.

With gunicorn's ``preload_app`` (the image's configuration) this module runs once, in the master:
the packages and the encoder (its weights are most of a worker's memory) are loaded here and
shared by every worker; each worker opens the store and builds its app after the fork
(:mod:`services.common.server`). An encoder with an intra-op thread pool is not preloaded:
threads do not survive a fork.
"""

from services.common.server import BuiltInWorker, freeze_shared_objects
from services.mcp_server.app import create_app
from services.mcp_server.settings import McpServerSettings
from services.retrieval.encoders.dense import OnnxMiniLM
from services.retrieval.settings import RetrievalSettings
from services.telemetry.logging import setup_logging

setup_logging()
_retrieval = RetrievalSettings()
_encoder = OnnxMiniLM(threads=1) if _retrieval.encode_threads == 1 else None
freeze_shared_objects()
app = BuiltInWorker(lambda: create_app(McpServerSettings(), _retrieval, encoder=_encoder))
