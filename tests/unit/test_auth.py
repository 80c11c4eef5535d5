"""Optional bearer-token authentication of the service frame, and token loading."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from services.common.auth import TokenError, authorization, load_tokens
from services.common.frame import Readiness, ServiceId, service_app

SERVICE = ServiceId(metric_prefix="authtest", trace_name="auth-test")
ALICE = "alice-0123456789abcdef"
BOB = "bob-0123456789abcdef"


async def _whoami(request: Request) -> Response:
    return JSONResponse({"user": request.user.display_name})


async def _card(_: Request) -> Response:
    return JSONResponse({"name": "agent"})


async def _ready() -> tuple[bool, str]:
    return True, "ok"


def _client() -> httpx.AsyncClient:
    routes = [
        Route("/", _whoami, methods=["GET", "POST"]),
        Route("/card", _card, methods=["GET"]),
    ]
    app = service_app(
        SERVICE,
        routes,
        readiness=Readiness(_ready, 1.0),
        jsonrpc_paths=["/"],
        tokens=load_tokens(f"alice:{ALICE},bob:{BOB}", None),
        public_get_paths=["/card"],
    )
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://auth")


async def test_probes_metrics_and_the_card_need_no_token() -> None:
    async with _client() as client:
        for path in ("/healthz", "/readyz", "/metrics", "/card"):
            assert (await client.get(path)).status_code == 200, path


async def test_everything_else_answers_401_without_a_valid_token() -> None:
    async with _client() as client:
        missing = await client.post("/", content=b"{}")
        wrong = await client.post("/", content=b"{}", headers={"authorization": "Bearer nope"})
        basic = await client.post("/", content=b"{}", headers={"authorization": "Basic x"})
    for response in (missing, wrong, basic):
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == 'Bearer realm="nfcorpus-retrieval"'
        assert response.json()["error"]["code"] == -32001  # JSON-RPC path: a JSON-RPC error
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
