"""The green agent's allow-list of origins: how entries read, which URLs pass, what a bad one says."""

from __future__ import annotations

import re

import httpx
import pytest
from a2a.helpers import new_text_part
from a2a.types import Message, Role

from services.green_agent.assessment.request import check_destinations, parse_assessment
from services.green_agent.cli import main
from services.green_agent.evaluation.egress import (
    LOOPBACK,
    AllowedOrigins,
    EgressRefused,
    refused_in,
)
from services.green_agent.settings import load_settings


@pytest.mark.parametrize(
    ("entries", "url"),
    [
        (LOOPBACK, "http://127.0.0.1:9010/"),
        (LOOPBACK, "https://localhost/"),
        (LOOPBACK, "http://LOCALHOST:8000/mcp"),
        (LOOPBACK, "http://[::1]:9009/"),
        (["retrieval-agent:9009"], "http://retrieval-agent:9009/"),
        (["retrieval-agent:9009"], "https://retrieval-agent:9009/"),
        (["http://retrieval-agent:9009/"], "http://retrieval-agent:9009/a2a"),
        (["http://purple"], "http://purple/"),
        (["https://purple"], "https://purple:443/"),
        (["http://purple:*"], "http://purple:31337/"),
        (["*"], "http://anything.example:1/"),
    ],
)
def test_a_url_on_an_allowed_origin_passes(entries: list[str], url: str) -> None:
    assert AllowedOrigins(entries).refusal(url) is None


@pytest.mark.parametrize(
    ("entries", "url", "origin"),
    [
        (LOOPBACK, "http://169.254.169.254/latest/meta-data/", "http://169.254.169.254:80"),
        (LOOPBACK, "http://127.1:9009/", "http://127.1:9009"),  # no guessing at short forms
        (LOOPBACK, "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]:80"),
        (["retrieval-agent:9009"], "http://retrieval-agent:9010/", None),
        (["retrieval-agent:9009"], "http://agent.retrieval-agent:9009/", None),
        (["http://retrieval-agent:9009"], "https://retrieval-agent:9009/", None),
        (["http://purple"], "http://purple:8080/", None),
        (["https://purple"], "http://purple:443/", None),
        (["127.0.0.1:*"], "http://127.0.0.1@evil.example:9009/", "http://evil.example:9009"),
    ],
)
def test_a_url_elsewhere_is_refused_naming_its_origin_and_the_setting(
    entries: list[str], url: str, origin: str | None
) -> None:
    reason = AllowedOrigins(entries).refusal(url)
    assert reason is not None
    assert reason.endswith(f"is not in GREEN_ALLOWED_ORIGINS ({', '.join(entries)})")
    if origin is not None:
        assert reason.startswith(f"its origin {origin} ")


@pytest.mark.parametrize(
    ("entries", "url"),
    [
        (["release-purple-agent.dev:9009"], "http://release-purple-agent.dev.:9009/"),
        (LOOPBACK, "http://localhost.:8000/mcp"),
        (["a:*"], "http://a.:1/"),
    ],
)
def test_a_host_ending_in_a_dot_is_refused_even_when_its_name_is_allowed(
    entries: list[str], url: str
) -> None:
    # An absolute name skips a pod's search domains: it goes to public DNS, with the token.
    reason = AllowedOrigins(entries).refusal(url)
    assert reason is not None and "ends with a dot: an absolute DNS name" in reason


def test_an_entry_ending_in_a_dot_is_refused_at_start() -> None:
    with pytest.raises(ValueError, match=r"'purple\.dev\.' ends with a dot"):
        AllowedOrigins(["purple.dev.:9009"])


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/", "file:///etc/passwd", "127.0.0.1:9009"])
def test_only_http_and_https_urls_pass(url: str) -> None:
    assert AllowedOrigins(LOOPBACK).refusal(url) == "it is not an http or https URL"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("retrieval-agent", "names no port: write retrieval-agent:PORT, retrieval-agent:* (any"),
        ("host:", "the port must be a number in 1..65535 or '*' (any port)"),
        ("host:0", "the port must be a number in 1..65535"),
        ("host:70000", "the port must be a number in 1..65535"),
        ("gopher://host:70", "the scheme must be http or https"),
        ("http://host:80/path", "is not an origin: scheme://host:port, no path or user"),
        ("user@host:80", "is not an origin"),
        ("::1:9009", "an IPv6 address goes in brackets, as [::1]:*"),
        ("[host]:80", "brackets hold an IPv6 address only"),
        ("*.svc.cluster.local:*", "'*.svc.cluster.local' is not a host name or IP address"),
        ("bücher.example:80", "(write a name in its ASCII xn-- form)"),
    ],
)
def test_a_bad_entry_is_refused_with_what_to_write(entry: str, message: str) -> None:
    with pytest.raises(ValueError) as error:
        AllowedOrigins([entry])
    assert str(error.value).startswith(repr(entry))
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "retrieval-agent",
            "'retrieval-agent' names no port: write retrieval-agent:PORT, retrieval-agent:* "
            "(any port) or http://retrieval-agent (port 80)",
        ),
        ("*,localhost:*", "'*' allows any origin: give it alone, or list the origins"),
    ],
)
def test_serve_refuses_to_start_on_a_bad_list_saying_why(
    value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--port", "0", "--allowed-origins", value]) == 2
    assert capsys.readouterr().err == f"error: GREEN_ALLOWED_ORIGINS: {message}\n"


def test_the_list_is_never_empty_and_star_stands_alone() -> None:
    with pytest.raises(ValueError, match=re.escape("no origin listed: the default is 127.0.0.1:")):
        AllowedOrigins([" ", ""])
    with pytest.raises(ValueError, match=re.escape("'*' allows any origin: give it alone")):
        AllowedOrigins(["*", "retrieval-agent:9009"])


def test_the_setting_is_read_from_the_environment_and_checked_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert load_settings().allowed_origins == list(LOOPBACK)
    monkeypatch.setenv("GREEN_ALLOWED_ORIGINS", " retrieval-agent:9009 , http://mcp:8000 ")
    assert load_settings().allowed_origins == ["retrieval-agent:9009", "http://mcp:8000"]
    monkeypatch.setenv("GREEN_ALLOWED_ORIGINS", "retrieval-agent")
    with pytest.raises(
        ValueError, match="^" + re.escape("GREEN_ALLOWED_ORIGINS: 'retrieval-agent' names no port")
    ):
        load_settings()


def test_auth_tokens_come_from_green_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GREEN_AUTH_TOKENS", "assessor:assessor-token-0123456789")
    assert load_settings().tokens() == {"assessor-token-0123456789": "assessor"}
    monkeypatch.setenv("GREEN_AUTH_TOKENS", "short")
    with pytest.raises(ValueError, match=re.escape("shorter than 16 characters")):
        load_settings().tokens()


def _request(text: str) -> Message:
    return Message(role=Role.ROLE_USER, message_id="m", parts=[new_text_part(text)])


def test_every_url_of_a_request_is_checked() -> None:
    allowed = AllowedOrigins(["retrieval-agent:9009"])
    ok = '{"participants": {"retrieval_agent": "http://retrieval-agent:9009/"}}'
    check_destinations(parse_assessment(_request(ok)), allowed)
    other_role = (
        '{"participants": {"retrieval_agent": "http://retrieval-agent:9009/",'
        ' "spectator": "http://10.0.0.1:80/"}}'
    )
    with pytest.raises(
        ValueError, match="^" + re.escape("participant 'spectator' http://10.0.0.1/ is refused")
    ):
        check_destinations(parse_assessment(_request(other_role)), allowed)
    mcp = (
        '{"participants": {"retrieval_agent": "http://retrieval-agent:9009/"},'
        ' "config": {"mcp_server_url": "http://mcp-server:8000"}}'
    )
    with pytest.raises(
        ValueError, match="^" + re.escape("config.mcp_server_url http://mcp-server:8000 is refused")
    ):
        check_destinations(parse_assessment(_request(mcp)), allowed)


async def test_the_client_hook_stops_a_request_before_it_is_sent() -> None:
    sent: list[str] = []

    def transport(request: httpx.Request) -> httpx.Response:
        sent.append(str(request.url))
        return httpx.Response(307, headers={"location": "http://10.0.0.1/card"})

    allowed = AllowedOrigins(["retrieval-agent:9009"])
    hooks = {"request": [allowed.guard]}
    card = "http://retrieval-agent:9009/.well-known/agent-card.json"
    async with httpx.AsyncClient(
        transport=httpx.MockTransport(transport), event_hooks=hooks, follow_redirects=True
    ) as client:
        # Even a client that follows redirects checks each hop before it goes out.
        with pytest.raises(
            EgressRefused, match="^" + re.escape("refused to call http://10.0.0.1/card: its ")
        ):
            await client.get(card)
        with pytest.raises(EgressRefused) as error:
            await client.get("http://u:secret@10.0.0.1/?token=x")
    assert sent == [card]
    assert str(error.value).startswith("refused to call http://10.0.0.1/: its origin ")
    wrapped = RuntimeError("wrapped")
    wrapped.__cause__ = error.value
    assert refused_in(wrapped) is error.value and refused_in(RuntimeError()) is None


@pytest.mark.parametrize(
    ("host", "settings", "allowed"),
    [
        ("127.0.0.1", {}, True),  # loopback: the default list is the reach of this machine
        ("::1", {"allowed_origins": "*"}, True),
        ("localhost", {}, True),
        ("0.0.0.0", {"allowed_origins": "retrieval-agent:9009,http://mcp:8000"}, True),
        ("0.0.0.0", {}, False),  # the default list, loopback on any port
        ("0.0.0.0", {"allowed_origins": "retrieval-agent:*"}, False),
        ("green.example", {"allowed_origins": "*"}, False),
    ],
)
def test_serving_beyond_loopback_takes_tokens_or_an_exact_list(
    host: str, settings: dict[str, str], allowed: bool
) -> None:
    green = load_settings(host=host, **settings)
    assert (green.open_serving_problem(authenticated=False) is None) is allowed
    assert green.open_serving_problem(authenticated=True) is None
