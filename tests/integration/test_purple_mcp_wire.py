"""The purple agent's plain MCP client says what the SDK's client says, loads no SDK for a
server of our protocol, and reaches a server of the handshake era through the SDK.
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

from mcp import Client

from harness.fakes.mcp_toy import Seen, search_app, serving
from harness.processes import REPO
from services.purple_agent.ranking_policy import Candidate
from services.purple_agent.search import SearchClient
from services.purple_agent.search.mcp_backend import CLIENT_INFO

#: What a server may read of a request besides its body.
HEADERS = ("accept", "content-type", "mcp-protocol-version", "mcp-method", "mcp-name")


def _client(url: str) -> SearchClient:
    return SearchClient(url, timeout_s=5, retries=0, backoff_s=0.01, max_connections=4)


def _comparable(post: Seen) -> tuple[dict[str, Any], dict[str, str | None]]:
    """The request without its id, the client's self-description and the span ids in its trace
    context, and its MCP headers."""
    body = {k: v for k, v in post.body.items() if k != "id"}
    meta = dict(body.get("params", {}).get("_meta", {}))
    assert meta.pop("io.modelcontextprotocol/clientInfo")["name"]
    if "traceparent" in meta:  # with a tracer provider set (as other tests of the suite do)
        meta["traceparent"] = meta["traceparent"][:3]
    body["params"] = {**body["params"], "_meta": meta}
    return body, {h: post.headers.get(h) for h in HEADERS}


async def test_the_plain_requests_are_the_sdks() -> None:
    app = search_app(json_response=True)
    arguments = {"query": "q", "top_k": 2, "include_text": False}
    with serving(app) as url:
        async with Client(url) as sdk:
            await sdk.list_tools()
            expected = await sdk.call_tool("search_nfcorpus", arguments)
        sdk_posts, app.posts = app.posts, []
        client = _client(url)
        try:
            hits = await client.search("q", 2, time.monotonic() + 5)
        finally:
            await client.aclose()
    assert [p.body["method"] for p in sdk_posts] == ["server/discover", "tools/list", "tools/call"]
    assert [p.body["method"] for p in app.posts] == ["server/discover", "tools/list", "tools/call"]
    for ours, theirs in zip(app.posts, sdk_posts, strict=True):
        assert _comparable(ours) == _comparable(theirs)
    assert app.posts[0].body["params"]["_meta"]["io.modelcontextprotocol/clientInfo"] == CLIENT_INFO
    assert expected.structured_content is not None
    assert hits == [
        Candidate(hit["doc_id"], hit["score"]) for hit in expected.structured_content["results"]
    ]


async def test_a_handshake_era_server_is_called_through_the_sdk() -> None:
    app = search_app(json_response=False, handshake_only=True)
    with serving(app) as url:
        client = _client(url)
        try:
            first = await client.search("q", 3, time.monotonic() + 5)
            second = await client.search("r", 1, time.monotonic() + 5)
        finally:
            await client.aclose()
    assert [h.doc_id for h in first] == ["MED-1", "MED-2", "MED-3"]
    assert [h.doc_id for h in second] == ["MED-1"]
    # Our probe, then the SDK's: it initializes for the listing and for each call.
    assert app.seen[0] == "server/discover"
    assert app.seen.count("initialize") == 3
    assert app.seen.count("tools/call") == 2
    calls = [p for p in app.posts if p.body["method"] == "tools/call"]
    assert all(p.body["params"]["arguments"]["include_text"] is False for p in calls)


def test_the_agent_loads_no_mcp_sdk_for_a_server_of_our_protocol() -> None:
    # A fresh interpreter: this one has the SDK loaded for the toy server.
    app = search_app(json_response=True)
    code = (
        "import asyncio, sys, time\n"
        "import services.purple_agent.app\n"
        "from services.purple_agent.search import SearchClient\n"
        "async def main():\n"
        "    c = SearchClient(sys.argv[1], timeout_s=5, retries=0, backoff_s=0.01,"
        " max_connections=1)\n"
        "    print(len(await c.search('q', 2, time.monotonic() + 5)))\n"
        "    await c.aclose()\n"
        "asyncio.run(main())\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'mcp_types', 'httpx2'}))\n"
    )
    with serving(app) as url:
        run = subprocess.run(
            [sys.executable, "-c", code, url], cwd=REPO, capture_output=True, text=True
        )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["2", "[]"]
