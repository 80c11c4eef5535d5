"""What every answer to a hostile request must be: a 4xx, a JSON-RPC error or a failed task that
says what was wrong, or a correct answer. Never a 5xx, -32603, a stack trace or a vague message.

A correct answer is read in full, never taken on its status: a JSON-RPC answer has the envelope
of the spec and answers the request's id; a search result (REST or the MCP tool) matches the
tool's published output schema, holds exactly ``top_k`` unique ids of the index, and the tool's
text block is the same JSON. A2A answers are judged in :mod:`tests.fuzz.a2a_verdict`.

Each check returns the kind of answer (for the tally in ``reports/fuzz.json``) and fails the
test with the request and the answer when a rule is broken.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, NoReturn

import httpx
import jsonschema  # type: ignore[import-untyped]  # no stubs; comes with the MCP SDK
import mcp_types
from pydantic import BaseModel, ValidationError

from harness.processes import ServerProcess
from services.common.limits import MAX_TOP_K

INTERNAL_ERROR = -32603
# Messages that do not say what was wrong: what a web framework answers to bad input by default.
VAGUE = re.compile(
    r"^(internal (server )?error|invalid request parameters|retrieval failed|error|"
    r"bad request|unprocessable entity)\.?$",
    re.IGNORECASE,
)
LEAKS = ("Traceback (most recent call last)", 'File "/', "pydantic_core", "input_value=")
TOOL = "search_nfcorpus"
#: The result type of each MCP method the fuzzer sends.
MCP_RESULTS: dict[str, type[BaseModel]] = {
    "tools/list": mcp_types.ListToolsResult,
    "initialize": mcp_types.InitializeResult,
    "ping": mcp_types.EmptyResult,
}


@dataclass(frozen=True)
class Contract:
    """What a search answer is checked against: the tool's published output schema (from
    ``tools/list``) and the ids of the documents the server indexes."""

    output_schema: dict[str, Any]
    doc_ids: frozenset[str]

    def __repr__(self) -> str:
        """Short, for Hypothesis's reports of a failing example."""
        return f"Contract({len(self.doc_ids)} ids)"


class Tally:
    """Counts of answer kinds per interface, and a few answers of each kind, for the report."""

    def __init__(self, samples: int = 2) -> None:
        self.counts: dict[str, Counter[str]] = {}
        self.samples: dict[str, dict[str, list[str]]] = {}
        self._keep = samples
        self.notes: dict[str, str] = {}

    def add(self, interface: str, kind: str, response: httpx.Response) -> None:
        self.counts.setdefault(interface, Counter())[kind] += 1
        kept = self.samples.setdefault(interface, {}).setdefault(kind, [])
        answer = response.text[:240]
        if len(kept) < self._keep and answer not in kept:
            kept.append(answer)

    def note(self, case: str, figure: str) -> None:
        self.notes[case] = figure

    def as_dict(self) -> dict[str, Any]:
        interfaces = {
            name: {"answers": dict(sorted(c.items())), "samples": self.samples[name]}
            for name, c in sorted(self.counts.items())
        }
        return {**interfaces, "notes": self.notes}


def fail(why: str, request: Any, response: httpx.Response) -> NoReturn:
    """Fail the test with the request and the answer."""
    raise AssertionError(
        f"{why}\nrequest: {request!r:.600}\nanswer {response.status_code}: {response.text[:600]}"
    )


def says_what(message: object) -> bool:
    """Whether a refusal's message names a problem (not empty, not a generic phrase)."""
    return (
        isinstance(message, str) and len(message.strip()) >= 8 and not VAGUE.match(message.strip())
    )


def check_http(response: httpx.Response, request: Any) -> dict[str, Any] | None:
    """The rules every HTTP answer follows; the decoded JSON body, if it is an object."""
    if response.status_code >= 500:
        fail("a 5xx answer", request, response)
    if any(leak in response.text for leak in LEAKS):
        fail("the answer leaks internals", request, response)
    try:
        body = response.json()
    except ValueError:
        if response.status_code >= 400 and not says_what(response.text):
            fail("a refusal without a reason", request, response)
        return None
    return body if isinstance(body, dict) else None


def _error_message(body: dict[str, Any] | None, response: httpx.Response) -> str:
    if body is None:
        return response.text
    error = body.get("error")
    detail = body.get("detail")
    if isinstance(error, dict):
        data = error.get("data")
        return f"{error.get('message', '')} {json.dumps(data) if data else ''}".strip()
    return f"{error or ''} {json.dumps(detail) if detail else ''}".strip()


def decoded(request: Any) -> Any:
    """The request as the server decodes it (raw bytes that are JSON included)."""
    if isinstance(request, bytes):
        try:
            return json.loads(request)
        except (ValueError, RecursionError):  # deep nesting: no server takes it either
            return None
    return request


def asked_top_k(arguments: Any) -> int | None:
    """The ``top_k`` a search request asks for (5 if absent), or None if the rules refuse it."""
    top_k = arguments.get("top_k", 5) if isinstance(arguments, dict) else None
    valid = isinstance(top_k, int) and not isinstance(top_k, bool) and 1 <= top_k <= MAX_TOP_K
    return top_k if valid else None


def check_search_answer(
    answer: Any, arguments: Any, contract: Contract, request: Any, response: httpx.Response
) -> None:
    """A search's ``{"results": [...]}``: the output schema, ``top_k`` unique indexed ids."""
    try:
        jsonschema.validate(answer, contract.output_schema)
    except jsonschema.ValidationError as e:
        fail(f"a search answer off the output schema: {e.message}", request, response)
    ids = [hit["doc_id"] for hit in answer["results"]]
    top_k = asked_top_k(arguments)
    if top_k is None:
        fail("a search answer to arguments the rules refuse", request, response)
    if len(ids) != top_k or len(set(ids)) != len(ids):
        fail(f"{len(ids)} ids ({len(set(ids))} distinct) for top_k {top_k}", request, response)
    if unknown := sorted(set(ids) - contract.doc_ids):
        fail(f"ids the index does not hold: {unknown[:5]}", request, response)


def check_rest(response: httpx.Response, request: Any, contract: Contract) -> str:
    """``POST /search_nfcorpus``: a search answer, or a 4xx that names the problem."""
    body = check_http(response, request)
    if response.status_code >= 400:
        if not says_what(_error_message(body, response)):
            fail("a refusal without a reason", request, response)
        return f"{response.status_code}"
    check_search_answer(body, decoded(request), contract, request, response)
    return "ok"


def check_jsonrpc_error(body: dict[str, Any], request: Any, response: httpx.Response) -> str:
    """A JSON-RPC error: an integer code other than -32603, and a message saying what is wrong."""
    error = body["error"]
    code = error.get("code") if isinstance(error, dict) else None
    if code == INTERNAL_ERROR or not isinstance(code, int) or isinstance(code, bool):
        fail("an internal JSON-RPC error", request, response)
    if not isinstance(error.get("message"), str):
        fail("a JSON-RPC error without a message string", request, response)
    if not says_what(_error_message(body, response)):
        fail("a JSON-RPC error without a reason", request, response)
    return f"jsonrpc {code}"


def jsonrpc_result(
    response: httpx.Response, request: Any, notifications: bool = False
) -> str | dict[str, Any]:
    """The kind of a JSON-RPC answer that is not a result (a refusal, an error, a notification's
    empty 202), or the result of a well-formed response to the request, to judge further."""
    body = check_http(response, request)
    if response.status_code >= 400 and (body is None or "error" not in body):
        if not says_what(_error_message(body, response)):
            fail("a refusal without a reason", request, response)
        return f"{response.status_code}"
    sent = decoded(request)
    if body is None:
        id_less = isinstance(sent, dict) and sent.get("id") is None
        if notifications and response.status_code == 202 and id_less:
            return "notification"  # no id: JSON-RPC sends no answer
        fail("an answer that is not JSON-RPC", request, response)
    if body.get("jsonrpc") != "2.0" or ("result" in body) == ("error" in body):
        fail("not a JSON-RPC response: jsonrpc 2.0 and one of result, error", request, response)
    if "error" in body:
        if body.get("id") not in (None, sent.get("id") if isinstance(sent, dict) else None):
            fail("a JSON-RPC error for another id", request, response)
        return check_jsonrpc_error(body, request, response)
    if not isinstance(sent, dict) or "id" not in body or body["id"] != sent.get("id"):
        fail("a JSON-RPC result that does not answer the request's id", request, response)
    result = body["result"]
    if not isinstance(result, dict):
        fail("a JSON-RPC result that is not an object", request, response)
    return result


def check_mcp(response: httpx.Response, request: Any, contract: Contract) -> str:
    """MCP JSON-RPC: a JSON-RPC error, an error result saying what was wrong, or the result of
    the method asked: the search tool's answer, or ``tools/list``, ``initialize``, ``ping``."""
    result = jsonrpc_result(response, request, notifications=True)
    if isinstance(result, str):
        return result
    sent = decoded(request)
    method, params = sent.get("method"), sent.get("params")
    if method != "tools/call":
        if method not in MCP_RESULTS:
            fail(f"a result to the unknown method {method!r}", request, response)
        try:
            MCP_RESULTS[method].model_validate(result)
        except ValidationError as e:
            fail(f"a {method} result off the MCP schema: {e}", request, response)
        return str(method)
    try:
        call = mcp_types.CallToolResult.model_validate(result)
    except ValidationError as e:
        fail(f"a tools/call result off the MCP schema: {e}", request, response)
    texts = [c.text for c in call.content if isinstance(c, mcp_types.TextContent)]
    name = params.get("name") if isinstance(params, dict) else None
    if name != TOOL:
        # Tools specification, error handling: an unknown tool is a protocol error (-32602).
        fail(f"a tool result for the unknown tool {name!r}", request, response)
    if call.is_error:
        if not says_what(" ".join(texts)):
            fail("a tool error without a reason", request, response)
        return "tool error"
    if not isinstance(params.get("arguments"), dict):
        fail(f"a tool result for the unknown tool {name!r}", request, response)
    structured = result.get("structuredContent")
    check_search_answer(structured, params["arguments"], contract, request, response)
    if len(texts) != 1 or json.loads(texts[0]) != structured:
        fail("the text block is not the structured content as JSON", request, response)
    return "ok"


def assert_alive(*servers: ServerProcess) -> None:
    """No crash: each server still runs and answers its liveness probe."""
    for server in servers:
        assert server.running, f"{server.base_url} exited"
        assert httpx.get(server.base_url + "/healthz", timeout=5).status_code == 200
