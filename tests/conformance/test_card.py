"""The agent card: served where clients look, with what an a2a-sdk 0.3 client reads."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from a2a.compat.v0_3.types import AgentCard as AgentCardV03

CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")


@pytest.mark.parametrize("path", CARD_PATHS)
def test_the_card_is_served_at_its_well_known_paths(agent_url: str, path: str) -> None:
    answer = httpx.get(agent_url.rstrip("/") + path, timeout=30)
    assert answer.status_code == 200, path
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.json()["name"]


def test_the_card_is_a_valid_0_3_card(card: dict[str, Any]) -> None:
    parsed = AgentCardV03.model_validate(card)  # the 0.3 SDK's own model of the card
    assert parsed.name and parsed.description and parsed.version
    assert parsed.url.startswith(("http://", "https://"))
    assert parsed.protocol_version and parsed.protocol_version.startswith("0.3")
    assert parsed.default_input_modes and parsed.default_output_modes
    assert parsed.capabilities is not None


def test_the_card_describes_its_skills(card: dict[str, Any]) -> None:
    skills = card.get("skills")
    assert isinstance(skills, list) and skills, "a card names at least one skill"
    for skill in skills:
        assert {"id", "name", "description", "tags"} <= set(skill), skill
        assert isinstance(skill["tags"], list)


def test_the_card_url_answers_json_rpc(rpc_url: str) -> None:
    # What a 0.3 client does with the card: POST its requests to this url.
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "no-such-task"}}
    answer = httpx.post(rpc_url, json=body, timeout=30)
    assert answer.status_code == 200
    assert answer.json()["jsonrpc"] == "2.0" and "error" in answer.json()
