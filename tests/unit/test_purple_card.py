"""The purple agent's card and settings."""

from __future__ import annotations

import os

import httpx
import pytest
from a2a.server.routes import create_agent_card_routes
from pydantic import ValidationError
from starlette.applications import Starlette

from services.common.a2a import CARD_CACHE_CONTROL, CARD_PATHS, card_routes
from services.purple_agent.a2a.card import build_card
from services.purple_agent.app import create_app
from services.purple_agent.settings import PurpleSettings


def test_card_describes_skill_modes_and_both_interfaces() -> None:
    card = build_card(PurpleSettings(host="10.0.0.7", port=9123))
    assert card.name and card.description and card.version
    assert [(i.url, i.protocol_binding, i.protocol_version) for i in card.supported_interfaces] == [
        ("http://10.0.0.7:9123/", "JSONRPC", "1.0"),
        ("http://10.0.0.7:9123/", "JSONRPC", "0.3"),
    ]
    (skill,) = card.skills
    # Both forms of a request: the JSON object, and a question typed as plain text.
    *objects, question = skill.examples
    assert objects and all('"query"' in e and '"top_k"' in e for e in objects)
    assert not question.startswith("{") and question.endswith("?")
    assert "application/json" in card.default_output_modes
    assert "text/plain" in card.default_input_modes
    assert "doc_ids" in skill.description


async def test_card_is_served_at_every_path_with_the_legacy_fields() -> None:
    settings = PurpleSettings(card_url="https://purple.example/")
    transport = httpx.ASGITransport(app=create_app(settings))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        cards = [(await client.get(path)).json() for path in CARD_PATHS]
    assert all(card == cards[0] for card in cards)
    card = cards[0]
    # What a 0.3 client reads: the legacy url / transport / version fields.
    assert card["url"] == "https://purple.example/"
    assert card["preferredTransport"] == "JSONRPC"
    assert card["protocolVersion"] == "0.3"
    assert {i["protocolVersion"] for i in card["supportedInterfaces"]} == {"1.0", "0.3"}


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PURPLE_MCP_URL", "http://mcp:8000/mcp")
    monkeypatch.setenv("PURPLE_DEADLINE_S", "12.5")
    monkeypatch.setenv("PURPLE_CARD_URL", "http://purple.svc:9010/")
    monkeypatch.setenv("PURPLE_CANDIDATES", "40")
    settings = PurpleSettings()
    assert settings.mcp_url == "http://mcp:8000/mcp"
    assert settings.deadline_s == 12.5
    assert settings.public_url == "http://purple.svc:9010/"
    assert settings.candidates == 40
    assert settings.search_protocol == "auto"


def test_settings_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("PURPLE_")]:
        monkeypatch.delenv(name)
    settings = PurpleSettings()
    assert settings.port == 9010
    assert settings.public_url == "http://127.0.0.1:9010/"
    assert settings.mcp_url == "http://127.0.0.1:8000/mcp"
    assert settings.deadline_s == 30.0
    assert settings.search_protocol == "auto"


def test_the_search_protocol_can_be_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PURPLE_SEARCH_PROTOCOL", "rest")
    assert PurpleSettings().search_protocol == "rest"
    with pytest.raises(ValidationError, match="search_protocol"):
        PurpleSettings(search_protocol="grpc")


@pytest.mark.parametrize("deadline", [60, 61, 0, -1])
def test_deadline_must_stay_below_sixty_seconds(deadline: float) -> None:
    with pytest.raises(ValidationError, match="deadline_s"):
        PurpleSettings(deadline_s=deadline)


async def test_the_card_is_what_the_sdk_serves_with_its_etag() -> None:
    card = build_card(PurpleSettings())
    ours = httpx.ASGITransport(app=Starlette(routes=card_routes(card)))
    sdk_routes = create_agent_card_routes(card, card_url="/", cache_control=CARD_CACHE_CONTROL)
    sdks = httpx.ASGITransport(app=Starlette(routes=sdk_routes))
    async with (
        httpx.AsyncClient(transport=ours, base_url="http://127.0.0.1") as client,
        httpx.AsyncClient(transport=sdks, base_url="http://127.0.0.1") as sdk,
    ):
        expected = await sdk.get("/")
        for path in CARD_PATHS:
            served = await client.get(path)
            assert served.content == expected.content
            assert served.headers["etag"] == expected.headers["etag"]
            assert served.headers["cache-control"] == expected.headers["cache-control"]
            assert served.headers["content-type"] == "application/json"
        # A client holding the card revalidates it for nothing.
        for held in (expected.headers["etag"], expected.headers["etag"].removeprefix("W/"), "*"):
            again = await client.get("/", headers={"if-none-match": f'"other", {held}'})
            assert (again.status_code, again.content) == (304, b"")
        assert (await client.get("/", headers={"if-none-match": '"other"'})).status_code == 200
