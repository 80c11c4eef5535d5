"""Optional bearer-token authentication of the service frame, and token loading.

The scrape token: ``/metrics`` takes it and nothing else, it takes nothing else; with callers'
tokens and no scrape token ``/metrics`` is closed (tests/integration/test_auth.py runs the
servers so).
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from services.common.auth import UNAUTHENTICATED, AuthFields
from services.common.frame import Readiness, ServiceId, service_app
from services.common.tokens import TokenError, authorization, load_tokens
from services.green_agent.settings import GreenSettings
from services.mcp_server.settings import McpServerSettings
from services.purple_agent.settings import PurpleSettings

SERVICE = ServiceId(metric_prefix="authtest", trace_name="auth-test")
ALICE = "alice-0123456789abcdef"
BOB = "bob-0123456789abcdef"
SCRAPE = "scrape-0123456789abcdef"


async def _whoami(request: Request) -> Response:
    return JSONResponse({"user": request.user.display_name})


async def _card(_: Request) -> Response:
    return JSONResponse({"name": "agent"})


async def _ready() -> tuple[bool, str]:
    return True, "ok"


def _client(
    tokens: str | None = f"alice:{ALICE},bob:{BOB}", metrics_tokens: str | None = SCRAPE
) -> httpx.AsyncClient:
    routes = [
        Route("/", _whoami, methods=["GET", "POST"]),
        Route("/card", _card, methods=["GET"]),
        Route("/private", _card, methods=["GET"]),
    ]
    app = service_app(
        SERVICE,
        routes,
        readiness=Readiness(_ready, 1.0),
        jsonrpc_paths=["/"],
        tokens=load_tokens(tokens, None),
        public_get_paths=["/card"],
        metrics_tokens=load_tokens(metrics_tokens, None),
    )
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def test_probes_and_the_card_need_no_token() -> None:
    async with _client() as client:
        for path in ("/healthz", "/readyz", "/card"):
            assert (await client.get(path)).status_code == 200, path


async def test_metrics_take_the_scrape_token_and_no_caller_s() -> None:
    async with _client() as client:
        for headers in ({}, _bearer(ALICE), _bearer("unknown-0123456789abcdef")):
            refused = await client.get("/metrics", headers=headers)
            assert refused.status_code == 401, headers
            assert refused.headers["www-authenticate"] == 'Bearer realm="nfcorpus-retrieval"'
            assert "authtest_" not in refused.text
        scrape = await client.get("/metrics", headers=_bearer(SCRAPE))
        assert scrape.status_code == 200 and "authtest_http_request_duration" in scrape.text
        # ... and the scrape token opens nothing else: no caller is named by it.
        assert (await client.get("/private", headers=_bearer(SCRAPE))).status_code == 401
        assert (await client.get("/private", headers=_bearer(ALICE))).status_code == 200


async def test_with_callers_tokens_and_no_scrape_token_metrics_are_closed() -> None:
    async with _client(metrics_tokens=None) as client:
        for token in (ALICE, SCRAPE):
            assert (await client.get("/metrics", headers=_bearer(token))).status_code == 401
        assert (await client.get("/healthz")).status_code == 200


async def test_a_scrape_token_alone_closes_metrics_only() -> None:
    async with _client(tokens=None) as client:
        assert (await client.get("/metrics")).status_code == 401
        assert (await client.get("/metrics", headers=_bearer(SCRAPE))).status_code == 200
        # Callers need no token: authentication is off.
        assert (await client.get("/private")).status_code == 200


async def test_without_any_token_metrics_stay_open() -> None:
    async with _client(tokens=None, metrics_tokens=None) as client:
        assert (await client.get("/metrics")).status_code == 200


def test_a_scrape_token_that_is_also_a_caller_s_is_refused_at_start() -> None:
    with pytest.raises(TokenError, match="give /metrics its own") as refused:
        _client(metrics_tokens=ALICE)
    assert ALICE not in str(refused.value)


def test_every_server_reads_its_scrape_token_from_its_own_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "scrape-token"
    path.write_text(f"{SCRAPE}\n")  # a mounted Secret item
    servers: list[tuple[str, type[AuthFields]]] = [
        ("PURPLE", PurpleSettings),
        ("MCP", McpServerSettings),
        ("GREEN", GreenSettings),
    ]
    for prefix, settings in servers:  # one setting of the shared fields, under each prefix
        monkeypatch.setenv(f"{prefix}_METRICS_TOKEN_FILE", str(path))
        assert list(settings().metrics_tokens()) == [SCRAPE], prefix
    monkeypatch.setenv("MCP_METRICS_TOKEN", "short")
    with pytest.raises(TokenError, match="shorter than 16"):
        McpServerSettings().metrics_tokens()


async def test_everything_else_answers_401_without_a_valid_token() -> None:
    async with _client() as client:
        missing = await client.post("/", content=b"{}")
        wrong = await client.post("/", content=b"{}", headers={"authorization": "Bearer nope"})
        basic = await client.post("/", content=b"{}", headers={"authorization": "Basic x"})
    for response in (missing, wrong, basic):
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == 'Bearer realm="nfcorpus-retrieval"'
        assert response.json()["error"]["code"] == UNAUTHENTICATED  # JSON-RPC path: its error
    assert missing.json()["error"]["message"].startswith("authentication required")
    assert wrong.json()["error"]["message"].startswith("authentication failed")


async def test_a_valid_token_names_its_caller() -> None:
    async with _client() as client:
        for token, name in ((ALICE, "alice"), (BOB, "bob")):
            headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
            answer = await client.post("/", headers=headers)
            assert answer.json() == {"user": name}


def test_tokens_come_from_the_variable_and_a_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"# rotated on 2026-11-23\n\ncarol:{'c' * 20}\n{'d' * 20}\n")
    tokens = load_tokens(f"alice:{ALICE}", path)
    assert tokens[ALICE] == "alice" and tokens["c" * 20] == "carol"
    assert tokens["d" * 20].startswith("client-")  # a bare token gets a name from its hash
    assert load_tokens(None, None) == {}  # no tokens: authentication off


@pytest.mark.parametrize(
    ("inline", "message"),
    [
        ("x7-tiny", "shorter than 16 characters"),
        ("changethis-please-now", "is a placeholder"),
        ("anonymous:a-named-token-0123456789", "named 'anonymous', a name the request metrics"),
        ("other:a-named-token-0123456789", "named 'other'"),
        ("scraper:a-named-token-0123456789", "named 'scraper'"),
        ("client-0123456789ab:a-named-token-0123456789", "named 'client-0123456789ab'"),
        # A bare token holding ":": the part before it must not become a name (a log field).
        ("s3cr3t Pref!x:0123456789abcdefXYZ", "a line is name:token, and a token holds no ':'"),
    ],
)
def test_unusable_tokens_are_refused_without_showing_them(inline: str, message: str) -> None:
    with pytest.raises(TokenError, match=message) as refused:
        load_tokens(inline, None)
    assert inline not in str(refused.value)


def test_an_unreadable_token_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TokenError, match="cannot read the token file"):
        load_tokens(None, tmp_path / "missing")


@pytest.mark.parametrize(
    ("text", "sent"),
    [
        ("bare-token-0123456789\n", "Bearer bare-token-0123456789"),
        # A server's token file (the chart's client-tokens Secret): the first token, unnamed.
        (
            "# callers\n\ngreen:first-token-0123456789\nother:second-token-0123456789\n",
            "Bearer first-token-0123456789",
        ),
    ],
)
def test_a_client_sends_the_first_token_of_its_file(tmp_path: Path, text: str, sent: str) -> None:
    path = tmp_path / "tokens"
    path.write_text(text)
    assert authorization("ignored-when-a-file-is-given", path) == sent
    assert authorization("inline-token-0123456789", None) == "Bearer inline-token-0123456789"


def test_a_token_file_without_a_token_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("# nothing but a comment\n")
    with pytest.raises(TokenError, match="holds no token"):
        authorization(None, path)
