"""Builds the MCP server's ASGI app: MCP at ``/mcp`` plus the plain HTTP routes, in the frame."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from services.common.frame import Readiness, ServiceId, service_app
from services.common.limits import ServerLimits
from services.mcp_server.cache import ResultCache
from services.mcp_server.metrics import observe_store_call
from services.mcp_server.routes import JSON_PATHS, rest_routes
from services.mcp_server.service import SearchService
from services.mcp_server.settings import McpServerSettings
from services.mcp_server.tools import SearchServer, name_invalid_params
from services.retrieval.encoders.dense import DenseEncoder, OnnxMiniLM
from services.retrieval.encoders.memory_trim import release_free_heap
from services.retrieval.query.pipeline import RankingPipeline
from services.retrieval.settings import RetrievalSettings
from services.retrieval.store import open_store
from services.retrieval.store.counting import CountingStore

SERVICE = ServiceId(metric_prefix="mcp", trace_name="nfcorpus-mcp-server")
MCP_PATH = "/mcp"
INSTRUCTIONS = (
    "Retrieval over NFCorpus (PubMed nutrition/medicine abstracts): call search_nfcorpus."
)


#: The MCP SDK's own Host and Origin check is off: the frame checks every route, ``/mcp`` included,
#: against ``MCP_ALLOWED_HOSTS`` before anything reads the request (services.common.guard.hosts).
#: Its body limit is the frame's, which reads the body first anyway.
FRAME_CHECKS_HOSTS = TransportSecuritySettings(enable_dns_rebinding_protection=False)


async def _no_stream(_: Request) -> Response:
    message = "this server is stateless: POST JSON-RPC requests to /mcp, there is no event stream"
    return JSONResponse({"error": message}, status_code=405, headers={"allow": "POST"})


def create_app(
    settings: McpServerSettings | None = None,
    retrieval: RetrievalSettings | None = None,
    encoder: DenseEncoder | None = None,
) -> Starlette:
    """Open store and model, then wire the tool and the routes into the service frame.

    ``encoder`` is a model loaded before a fork (:mod:`services.mcp_server.asgi`).
    """
    settings = settings or McpServerSettings()
    settings.check_token_purposes()  # before the store and the model: a refusal is quick
    retrieval = retrieval or RetrievalSettings()
    store = CountingStore(open_store(retrieval.store), observe=observe_store_call)
    encoder = encoder or OnnxMiniLM(threads=retrieval.encode_threads)
    searcher = RankingPipeline(store, encoder, retrieval)
    cache = ResultCache(settings.result_cache_entries, settings.result_cache_bytes)
    service = SearchService(
        searcher,
        store,
        settings.search_threads,
        cache,
        settings.encode_batch,
        settings.encode_wait_ms / 1000,
        settings.rank_batch,
    )

    mcp = SearchServer(
        service,
        name="nfcorpus-retrieval",
        version="0.1.0",
        instructions=INSTRUCTIONS,
        middleware=[name_invalid_params],
    )
    limits = ServerLimits()
    mcp_app = mcp.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=FRAME_CHECKS_HOSTS,
        max_request_body_size=limits.max_body_bytes,
    )

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        # A mounted app's own lifespan does not run: the session manager is started here.
        async with mcp.session_manager.run():
            # The app is built and its start-up garbage collected (services.common.server):
            # hand back the C heap's pages that building it freed.
            release_free_heap()
            yield
        # Closing removes this process's private shard copies (uvicorn re-raises SIGTERM
        # after shutdown, so nothing after server.run() would ever get to).
        store.close()

    routes = [
        *rest_routes(service),
        # Stateless JSON mode has no server-to-client stream to offer: without this, GET /mcp
        # opens an event stream that never closes.
        Route(MCP_PATH, _no_stream, methods=["GET"]),
        # Mounted last: it answers every path the other routes do not (404 but for /mcp).
        Mount("", app=mcp_app),
    ]
    return service_app(
        SERVICE,
        routes,
        readiness=Readiness(service.ready, settings.ready_cache_s),
        lifespan=lifespan,
        jsonrpc_paths=[MCP_PATH],
        json_paths=JSON_PATHS,
        limits=limits,
        allowed_hosts=settings.host_rules(),
        # The SDK's mount takes any method at /mcp: a stateless server serves POST (GET: 405).
        methods={MCP_PATH: ("POST", "GET", "HEAD")},
        tokens=settings.tokens(),
        metrics_tokens=settings.metrics_tokens(),
    )
