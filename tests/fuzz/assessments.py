"""Hostile assessment requests for the green agent: who is assessed and how, gone wrong.

An AgentBeats assessment request names its participants by URL and sets a config; the
strategies here replace any of it (URLs of nobody or of no agent at all, other JSON types, huge
numbers, unknown keys) and send it as a data part, as JSON text or as text that is no JSON.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from hypothesis import strategies as st

from services.common.limits import MAX_TOP_K
from tests.fuzz.payloads import a2a_headers, hostile_text, json_values


def odd_url_examples(nobody: str) -> list[str]:
    """URLs of an agent that is not there, or that are no URL: all fail at once, none leaves
    the machine (``nobody`` refuses every connection)."""
    port = nobody.rsplit(":", 1)[1].strip("/")
    return [
        nobody,
        f"http://localhost:{port}/",
        f"https://127.0.0.1:{port}/",
        f"http://user:secret@127.0.0.1:{port}/a2a?x=1#frag",
        f"http://127.0.0.1:{port}/" + "x" * 5000,
        "http://127.0.0.1:99999/",
        "http://[::1/",
        "http://",
        "ftp://127.0.0.1/",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "",
    ]


def odd_urls(nobody: str) -> st.SearchStrategy[Any]:
    """One of :func:`odd_url_examples`, or any text or JSON value."""
    return st.one_of(st.sampled_from(odd_url_examples(nobody)), hostile_text, json_values)


HUGE = st.integers(min_value=-(2**70), max_value=2**70)


def configs(nobody: str, mcp: str) -> st.SearchStrategy[dict[str, Any]]:
    """An assessment's ``config``: sane (a query or two, valid settings) or with fields of
    other types, huge numbers and URLs of nobody."""
    sane = st.fixed_dictionaries(
        {"num_queries": st.integers(1, 2)},
        optional={
            "top_k": st.integers(1, MAX_TOP_K),
            "random_seed": HUGE,
            "concurrency": st.integers(1, 256),
            "protocol": st.sampled_from(["1.0", "0.3"]),
            "mcp_server_url": st.just(mcp),
        },
    )
    hostile = st.fixed_dictionaries(
        {"num_queries": st.one_of(st.integers(1, 2), HUGE, json_values)},
        optional={
            "top_k": st.one_of(st.integers(-5, 120), json_values),
            "random_seed": st.one_of(HUGE, json_values),
            "concurrency": st.one_of(st.integers(-1, 300), json_values),
            "protocol": st.sampled_from(["1.0", "0.3", "2.0", 1.0, None]),
            "mcp_server_url": st.one_of(st.sampled_from([mcp, nobody]), odd_urls(nobody)),
            "shard_index": st.one_of(st.integers(-1, 3), json_values),
            "num_shards": st.one_of(st.integers(-1, 3), json_values),
        },
    )
    return st.one_of(sane, hostile)


@st.composite
def assessments(draw: st.DrawFn, purple: str, nobody: str, mcp: str) -> Any:
    """An AgentBeats assessment request with any part gone wrong: who is assessed, the config's
    fields, unknown keys, the whole request. One naming ``purple`` (loopback) with a sane
    config is a real assessment of a query or two."""
    agent = draw(st.one_of(st.just(purple), odd_urls(nobody)))
    participants: Any = {"retrieval_agent": agent}
    if draw(st.integers(0, 4)) == 0:
        participants = draw(
            st.one_of(json_values, st.dictionaries(hostile_text, odd_urls(nobody), max_size=3))
        )
    config = draw(configs(nobody, mcp))
    request: Any = {"participants": participants, "config": config}
    if draw(st.integers(0, 5)) == 0:
        request[draw(hostile_text)] = draw(json_values)
    if draw(st.integers(0, 5)) == 0:
        request.pop(draw(st.sampled_from(["participants", "config"])))
    return (
        draw(st.one_of(st.just(request), json_values)) if draw(st.integers(0, 9)) == 0 else request
    )


@st.composite
def assessment_bodies(
    draw: st.DrawFn, purple: str, nobody: str, mcp: str
) -> tuple[dict[str, str], Any]:
    """(headers, ``message/send`` or ``SendMessage`` body) carrying an assessment request as a
    data part, as JSON text, or as text that is no JSON (cut short, or anything)."""
    legacy = draw(st.booleans())
    request = draw(assessments(purple, nobody, mcp))
    text = draw(
        st.one_of(
            st.just(json.dumps(request)),
            st.integers(0, 200).map(lambda cut: json.dumps(request)[:cut]),
            hostile_text,
        )
    )
    kind: dict[str, str] = {"kind": "text"} if legacy else {}
    part: Any = draw(
        st.sampled_from(
            [
                {**kind, "text": text},
                {"kind": "data", "data": request} if legacy else {"data": request},
            ]
        )
    )
    message: dict[str, Any] = {
        "role": "user" if legacy else "ROLE_USER",
        "messageId": uuid.uuid4().hex,
        "parts": [part],
    }
    if legacy:
        message["kind"] = "message"
    body = {
        "jsonrpc": "2.0",
        "id": draw(st.one_of(st.integers(0, 2**31), hostile_text)),
        "method": "message/send" if legacy else "SendMessage",
        "params": {"message": message},
    }
    return a2a_headers(legacy), body
