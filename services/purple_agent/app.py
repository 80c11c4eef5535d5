"""The purple agent's ASGI app: A2A JSON-RPC and agent card at ``/``, inside the service frame.

Routes: ``POST /`` (JSON-RPC 1.0 and 0.3), ``GET /``, ``/.well-known/agent-card.json`` and
``/.well-known/agent.json`` (card); the frame adds ``GET /healthz`` (process alive),
``GET /readyz`` (search server found and answering: which backend, in its detail) and ``GET /metrics`` (Prometheus).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette

from services.common.a2a import A2A_RPC_PATH, CARD_PATHS, handler_routes
from services.common.a2a_input import message_problem
from services.common.frame import Readiness, ServiceId, service_app
from services.common.limits import MAX_TOP_K, ServerLimits
from services.common.task_store import BoundedTaskStore, StoreGauges
from services.purple_agent.a2a.card import build_card
from services.purple_agent.a2a.handler import DirectRequestHandler
from services.purple_agent.a2a.messages import answer_with
from services.purple_agent.agent import RetrievalAgent
from services.purple_agent.metrics import TASK_STORE_BYTES, TASKS_STORED
from services.purple_agent.ranking_policy import ServerOrder
from services.purple_agent.search import SearchClient
from services.purple_agent.settings import PurpleSettings

SERVICE = ServiceId(metric_prefix="purple", trace_name="purple-agent")
# Readiness follows the MCP server; a probe every few seconds from each kubelet should not
# become an MCP request each time.
READINESS_CACHE_S = 1.0


def create_app(settings: PurpleSettings) -> Starlette:
    """Build the app from settings; the MCP connection pool opens on first use.

    Raises:
        TokenError: a token is unusable, or given to two purposes.

    """
    settings.check_token_purposes()
    mcp = SearchClient(
        settings.mcp_url,
        protocol=settings.search_protocol,
        timeout_s=settings.mcp_timeout_s,
        retries=settings.mcp_retries,
        backoff_s=settings.mcp_backoff_s,
        max_connections=settings.mcp_max_connections,
        authorization=settings.mcp_authorization(),
    )
    agent = RetrievalAgent(mcp, ServerOrder(settings.candidates, MAX_TOP_K), settings.deadline_s)
    tokens = settings.tokens()
    card = build_card(settings, authenticated=bool(tokens))
    # Without authentication every caller is the same anonymous user: reading tasks back would
    # show one client's queries to another, so tasks are not kept at all (and none is found).
    tasks = (
        BoundedTaskStore(
            settings.max_tasks,
            settings.max_task_bytes,
            settings.task_ttl_s,
            max_tasks_per_caller=settings.max_tasks_per_caller,
            max_bytes_per_caller=settings.max_task_bytes_per_caller,
            gauges=StoreGauges(TASKS_STORED, TASK_STORE_BYTES),
        )
        if tokens
        else None
    )
    # Detached answers (returnImmediately) are bounded as the guard bounds requests in flight.
    max_detached = ServerLimits().max_in_flight
    handler = DirectRequestHandler(answer_with(agent), card, tasks, max_detached)
    routes = handler_routes(card, handler)

    async def mcp_ready() -> tuple[bool, str]:
        return await mcp.ready(settings.readiness_timeout_s)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        await handler.aclose()
        await mcp.aclose()

    readiness = Readiness(mcp_ready, READINESS_CACHE_S, detail_key="mcp")
    return service_app(
        SERVICE,
        routes,
        readiness=readiness,
        lifespan=lifespan,
        jsonrpc_paths=[A2A_RPC_PATH],
        body_checks={A2A_RPC_PATH: message_problem},
        tokens=tokens,
        public_get_paths=CARD_PATHS,
        metrics_tokens=settings.metrics_tokens(),
        allowed_hosts=settings.host_rules(settings.public_url),
    )
