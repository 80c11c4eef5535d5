"""Hostile A2A requests against the green agent's A2A server (``serve``), in both dialects.

Every answer is a JSON-RPC error or a failed task that says what was wrong, or a completed
assessment whose ``results`` artifact holds a consistent report; never -32603, a 5xx or a stack
trace; the agent is alive afterwards.
"""

from __future__ import annotations

from typing import Any

import httpx
from hypothesis import given
from hypothesis import strategies as st

from devtools.processes import ServerProcess
from tests.fuzz.a2a_verdict import check_green
from tests.fuzz.conftest import assert_alive
from tests.fuzz.payloads import a2a_bodies, encode, json_values
from tests.fuzz.verdict import Tally


def _assessments(nobody: str) -> st.SearchStrategy[Any]:
    """What the green agent accepts, with an evaluated agent that refuses connections at once."""
    return st.fixed_dictionaries(
        {
            "participants": st.one_of(
                st.just({"retrieval_agent": nobody}),
                st.dictionaries(st.text(max_size=5), json_values),
            ),
            "config": st.one_of(
                st.fixed_dictionaries({"num_queries": json_values, "top_k": json_values}),
                json_values,
            ),
        }
    )


@given(data=st.data(), request=a2a_bodies())
def test_the_green_agent_answers_every_message(
    green_process: ServerProcess,
    client: httpx.Client,
    tally: Tally,
    nobody: str,
    data: st.DataObject,
    request: tuple[dict[str, str], Any],
) -> None:
    headers, body = request
    params = body.get("params") if isinstance(body, dict) else None
    message = params.get("message") if isinstance(params, dict) else None
    if isinstance(message, dict) and isinstance(message.get("parts"), list) and message["parts"]:
        assessment = data.draw(_assessments(nobody), label="assessment")
        message["parts"][0] = {"kind": "data", "data": assessment} if "kind" in message else {
            "data": assessment
        }  # fmt: skip
    response = client.post(green_process.base_url + "/", content=encode(body), headers=headers)
    tally.add("a2a green", check_green(response, body), response)


def test_the_green_agent_survived(green_process: ServerProcess) -> None:
    assert_alive(green_process)
