"""A2A answers read in full: the purple agent's retrieval answers and the green agent's assessments.

A result must fit the schema of its method in its dialect (0.3: the SDK's pydantic types; 1.0:
the protobuf messages, unknown fields refused). Then a task is judged by its state: a failed or
rejected task says why in its status message; a completed retrieval carries the contract's one
artifact with one data part ``{"doc_ids": [...]}`` of unique indexed ids, exactly ``top_k`` of
them when the request asked for a valid ``top_k`` (and a request the rules refuse never
completes); a completed assessment carries its ``results`` artifact whose data part is a
consistent report.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from a2a import types as v10
from a2a.compat.v0_3 import types as v03
from google.protobuf import json_format  # type: ignore[import-untyped]  # no stubs
from pydantic import BaseModel, ValidationError

from services.common.limits import MAX_TOP_K
from tests.fuzz.verdict import Contract, decoded, fail, jsonrpc_result, says_what

#: 0.3 methods and the response model of each (the whole JSON-RPC body).
V03_RESPONSES: dict[str, type[BaseModel]] = {
    "message/send": v03.SendMessageSuccessResponse,
    "tasks/get": v03.GetTaskSuccessResponse,
    "tasks/cancel": v03.CancelTaskSuccessResponse,
}
#: 1.0 methods and the protobuf message of each one's result.
V10_RESULTS: dict[str, Any] = {
    "SendMessage": v10.SendMessageResponse,
    "GetTask": v10.Task,
    "CancelTask": v10.Task,
    "ListTasks": v10.ListTasksResponse,
}
#: The public evaluator's result keys, which every completed assessment reports.
LEADERBOARD_KEYS = (
    "mean_ndcg_at_k",
    "mean_mrr_at_k",
    "mean_precision_at_k",
    "mean_recall_at_k",
    "execution_time_seconds",
    "total_queries",
    "successful_communications",
    "vector_search_calls_total",
)


def _method_result(response: httpx.Response, request: Any) -> tuple[str, dict[str, Any]] | str:
    """(method, result) of a well-formed result, or the kind of an answer that is no result."""
    result = jsonrpc_result(response, request)
    if isinstance(result, str):
        return result
    method = decoded(request).get("method")
    if method in V03_RESPONSES:
        try:
            V03_RESPONSES[method].model_validate(response.json())
        except ValidationError as e:
            fail(f"a {method} answer off the A2A 0.3 schema: {e}", request, response)
    elif method in V10_RESULTS:
        try:
            json_format.ParseDict(result, V10_RESULTS[method]())
        except json_format.ParseError as e:
            fail(f"a {method} result off the A2A 1.0 schema: {e}", request, response)
    else:
        fail(f"a result to the unknown method {method!r}", request, response)
    return method, result


def _unwrap(method: str, result: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """("task" | "message" | "task list", the object) of a result the schema check passed."""
    if method == "ListTasks":
        return "task list", result
    if method in ("message/send", "tasks/get", "tasks/cancel"):
        return ("message" if result.get("kind") == "message" else "task"), result
    if method == "SendMessage":
        return ("message", result["message"]) if "message" in result else ("task", result["task"])
    return "task", result


def _state(task: dict[str, Any]) -> str:
    state = str(task["status"]["state"]).lower()
    return state.removeprefix("task_state_").replace("_", "-")


def _data_parts(parts: list[dict[str, Any]]) -> list[Any]:
    return [p["data"] for p in parts if "data" in p and p.get("kind", "data") == "data"]


def _text(parts: list[dict[str, Any]]) -> str:
    return " ".join(str(p["text"]) for p in parts if "text" in p)


def _judge_refusal(task: dict[str, Any], request: Any, response: httpx.Response) -> str | None:
    """The kind of a failed or rejected task (which must say why), None for other states."""
    state = _state(task)
    if state not in ("failed", "rejected"):
        return None
    if not says_what(_text((task["status"].get("message") or {}).get("parts", []))):
        fail(f"a {state} task without a reason", request, response)
    return f"{state} task"


def request_payload(request: Any) -> Any:
    """What a message's reader takes as the request: its first data part, else its text parsed
    as JSON (a plain-text question: ``{}``); None when the message cannot be read."""
    params = decoded(request).get("params")
    message = params.get("message") if isinstance(params, dict) else None
    parts = message.get("parts") if isinstance(message, dict) else None
    if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
        return None
    if data := _data_parts(parts):
        return data[0]
    try:
        payload = json.loads("".join(p["text"] for p in parts if isinstance(p.get("text"), str)))
    except ValueError:
        return {}
    return payload if isinstance(payload, dict) else {}


def _top_k(payload: Any) -> int | None:
    """The ``top_k`` a retrieval request asks for (5 if absent), None if the rules refuse it.

    Data parts carry every number as a float: 5.0 is 5, 5.5 is not."""
    top_k = payload.get("top_k", 5) if isinstance(payload, dict) else None
    if isinstance(top_k, float) and top_k.is_integer():
        top_k = int(top_k)
    valid = isinstance(top_k, int) and not isinstance(top_k, bool) and 1 <= top_k <= MAX_TOP_K
    return top_k if valid else None


def check_doc_ids(
    parts: list[dict[str, Any]], contract: Contract, request: Any, response: httpx.Response
) -> None:
    """One data part ``{"doc_ids": [...]}``: unique indexed ids, ``top_k`` of them."""
    if len(parts) != 1 or len(_data_parts(parts)) != 1:
        fail(f"{len(parts)} parts where the contract has one data part", request, response)
    data = _data_parts(parts)[0]
    if not isinstance(data, dict) or set(data) != {"doc_ids"}:
        fail('the data part is not {"doc_ids": [...]}', request, response)
    ids = data["doc_ids"]
    if not isinstance(ids, list) or not all(isinstance(d, str) for d in ids):
        fail("doc_ids is not a list of strings", request, response)
    if len(set(ids)) != len(ids) or not 1 <= len(ids) <= MAX_TOP_K:
        fail(f"{len(ids)} ids, {len(set(ids))} distinct", request, response)
    if unknown := sorted(set(ids) - contract.doc_ids):
        fail(f"ids the index does not hold: {unknown[:5]}", request, response)
    payload = request_payload(request)
    if payload is not None and len(ids) != (top_k := _top_k(payload)):
        fail(f"{len(ids)} ids for the top_k {top_k} asked", request, response)


def _judge_list(tasks: dict[str, Any], request: Any, response: httpx.Response) -> str:
    for task in tasks.get("tasks", []):
        _judge_refusal(task, request, response)
    return "task list"


def check_a2a(response: httpx.Response, request: Any, contract: Contract) -> str:
    """The purple agent's answer: an error, a failed task with a reason, or the contract's answer."""
    answer = _method_result(response, request)
    if isinstance(answer, str):
        return answer
    kind, value = _unwrap(*answer)
    if kind == "message":  # a reply message: it must carry the answer itself
        check_doc_ids(value["parts"], contract, request, response)
        return "message"
    if kind == "task list":
        return _judge_list(value, request, response)
    if refused := _judge_refusal(value, request, response):
        return refused
    state = _state(value)
    if state == "completed":
        if (value["status"].get("message") or {}).get("parts"):
            fail("a completed task with a status message", request, response)
        artifacts = value.get("artifacts") or []
        if len(artifacts) != 1:
            fail(f"{len(artifacts)} artifacts where the contract has one", request, response)
        check_doc_ids(artifacts[0]["parts"], contract, request, response)
    return f"{state} task"


def check_green(response: httpx.Response, request: Any) -> str:
    """The green agent's answer: an error, a failed task with a reason, or a completed
    assessment whose one ``results`` artifact holds a consistent report as its data part."""
    answer = _method_result(response, request)
    if isinstance(answer, str):
        return answer
    kind, task = _unwrap(*answer)
    if kind == "message":
        fail("an assessment answered by a message, not a task", request, response)
    if kind == "task list":
        return _judge_list(task, request, response)
    if refused := _judge_refusal(task, request, response):
        return refused
    state = _state(task)
    if state == "completed":
        check_assessment(task, request, response)
    return f"{state} task"


def check_assessment(task: dict[str, Any], request: Any, response: httpx.Response) -> None:
    """One ``results`` artifact, whose data part reports every query asked exactly once (and
    the ``top_k`` the request asked, when the request is the assessment's)."""
    artifacts = task.get("artifacts") or []
    if [a.get("name") for a in artifacts] != ["results"]:
        fail("a completed assessment without its one results artifact", request, response)
    data = _data_parts(artifacts[0]["parts"])
    if len(data) != 1 or not isinstance(data[0], dict):
        fail("the results artifact holds no single report data part", request, response)
    report = data[0]
    numbers = [report.get(key) for key in (*LEADERBOARD_KEYS, "answered", "failed", "num_queries")]
    if not all(isinstance(n, int | float) and not isinstance(n, bool) for n in numbers):
        fail("a report without the leaderboard keys and counts", request, response)
    asked = report["num_queries"]
    counted = (report["total_queries"], report["answered"] + report["failed"])
    if counted != (asked, asked) or len(report.get("queries") or []) != asked or asked < 1:
        fail("a report whose counts disagree", request, response)
    payload = request_payload(request)
    if payload is None:  # not the assessment's request (tasks/get): nothing to compare with
        return
    config = payload.get("config")
    top_k = config.get("top_k", 5) if isinstance(config, dict) else 5
    number = isinstance(top_k, int | float) and not isinstance(top_k, bool)
    if number and report.get("top_k") != top_k:
        fail(f"a report of top_k {report.get('top_k')}, {top_k} asked", request, response)
