"""Hypothesis strategies for hostile requests: near-valid bodies with one part gone wrong.

Purely random bytes stop at the first JSON parse, so most strategies start from a valid request
and replace one field with anything: other JSON types, huge or negative numbers, lone
surrogates, control characters, deep nesting, unknown fields. Raw bytes (invalid UTF-8,
truncated JSON) and odd content types cover the layer below.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from hypothesis import strategies as st

#: The headers of every MCP request over streamable HTTP.
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

# Text as attackers send it: any code point, lone surrogates included (JSON escapes them).
hostile_text = st.text(
    st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=40
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    hostile_text,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(hostile_text, inner, max_size=4)
    ),
    max_leaves=12,
)


def nested(depth: int) -> str:
    """A JSON text nested ``depth`` levels deep."""
    return "[" * depth + "]" * depth


deep_json = st.integers(min_value=30, max_value=3000).map(nested)
plain_queries = st.sampled_from(["vitamin D", "soy milk and breast cancer", "statins", "x"])
queries = st.one_of(plain_queries, hostile_text, json_values)
top_ks = st.one_of(st.integers(min_value=-5, max_value=120), json_values)


@st.composite
def search_payloads(draw: st.DrawFn) -> Any:
    """``{"query", "top_k"}`` with either field (or the whole object) replaced or removed."""
    payload: dict[str, Any] = {"query": draw(queries), "top_k": draw(top_ks)}
    if draw(st.booleans()):
        payload.pop(draw(st.sampled_from(["query", "top_k"])))
    if draw(st.integers(0, 5)) == 0:
        payload[draw(hostile_text)] = draw(json_values)
    return (
        draw(st.one_of(st.just(payload), json_values)) if draw(st.integers(0, 4)) == 0 else payload
    )


def encode(value: Any) -> bytes:
    """JSON as a client sends it: lone surrogates become ``\\udXXX`` escapes."""
    return json.dumps(value, ensure_ascii=True).encode()


raw_bodies = st.one_of(
    st.binary(max_size=200),
    deep_json.map(str.encode),
    search_payloads()
    .map(encode)
    .flatmap(
        lambda body: st.integers(0, max(len(body) - 1, 0)).map(lambda cut: body[:cut])
    ),  # truncated JSON
)
content_types = st.sampled_from(
    [
        "application/json",
        "text/plain",
        "application/x-www-form-urlencoded",
        "",
        "application/json; charset=latin-1",
    ]
)


@st.composite
def a2a_parts(draw: st.DrawFn, legacy: bool) -> list[Any]:
    """The parts of a message: text, data and file parts holding near-valid payloads."""
    kind_key = {"kind": "text"} if legacy else {}
    text = draw(st.one_of(search_payloads().map(lambda p: json.dumps(p)), hostile_text))
    options = [
        {**kind_key, "text": text},
        {"kind": "data", "data": draw(search_payloads())}
        if legacy
        else {"data": draw(search_payloads())},
        {"kind": "file", "file": {"bytes": draw(hostile_text), "mimeType": "application/json"}}
        if legacy
        else {"raw": draw(hostile_text), "mediaType": "application/json"},
        draw(json_values),
    ]
    return draw(st.lists(st.sampled_from(options), max_size=3))


@st.composite
def a2a_bodies(draw: st.DrawFn) -> tuple[dict[str, str], Any]:
    """(headers, JSON-RPC body) in either dialect, with the message, method or envelope off."""
    legacy = draw(st.booleans())
    message: dict[str, Any] = {
        "role": "user" if legacy else "ROLE_USER",
        "messageId": uuid.uuid4().hex,
        "parts": draw(a2a_parts(legacy)),
    }
    if legacy:
        message["kind"] = "message"
    if draw(st.integers(0, 3)) == 0:
        message[draw(st.sampled_from(["role", "messageId", "parts", "taskId", "metadata"]))] = draw(
            json_values
        )
    methods = ["message/send", "tasks/get", "tasks/cancel", "tasks/list"] if legacy else [
        "SendMessage", "GetTask", "CancelTask", "ListTasks"
    ]  # fmt: skip
    method = draw(st.one_of(st.sampled_from(methods[:1] * 3 + methods), hostile_text))
    params: Any = {"message": message} if "essage" in method else {"id": draw(json_values)}
    body: Any = {
        "jsonrpc": "2.0",
        "id": draw(st.one_of(st.integers(), hostile_text)),
        "method": method,
        "params": params,
    }
    if draw(st.integers(0, 5)) == 0:
        body[draw(st.sampled_from(["jsonrpc", "id", "method", "params"]))] = draw(json_values)
    return a2a_headers(legacy), body


@st.composite
def mcp_bodies(draw: st.DrawFn) -> Any:
    """A JSON-RPC ``tools/call`` of ``search_nfcorpus`` (or a neighbour) with odd arguments."""
    name = draw(st.one_of(st.just("search_nfcorpus"), hostile_text))
    params: Any = {"name": name, "arguments": draw(search_payloads())}
    method = draw(st.sampled_from(["tools/call"] * 4 + ["tools/list", "initialize", "ping"]))
    body: Any = {
        "jsonrpc": "2.0",
        "id": draw(st.integers(0, 2**31)),
        "method": method,
        "params": params,
    }
    if draw(st.integers(0, 5)) == 0:
        body[draw(st.sampled_from(["jsonrpc", "id", "method", "params"]))] = draw(json_values)
    return body


@st.composite
def retrieval_bodies(draw: st.DrawFn) -> tuple[dict[str, str], Any]:
    """(headers, ``message/send`` or ``SendMessage`` body) whose envelope is right and whose one
    part carries a near-valid search payload, as JSON text, a data part or plain text: many
    are answered, so the contract of a completed answer is read often."""
    legacy = draw(st.booleans())
    payload = draw(search_payloads())
    kind: dict[str, str] = {"kind": "text"} if legacy else {}
    text = draw(st.one_of(st.just(json.dumps(payload)), plain_queries, hostile_text))
    data = {"kind": "data", "data": payload} if legacy else {"data": payload}
    message: dict[str, Any] = {
        "role": "user" if legacy else "ROLE_USER",
        "messageId": uuid.uuid4().hex,
        "parts": [draw(st.sampled_from([{**kind, "text": text}, data]))],
        **({"kind": "message"} if legacy else {}),
    }
    method = "message/send" if legacy else "SendMessage"
    body = {"jsonrpc": "2.0", "id": draw(st.integers(0, 2**31)), "method": method}
    return a2a_headers(legacy), {**body, "params": {"message": message}}


def a2a_headers(legacy: bool) -> dict[str, str]:
    """What an A2A client sends with a JSON-RPC body: its type (a post without it is refused at
    the door, before any of the protocol is read) and, in 1.0, the version."""
    return {"content-type": "application/json", **({} if legacy else {"A2A-Version": "1.0"})}
