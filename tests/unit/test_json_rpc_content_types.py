"""Every POST route of both agents is JSON-RPC and takes only JSON: another type gets 415.

A web page may post ``text/plain``, a form or ``multipart/form-data`` to any address without a
CORS preflight; a JSON post needs one, which no server of ours allows. The MCP server's ``/mcp``
and REST search are checked against a real server (tests/integration/test_mcp_server.py and
test_green_bounds.py).
"""

from __future__ import annotations

import json

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from services.common.a2a import A2A_RPC_PATH
from services.green_agent.assessment.app import create_app as green_app
from services.green_agent.settings import GreenSettings
from services.purple_agent.app import create_app as purple_app
from services.purple_agent.settings import PurpleSettings

PAGE_TYPES = ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; b=x"]
BODY = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "t"}})


def _app(agent: str) -> Starlette:
    if agent == "purple":  # nothing listens there: no request of this test reaches a search
        return purple_app(PurpleSettings(mcp_url="http://127.0.0.1:9/mcp"))
    return green_app(GreenSettings())


def _post_paths(app: Starlette) -> set[str]:
    return {r.path for r in app.routes if isinstance(r, Route) and "POST" in (r.methods or ())}


@pytest.mark.parametrize("agent", ["purple", "green"])
async def test_every_post_route_of_an_agent_refuses_what_a_page_may_post(agent: str) -> None:
    app = _app(agent)
    # The one JSON-RPC endpoint (A2A 1.0 and 0.3 alike): a new POST route must be a JSON-RPC
    # path of the frame too (jsonrpc_paths), or pages could post to it.
    assert _post_paths(app) == {A2A_RPC_PATH}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:9009") as client:
        for kind in [*PAGE_TYPES, None]:
            headers = {"content-type": kind} if kind else {}
            answer = await client.post(A2A_RPC_PATH, content=BODY, headers=headers)
            assert answer.status_code == 415, (kind, answer.text)
            error = answer.json()["error"]
            assert error["code"] == -32600
            assert "JSON-RPC takes Content-Type: application/json" in error["message"]
        # The same request as JSON reaches the protocol, which answers it.
        headers = {"content-type": "application/json"}
        answer = await client.post(A2A_RPC_PATH, content=BODY, headers=headers)
        assert answer.status_code == 200 and answer.json()["id"] == 7
        assert "Content-Type" not in answer.text
