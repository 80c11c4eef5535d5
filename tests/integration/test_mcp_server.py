"""The real MCP server (a subprocess on a free loopback port), called with the real MCP client."""

import json
from typing import Any

import httpx
import pytest
from mcp import Client

from harness.processes import McpServer
from services.nfcorpus.dataset import load_corpus, load_queries
from tests.support.small_index import SmallIndex


async def test_lists_the_tool_with_schemas(mcp_server: McpServer) -> None:
    async with Client(mcp_server.mcp_url) as client:
        tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == ["search_nfcorpus"]
    tool = tools[0]
    assert "NFCorpus" in (tool.description or "")
    props = tool.input_schema["properties"]
    assert props["top_k"]["default"] == 5 and props["top_k"]["maximum"] == 100
    assert props["query"]["maxLength"] == 2000
    assert props["include_text"]["default"] is True and props["include_text"]["type"] == "boolean"
    assert tool.output_schema is not None and "results" in tool.output_schema["properties"]


async def test_tool_returns_structured_results(
    mcp_server: McpServer, small_index: SmallIndex
) -> None:
    corpus_ids = {d.doc_id for d in load_corpus(small_index.settings.data_dir)}
    async with Client(mcp_server.mcp_url) as client:
        result = await client.call_tool(
            "search_nfcorpus", {"query": "green tea and prostate cancer", "top_k": 7}
        )
    assert not result.is_error
    hits = result.structured_content["results"]
    assert len(hits) == 7
    assert len({h["doc_id"] for h in hits}) == 7 and {h["doc_id"] for h in hits} <= corpus_ids
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert all(set(h) == {"doc_id", "score", "title", "text"} and h["text"] for h in hits)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"query": "x", "top_k": 0}, "greater than or equal to 1"),
        ({"query": "x", "top_k": 101}, "less than or equal to 100"),
        ({"query": "x", "top_k": "five"}, "valid integer"),
        ({"query": ""}, "at least 1 character"),
        ({"query": "   "}, "query must contain non-whitespace text"),
        ({"query": "x" * 2001}, "at most 2000 characters"),
        ({"top_k": 3}, "query: Field required"),
        # The same rules as REST: no lenient coercion, no unknown arguments.
        ({"query": "x", "top_k": "5"}, "top_k: Input should be a valid integer"),
        ({"query": "x", "top_k": 5.0}, "top_k: Input should be a valid integer"),
        ({"query": "x", "top_k": True}, "top_k: Input should be a valid integer"),
        ({"query": "x", "k": 3}, "k: Extra inputs are not permitted"),
    ],
)
async def test_tool_errors_are_error_results(
    mcp_server: McpServer, arguments: dict[str, Any], message: str
) -> None:
    async with Client(mcp_server.mcp_url) as client:
        result = await client.call_tool("search_nfcorpus", arguments)
        assert result.is_error
        text = result.content[0].text  # type: ignore[union-attr]
        assert text.startswith("invalid arguments: ") and message in text, text
        assert "input_value" not in text and "pydantic" not in text  # no dump of the input
        # ...and the server keeps serving.
        ok = await client.call_tool("search_nfcorpus", {"query": "fish oil", "top_k": 1})
        assert not ok.is_error


def test_rest_search_matches_the_tool_contract(mcp_server: McpServer) -> None:
    response = httpx.post(
        f"{mcp_server.base_url}/search_nfcorpus", json={"query": "vitamin D", "top_k": 4}
    )
    assert response.status_code == 200
    results = response.json()["results"]
    assert len(results) == 4 and set(results[0]) == {"doc_id", "score", "title", "text"}
    default = httpx.post(f"{mcp_server.base_url}/search_nfcorpus", json={"query": "vitamin D"})
    assert len(default.json()["results"]) == 5
    # Without abstracts: the same hits, every text empty, the shape unchanged.
    lean = httpx.post(
        f"{mcp_server.base_url}/search_nfcorpus",
        json={"query": "vitamin D", "top_k": 4, "include_text": False},
    ).json()["results"]
    assert [(h["doc_id"], h["score"], h["title"]) for h in lean] == [
        (h["doc_id"], h["score"], h["title"]) for h in results
    ]
    assert all(h["text"] for h in results) and {h["text"] for h in lean} == {""}


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        (b'{"query": "", "top_k": 5}', "query", "at least 1 character"),
        (b'{"query": "   "}', "query", "non-whitespace"),
        (('{"query": "' + "a" * 2001 + '"}').encode(), "query", "at most 2000 characters"),
        (b'{"query": "x", "top_k": 0}', "top_k", "greater than or equal to 1"),
        (b'{"query": "x", "top_k": 101}', "top_k", "less than or equal to 100"),
        (b'{"query": "x", "top_k": "5"}', "top_k", "valid integer"),
        (b'{"query": "x", "top_k": 2.5}', "top_k", "valid integer"),
        (b'{"query": "x", "top_k": true}', "top_k", "valid integer"),
        (b'{"query": 42}', "query", "valid string"),
        (b'{"top_k": 3}', "query", "Field required"),
        (b'{"query": "x", "k": 3}', "k", "Extra inputs are not permitted"),
        (b'{"query": "x", "include_text": "no"}', "include_text", "valid boolean"),
        (b"not json", "body", "JSON object"),
        (b"[1, 2]", "body", "JSON object"),
        (b"\xff\xfe", "body", "not UTF-8 text"),
    ],
)
def test_rest_rejects_bad_input_with_422(
    mcp_server: McpServer, body: bytes, field: str, message: str
) -> None:
    response = httpx.post(
        f"{mcp_server.base_url}/search_nfcorpus",
        content=body,
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 422
    payload = response.json()
    assert payload["error"] == "invalid request"
    assert any(d["field"] == field and message in d["message"] for d in payload["detail"]), payload
    assert httpx.get(f"{mcp_server.base_url}/healthz").status_code == 200


def test_health_readiness_and_metrics(mcp_server: McpServer) -> None:
    base = mcp_server.base_url
    assert httpx.get(f"{base}/healthz").json() == {"status": "ok"}
    ready = httpx.get(f"{base}/readyz")
    assert ready.status_code == 200 and "documents" in ready.json()["reason"]
    httpx.post(f"{base}/search_nfcorpus", json={"query": "soy", "top_k": 2})
    metrics = httpx.get(f"{base}/metrics").text
    for name in (
        'mcp_http_request_duration_seconds_bucket{caller="anonymous",le="0.025",outcome="ok",route="/search_nfcorpus"}',
        "mcp_encode_duration_seconds_count",
        "mcp_store_query_duration_seconds_count",
        "mcp_ranking_duration_seconds_count",
        'mcp_store_call_duration_seconds_count{operation="search"}',
        'mcp_searches_total{outcome="ok",via="rest"}',
    ):
        assert name in metrics
    # Failure series exist at 0 before any failure, so rate() sees the first one.
    for zero in (
        'mcp_searches_total{outcome="store_error",via="tool"} 0.0',
        'mcp_searches_total{outcome="abandoned",via="rest"} 0.0',
        'mcp_http_request_duration_seconds_count{caller="anonymous",outcome="server_error",route="/mcp"} 0.0',
    ):
        assert zero in metrics


async def test_evaluator_stats_endpoints_count_searches(mcp_server: McpServer) -> None:
    async with httpx.AsyncClient(base_url=mcp_server.base_url) as http:
        assert (await http.post("/stats/reset")).status_code == 200
        assert (await http.get("/stats")).json() == {"search_call_count": 0}
        await http.post("/search_nfcorpus", json={"query": "coffee"})
        async with Client(mcp_server.mcp_url) as client:
            await client.call_tool("search_nfcorpus", {"query": "coffee"})
        assert (await http.get("/stats")).json() == {"search_call_count": 2}
        check = (await http.post("/health_check")).json()
        assert check["status"] == "ok"
        # Every store call counts: a supervised search makes several (candidates + feedback,
        # RM3, kNN, payloads), and each search the same number. Queries no other test asks: an
        # answer from the result cache makes no store call.
        await http.post("/stats/reset")
        await http.post("/search_nfcorpus", json={"query": "coffee and liver enzymes"})
        one = (await http.get("/health_check")).json()["qdrant_calls_total"]
        await http.post("/search_nfcorpus", json={"query": "black tea flavonoids"})
        two = (await http.get("/health_check")).json()["qdrant_calls_total"]
    assert one >= 3 and two == 2 * one


def test_unknown_host_header_gets_421(mcp_server: McpServer) -> None:
    response = httpx.post(
        mcp_server.mcp_url,
        headers={"host": "evil.example:80", "accept": "application/json, text/event-stream"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
    assert response.status_code == 421


def test_rest_results_equal_the_in_process_searcher(
    mcp_server: McpServer, small_index: SmallIndex, encoder: Any
) -> None:
    from services.retrieval.query.pipeline import RankingPipeline
    from services.retrieval.store import open_store

    settings = small_index.settings.updated(store={"edge_private_copy": True})
    store = open_store(settings.store)
    try:
        searcher = RankingPipeline(store, encoder, settings)
        assert searcher.tables is not None and searcher.ranker is not None
        queries = load_queries(settings.data_dir)
        for query_id in small_index.query_ids[:5]:
            direct = [r["doc_id"] for r in searcher.search(queries[query_id], 10)]
            served = httpx.post(
                f"{mcp_server.base_url}/search_nfcorpus",
                json={"query": queries[query_id], "top_k": 10},
            ).json()["results"]
            assert [r["doc_id"] for r in served] == direct
    finally:
        store.close()


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("GET", "/search_nfcorpus", "POST"),
        ("PUT", "/search_nfcorpus", "POST"),
        ("DELETE", "/health_check", "GET, HEAD, POST"),
        ("POST", "/stats", "GET, HEAD"),
        ("GET", "/stats/reset", "POST"),
        ("POST", "/", "GET, HEAD"),
    ],
)
def test_other_methods_of_a_route_get_405_with_allow(
    mcp_server: McpServer, method: str, path: str, allow: str
) -> None:
    answer = httpx.request(method, mcp_server.base_url + path)
    assert answer.status_code == 405
    assert answer.headers["allow"] == allow
    assert answer.json() == {"error": f"{method} is not allowed on {path}: use {allow}"}


def test_the_root_describes_the_server(mcp_server: McpServer) -> None:
    described = httpx.get(mcp_server.base_url + "/").json()
    assert [tool["name"] for tool in described["tools"]] == ["search_nfcorpus"]
    assert "POST /search_nfcorpus" in described["endpoints"]
    assert httpx.get(mcp_server.base_url + "/no/such/path").status_code == 404


#: Each REST route with a call that succeeds from the server's own site.
REST_CALLS = [
    ("GET", "/", None),
    ("POST", "/search_nfcorpus", {"query": "soy and hot flashes", "top_k": 2}),
    ("POST", "/health_check", {}),
    ("GET", "/health_check", None),
    ("GET", "/stats", None),
    ("POST", "/stats/reset", None),
]


def _searches(mcp_server: McpServer) -> int:
    count: int = httpx.get(mcp_server.base_url + "/stats").json()["search_call_count"]
    return count


@pytest.mark.parametrize(("method", "path", "body"), REST_CALLS)
def test_every_rest_route_refuses_another_sites_request_as_mcp_does(
    mcp_server: McpServer, method: str, path: str, body: dict[str, Any] | None
) -> None:
    url = mcp_server.base_url + path
    httpx.post(mcp_server.base_url + "/search_nfcorpus", json={"query": "soy"})
    searches = _searches(mcp_server)
    # A page of another site posting across sites: the browser names it in Origin.
    crossed = httpx.request(method, url, json=body, headers={"origin": "http://evil.example"})
    assert crossed.status_code == 403
    assert crossed.json() == {
        "error": "requests from the Origin http://evil.example are not accepted"
    }
    # A DNS-rebinding page: its own name resolves to this server, and its requests carry it.
    rebound = f"evil.example:{mcp_server.port}"
    renamed = httpx.request(method, url, json=body, headers={"host": rebound})
    assert renamed.status_code == 421
    assert renamed.json() == {"error": f"this server is not reached by the Host {rebound}"}
    # Neither searched nor reset the evaluator's count; /mcp answers them the same.
    assert _searches(mcp_server) == searches
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"accept": "application/json, text/event-stream"}
    for refused, headers in ((403, {"origin": "http://evil.example"}), (421, {"host": rebound})):
        answer = httpx.post(mcp_server.mcp_url, json=rpc, headers={**accept, **headers})
        assert answer.status_code == refused
    # The server's own site, named or not, is served.
    own = {"origin": f"http://127.0.0.1:{mcp_server.port}"}
    for headers in (own, {}):
        assert httpx.request(method, url, json=body, headers=headers).status_code == 200


@pytest.mark.parametrize(
    "kind", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; b=x", None]
)
def test_rest_search_takes_only_json_and_says_so_with_415(
    mcp_server: McpServer, kind: str | None
) -> None:
    # What a page may post without a CORS preflight (or a post that names no type at all).
    url = mcp_server.base_url + "/search_nfcorpus"
    body = json.dumps({"query": "soy and hot flashes", "top_k": 2})
    searches = _searches(mcp_server)
    answer = httpx.post(url, content=body, headers={"content-type": kind} if kind else {})
    assert answer.status_code == 415
    refusal = answer.json()
    assert refusal["error"] == "unsupported media type"
    (detail,) = refusal["detail"]
    assert detail["field"] == "content-type"
    named = kind.split(";")[0] if kind else "the request has none"
    assert "takes Content-Type: application/json" in detail["message"]
    assert named in detail["message"]
    assert _searches(mcp_server) == searches
    # JSON's media type decides, its parameters and case do not.
    for accepted in ("application/json", "Application/JSON; charset=utf-8"):
        ok = httpx.post(url, content=body, headers={"content-type": accepted})
        assert ok.status_code == 200 and len(ok.json()["results"]) == 2
    # The routes that read no body take a bare post, as a caller posting nothing sends it.
    assert httpx.post(mcp_server.base_url + "/health_check").status_code == 200
    assert httpx.post(mcp_server.base_url + "/stats/reset").status_code == 200
