"""What every answer to a hostile request must be: a 4xx, a JSON-RPC error or a failed task that
says what was wrong, or a correct answer. Never a 5xx, -32603, a stack trace or a vague message.

Each check returns the kind of answer (for the tally in ``reports/fuzz.json``) and fails the
test with the request and the answer when a rule is broken.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import httpx

INTERNAL_ERROR = -32603
# Messages that do not say what was wrong: what the servers used to answer to bad input.
VAGUE = re.compile(
    r"^(internal (server )?error|invalid request parameters|retrieval failed|error|"
    r"bad request|unprocessable entity)\.?$",
    re.IGNORECASE,
)
LEAKS = ("Traceback (most recent call last)", 'File "/', "pydantic_core", "input_value=")


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


def _fail(why: str, request: Any, response: httpx.Response) -> None:
    raise AssertionError(
        f"{why}\nrequest: {request!r:.600}\nanswer {response.status_code}: {response.text[:600]}"
    )


def _says_what(message: object) -> bool:
    return (
        isinstance(message, str) and len(message.strip()) >= 8 and not VAGUE.match(message.strip())
    )


def check_http(response: httpx.Response, request: Any) -> dict[str, Any] | None:
    """The rules every HTTP answer follows; the decoded JSON body, if it is JSON."""
    if response.status_code >= 500:
        _fail("a 5xx answer", request, response)
    if any(leak in response.text for leak in LEAKS):
        _fail("the answer leaks internals", request, response)
    try:
        body = response.json()
    except ValueError:
        if response.status_code >= 400 and not _says_what(response.text):
            _fail("a refusal without a reason", request, response)
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


def check_rest(response: httpx.Response, request: Any) -> str:
    """``POST /search_nfcorpus``: results of the asked length, or a 4xx that names the problem."""
    body = check_http(response, request)
    if response.status_code >= 400:
        if not _says_what(_error_message(body, response)):
            _fail("a refusal without a reason", request, response)
        return f"{response.status_code}"
    results = (body or {}).get("results")
    if not isinstance(results, list) or not isinstance(request, dict):
        _fail("a 2xx that is not a search answer", request, response)
        return "?"
    ids = [r["doc_id"] for r in results]
    if len(ids) != len(set(ids)) or len(ids) != request.get("top_k", 5):
        _fail("duplicate ids or not top_k results", request, response)
    return "ok"


def check_jsonrpc_error(body: dict[str, Any], request: Any, response: httpx.Response) -> str:
    error = body["error"]
    code = error.get("code") if isinstance(error, dict) else None
    if code == INTERNAL_ERROR or not isinstance(code, int):
        _fail("an internal JSON-RPC error", request, response)
    if not _says_what(_error_message(body, response)):
        _fail("a JSON-RPC error without a reason", request, response)
    return f"jsonrpc {code}"


def _jsonrpc_result(
    response: httpx.Response, request: Any, notifications: bool = False
) -> str | dict[str, Any]:
    """The kind of a JSON-RPC answer that is not a result (a refusal, an error, a notification's
    empty 202), or the result to judge further."""
    body = check_http(response, request)
    if response.status_code >= 400 and (body is None or "error" not in body):
        if not _says_what(_error_message(body, response)):
            _fail("a refusal without a reason", request, response)
        return f"{response.status_code}"
    if body is None:
        id_less = isinstance(request, dict) and request.get("id") is None
        if notifications and response.status_code == 202 and id_less:
            return "notification"  # no id: JSON-RPC sends no answer
        _fail("an answer that is not JSON-RPC", request, response)
        return "?"
    if "error" in body:
        return check_jsonrpc_error(body, request, response)
    result = body.get("result")
    return result if isinstance(result, dict) else {}


def check_mcp(response: httpx.Response, request: Any) -> str:
    """MCP JSON-RPC: a result (an error result saying what was wrong) or a JSON-RPC error."""
    result = _jsonrpc_result(response, request, notifications=True)
    if isinstance(result, str):
        return result
    if result.get("isError"):
        texts = " ".join(c.get("text", "") for c in result.get("content", []))
        if not _says_what(texts):
            _fail("a tool error without a reason", request, response)
        return "tool error"
    return "ok"


def _task_of(result: dict[str, Any]) -> dict[str, Any] | None:
    if result.get("kind") == "task":
        return result
    task = result.get("task")
    return task if isinstance(task, dict) else None


def check_a2a(response: httpx.Response, request: Any, doc_answer: bool = True) -> str:
    """A2A JSON-RPC: an error, a failed task with a message, or a completed task's answer."""
    result = _jsonrpc_result(response, request)
    if isinstance(result, str):
        return result
    task = _task_of(result)
    if task is None:
        return "other result"  # a task list or a reply message: nothing to judge here
    state = str(task.get("status", {}).get("state", "")).lower()
    if "failed" in state or "rejected" in state:
        message = task["status"].get("message") or {}
        texts = " ".join(str(p.get("text", "")) for p in message.get("parts", []))
        if not _says_what(texts):
            _fail("a failed task without a reason", request, response)
        return "failed task"
    if doc_answer and "completed" in state:
        (artifact,) = task["artifacts"]
        (part,) = artifact["parts"]
        ids = part["data"]["doc_ids"]
        if len(ids) != len(set(ids)) or not ids:
            _fail("a completed task with a bad answer", request, response)
    return state.removeprefix("task_state_") or "no state"
