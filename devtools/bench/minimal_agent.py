"""The simplest purple agent that meets the contract: a benchmark fixture, not a service.

``python -m devtools.bench.minimal_agent --host H --port P --card-url URL --mcp-url URL`` serves the
seed's example design on the installed a2a-sdk and mcp client: parse the message text as JSON
``{"query", "top_k"}``, make one MCP ``tools/call search_nfcorpus`` with exactly those two
arguments, answer one artifact with one data part ``{"doc_ids": [...]}`` and ``complete()``.
One MCP client session stays open for the life of the process (opened in the lifespan, so the
card answers only once it is connected). No service frame, metrics, tracing, authentication,
limits, retries or deadline; the SDK's in-memory task store keeps every task.

``make bench`` runs it next to our purple agent against the same MCP server, so the table shows
what our agent costs over the minimal one.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from a2a.helpers import new_data_part, new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0
from a2a.utils.errors import UnsupportedOperationError
from mcp import Client
from starlette.applications import Starlette

TOOL = "search_nfcorpus"


class MinimalExecutor(AgentExecutor):
    """One MCP call per message over the process's one session."""

    def __init__(self) -> None:
        self.mcp: Client | None = None  # set by the lifespan

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Enqueue the task, ask the MCP server, answer the ids (or fail with the reason)."""
        if context.message is None:
            raise ValueError("no message")
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        try:
            request = json.loads(context.get_user_input())
            arguments = {"query": request["query"], "top_k": int(request.get("top_k", 5))}
            assert self.mcp is not None
            result = await self.mcp.call_tool(TOOL, arguments)
            if result.is_error or result.structured_content is None:
                raise RuntimeError(f"tool error: {result.content}")
            doc_ids = [hit["doc_id"] for hit in result.structured_content["results"]]
        except Exception as e:  # the seed answers every failure as a failed task
            await updater.failed(updater.new_agent_message([new_text_part(repr(e))]))
            return
        await updater.add_artifact([new_data_part({"doc_ids": doc_ids})], name="retrieval_results")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Not supported."""
        raise UnsupportedOperationError(message="cancel is not supported")


def build_card(url: str) -> AgentCard:
    """JSON-RPC at ``url`` in A2A 1.0 and 0.3 (the latter for 0.3 green agents)."""
    interfaces = [
        AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=version)
        for version in (PROTOCOL_VERSION_1_0, PROTOCOL_VERSION_0_3)
    ]
    skill = AgentSkill(
        id="nfcorpus_retrieval",
        name="NFCorpus document retrieval",
        description='{"query": "<text>", "top_k": <n>} in, {"doc_ids": [...]} out',
        tags=["retrieval"],
    )
    return AgentCard(
        name="minimal NFCorpus retrieval agent",
        description="The seed's example design: one MCP search per query.",
        version="0.0.1",
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["application/json"],
        skills=[skill],
    )


def create_app(card_url: str, mcp_url: str) -> Starlette:
    """The agent card at the well-known paths and ``/``, JSON-RPC at ``POST /``."""
    executor = MinimalExecutor()
    card = build_card(card_url)
    handler = DefaultRequestHandler(executor, InMemoryTaskStore(), card)
    cards = [
        route
        for path in ("/", "/.well-known/agent-card.json", "/.well-known/agent.json")
        for route in create_agent_card_routes(card, card_url=path)
    ]
    rpc = create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with Client(mcp_url) as client:
            executor.mcp = client
            yield

    return Starlette(routes=[*cards, *rpc], lifespan=lifespan)


def main() -> None:
    """Parse the command line and serve."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9011)
    parser.add_argument("--card-url", help="URL the card advertises (default http://host:port/)")
    parser.add_argument("--mcp-url", default="http://127.0.0.1:8000/mcp")
    args = parser.parse_args()
    card_url = args.card_url or f"http://{args.host}:{args.port}/"
    app = create_app(card_url, args.mcp_url)
    uvicorn.run(app, host=args.host, port=args.port, access_log=False, log_level="warning")


if __name__ == "__main__":
    main()
