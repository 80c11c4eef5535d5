"""Parsing of the AgentBeats assessment request by the green agent's A2A server."""

from __future__ import annotations

import pytest
from a2a.helpers import new_data_part, new_text_part
from a2a.types import Message, Role

from services.green_agent.assessment.card import EXAMPLE, build_card
from services.green_agent.assessment.request import parse_assessment


def _msg(part) -> Message:
    return Message(role=Role.ROLE_USER, message_id="m", parts=[part])


def test_the_card_example_parses() -> None:
    request = parse_assessment(_msg(new_text_part(EXAMPLE)))
    assert str(request.participants["retrieval_agent"]) == "http://127.0.0.1:9010/"
    assert (request.config.num_queries, request.config.top_k, request.config.random_seed) == (
        50,
        5,
        42,
    )
    card = build_card("http://green:9009/")
    assert [i.protocol_version for i in card.supported_interfaces] == ["1.0", "0.3"]


def test_a_data_part_with_float_numbers_parses() -> None:
    payload = {
        "participants": {"retrieval_agent": "http://p:1/"},
        "config": {"num_queries": 30, "top_k": 10, "random_seed": 7, "protocol": "0.3"},
    }
    config = parse_assessment(_msg(new_data_part(payload))).config
    assert (config.num_queries, config.top_k, config.random_seed, config.protocol) == (
        30,
        10,
        7,
        "0.3",
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nope", "the assessment request is not JSON"),
        ('{"config": {}}', "invalid assessment request: participants: Field required"),
        (
            '{"participants": {"retrieval_agent": "not a url"}}',
            "invalid assessment request: participants.retrieval_agent:",
        ),
        (
            '{"participants": {"other": "http://x/"}}',
            "participants must name a 'retrieval_agent' (got ['other'])",
        ),
        (
            '{"participants": {"retrieval_agent": "http://x/"}, "config": {"top_k": 0}}',
            "invalid assessment request: config.top_k: Input should be greater than or equal to 1",
        ),
        (  # the fuzzer's: httpx raised on it only when the run asked the server (-32603)
            '{"participants": {"retrieval_agent": "http://x/"}, '
            '"config": {"mcp_server_url": "http://127.0.0.1:99999/"}}',
            "invalid assessment request: config.mcp_server_url: Input should be a valid URL",
        ),
        (
            '{"participants": {"retrieval_agent": "http://x/"}, '
            '"config": {"mcp_server_url": "http://[::1/"}}',
            "invalid assessment request: config.mcp_server_url: Input should be a valid URL",
        ),
    ],
)
def test_bad_requests_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ValueError) as error:
        parse_assessment(_msg(new_text_part(text)))
    assert str(error.value).startswith(message)


def test_the_search_server_may_be_named_by_base_url_or_mcp_endpoint_or_not_at_all() -> None:
    for server in ("http://mcp-server:8000", "http://127.0.0.1:8000/mcp", "", None):
        config = {"mcp_server_url": server}
        payload = {"participants": {"retrieval_agent": "http://x/"}, "config": config}
        assert parse_assessment(_msg(new_data_part(payload))).config.mcp_server_url == server
