"""Hostile A2A requests against the purple agent and the green agent, in both dialects.

Every answer is a JSON-RPC error that says what was wrong, a failed task with a message, or a
correct answer; never -32603, a 5xx or a stack trace; both servers are alive afterwards.
"""

from __future__ import annotations

from typing import Any

import httpx
from hypothesis import given
from hypothesis import strategies as st

from devtools.processes import ServerProcess
from tests.fuzz.conftest import assert_alive
from tests.fuzz.payloads import a2a_bodies, content_types, encode, json_values, raw_bodies
from tests.fuzz.verdict import Tally, check_a2a

# What the green agent accepts, with an evaluated agent that refuses connections at once.
NOBODY = "http://127.0.0.1:9/"
assessments = st.fixed_dictionaries(
    {
        "participants": st.one_of(
            st.just({"retrieval_agent": NOBODY}), st.dictionaries(st.text(max_size=5), json_values)
        ),
        "config": st.one_of(
            st.fixed_dictionaries({"num_queries": json_values, "top_k": json_values}), json_values
        ),
    }
)


@given(request=a2a_bodies())
def test_the_purple_agent_answers_every_message(
    purple_process: ServerProcess,
    client: httpx.Client,
    tally: Tally,
    request: tuple[dict[str, str], Any],
) -> None:
    headers, body = request
    response = client.post(purple_process.base_url + "/", content=encode(body), headers=headers)
    tally.add("a2a purple", check_a2a(response, body), response)


@given(body=raw_bodies, content_type=content_types, v10=st.booleans())
def test_the_purple_agent_answers_every_body(
    purple_process: ServerProcess,
    client: httpx.Client,
    tally: Tally,
    body: bytes,
    content_type: str,
    v10: bool,
) -> None:
    headers = {"content-type": content_type, **({"A2A-Version": "1.0"} if v10 else {})}
    response = client.post(purple_process.base_url + "/", content=body, headers=headers)
    tally.add("a2a purple", check_a2a(response, body), response)


@given(request=a2a_bodies(), assessment=assessments)
def test_the_green_agent_answers_every_message(
    green_process: ServerProcess,
    client: httpx.Client,
    tally: Tally,
    request: tuple[dict[str, str], Any],
    assessment: Any,
) -> None:
    headers, body = request
    message = (
        body.get("params", {}).get("message") if isinstance(body.get("params"), dict) else None
    )
    if isinstance(message, dict) and isinstance(message.get("parts"), list) and message["parts"]:
        message["parts"][0] = {"kind": "data", "data": assessment} if "kind" in message else {
            "data": assessment
        }  # fmt: skip
    response = client.post(green_process.base_url + "/", content=encode(body), headers=headers)
    tally.add("a2a green", check_a2a(response, body, doc_answer=False), response)


def test_both_agents_survived(purple_process: ServerProcess, green_process: ServerProcess) -> None:
    assert_alive(purple_process, green_process)
