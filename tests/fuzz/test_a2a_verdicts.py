"""The A2A verdicts can fail: each rule, fed a malformed answer that still came with a 200, fails
it, naming the breach; the well-formed answer passes. The purple agent's retrieval answers in
both dialects, then the green agent's assessments.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fuzz.a2a_verdict import check_a2a, check_green
from tests.fuzz.hand_made import CONTRACT, Edit, edited
from tests.support.purple import v03_body, v10_body

SEARCH = {"query": "soy", "top_k": 3}
V03 = v03_body(json.dumps(SEARCH))
V10 = v10_body([{"data": SEARCH}])
ASSESSMENT = {
    "participants": {"retrieval_agent": "http://purple.example/"},
    "config": {"num_queries": 2, "top_k": 3},
}
GREEN = v03_body(json.dumps(ASSESSMENT))
V03_SCHEMA = "off the A2A 0.3 schema"
V10_SCHEMA = "off the A2A 1.0 schema"


def _ids(n: int) -> dict[str, Any]:
    return {"doc_ids": [f"MED-{i}" for i in range(1, n + 1)]}


def _v03_task(data: Any, state: str = "completed") -> dict[str, Any]:
    artifact = {"artifactId": "a", "name": "results", "parts": [{"kind": "data", "data": data}]}
    task = {"kind": "task", "id": "t", "contextId": "c", "status": {"state": state}}
    return {"jsonrpc": "2.0", "id": 1, "result": {**task, "artifacts": [artifact]}}


def _v10_task(data: Any) -> dict[str, Any]:
    artifact = {"artifactId": "a", "name": "results", "parts": [{"data": data}]}
    status = {"state": "TASK_STATE_COMPLETED"}
    task = {"id": "t", "contextId": "c", "status": status, "artifacts": [artifact]}
    return {"jsonrpc": "2.0", "id": 2, "result": {"task": task}}


def _parts(answer: dict[str, Any]) -> list[dict[str, Any]]:
    result = answer["result"]
    parts: list[dict[str, Any]] = result.get("task", result)["artifacts"][0]["parts"]
    return parts


def _data(answer: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = _parts(answer)[0]["data"]
    return data


def _say(answer: dict[str, Any], text: str) -> None:
    parts = [{"kind": "text", "text": text}]
    message = {"kind": "message", "role": "agent", "messageId": "m", "parts": parts}
    answer["result"]["status"]["message"] = message


def _internal_error(answer: dict[str, Any]) -> None:
    answer.pop("result")
    answer["error"] = {"code": -32603, "message": "the executor raised something"}


def test_well_formed_answers_pass() -> None:
    assert check_a2a(edited(_v03_task(_ids(3))), V03, CONTRACT) == "completed task"
    assert check_a2a(edited(_v10_task(_ids(3))), V10, CONTRACT) == "completed task"
    plain = v03_body("is soy good for you?")  # a question: the default top_k, 5
    assert check_a2a(edited(_v03_task(_ids(5))), plain, CONTRACT) == "completed task"
    failed = _v03_task(_ids(3), state="failed")
    _say(failed, "invalid request: top_k must be between 1 and 100, got 0")
    assert check_a2a(edited(failed), V03, CONTRACT) == "failed task"


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        pytest.param(
            lambda a: a["result"]["artifacts"].append(a["result"]["artifacts"][0]),
            "2 artifacts",
            id="two artifacts",
        ),
        pytest.param(lambda a: a["result"].update(artifacts=[]), "0 artifacts", id="none"),
        pytest.param(lambda a: _parts(a).append(_parts(a)[0]), "2 parts", id="two parts"),
        pytest.param(lambda a: _data(a)["doc_ids"].append("MED-1"), "4 ids, 3 distinct", id="dup"),
        pytest.param(lambda a: _data(a)["doc_ids"].pop(), "2 ids for the top_k 3", id="not top_k"),
        pytest.param(lambda a: _data(a)["doc_ids"].__setitem__(0, "X"), "not hold", id="unknown"),
        pytest.param(lambda a: _data(a).update(score=1), "is not {", id="another key"),
        pytest.param(lambda a: _data(a).update(doc_ids=[1, 2, 3]), "not a list of str", id="ints"),
        pytest.param(lambda a: _say(a, "here you are"), "status message", id="a status message"),
        pytest.param(
            lambda a: a["result"]["status"].update(state="failed"), "without a reason", id="failed"
        ),
        pytest.param(lambda a: a["result"].pop("status"), V03_SCHEMA, id="no status"),
        pytest.param(lambda a: a["result"].update(id=None), V03_SCHEMA, id="no task id"),
        pytest.param(lambda a: a.update(id=5), "request's id", id="another id"),
        pytest.param(_internal_error, "internal JSON-RPC error", id="-32603"),
    ],
)
def test_0_3_answers_breaking_a_rule_fail(edit: Edit, why: str) -> None:
    with pytest.raises(AssertionError, match=why):
        check_a2a(edited(_v03_task(_ids(3)), edit), V03, CONTRACT)


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        pytest.param(
            lambda a: a["result"]["task"]["artifacts"].append({"artifactId": "b", "parts": []}),
            "2 artifacts",
            id="two artifacts",
        ),
        pytest.param(lambda a: _data(a)["doc_ids"].append("MED-1"), "4 ids, 3 distinct", id="dup"),
        pytest.param(lambda a: a["result"]["task"].update(kind="task"), V10_SCHEMA, id="0.3 kind"),
        pytest.param(
            lambda a: a["result"]["task"]["status"].update(state="TASK_STATE_FAILED"),
            "without a reason",
            id="failed",
        ),
        pytest.param(lambda a: a.update(result={"task": {}, "message": {}}), V10_SCHEMA, id="both"),
    ],
)
def test_1_0_answers_breaking_a_rule_fail(edit: Edit, why: str) -> None:
    with pytest.raises(AssertionError, match=why):
        check_a2a(edited(_v10_task(_ids(3)), edit), V10, CONTRACT)


@pytest.mark.parametrize("top_k", [0, 101, "3", True, 2.5])
def test_a_request_the_rules_refuse_never_completes(top_k: object) -> None:
    request = v03_body(json.dumps({"query": "soy", "top_k": top_k}))
    with pytest.raises(AssertionError, match="top_k None"):
        check_a2a(edited(_v03_task(_ids(1))), request, CONTRACT)


def test_a_result_to_an_unknown_method_fails() -> None:
    with pytest.raises(AssertionError, match="unknown method"):
        check_a2a(edited(_v03_task(_ids(3))), {**V03, "method": "message/sent"}, CONTRACT)


def _report(num_queries: int = 2, top_k: int = 3) -> dict[str, Any]:
    means = ("mean_ndcg_at_k", "mean_mrr_at_k", "mean_precision_at_k", "mean_recall_at_k")
    return {
        **dict.fromkeys(means, 0.5),
        "execution_time_seconds": 0.2,
        "successful_communications": num_queries,
        "vector_search_calls_total": 0,
        "total_queries": num_queries,
        "num_queries": num_queries,
        "answered": num_queries,
        "failed": 0,
        "top_k": top_k,
        "queries": [{"query_id": "q"}] * num_queries,
    }


def test_a_consistent_assessment_and_a_failure_with_its_reason_pass() -> None:
    assert check_green(edited(_v03_task(_report())), GREEN) == "completed task"
    failed = _v03_task(_report(), state="failed")
    _say(failed, "cannot reach http://purple.example/: connection refused")
    assert check_green(edited(failed), GREEN) == "failed task"


def _a_message(answer: dict[str, Any]) -> None:
    parts = [{"kind": "text", "text": "done, see the report"}]
    answer["result"] = {"kind": "message", "role": "agent", "messageId": "m", "parts": parts}


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        pytest.param(lambda a: a["result"].update(artifacts=[]), "results artifact", id="none"),
        pytest.param(
            lambda a: a["result"]["artifacts"][0].update(name="report"),
            "results artifact",
            id="another name",
        ),
        pytest.param(lambda a: _parts(a).clear(), "no single report", id="no data part"),
        pytest.param(lambda a: _data(a).pop("mean_ndcg_at_k"), "leaderboard keys", id="no key"),
        pytest.param(lambda a: _data(a).update(answered=True), "leaderboard keys", id="a bool"),
        pytest.param(lambda a: _data(a).update(failed=1), "counts disagree", id="counts"),
        pytest.param(lambda a: _data(a).update(queries=[]), "counts disagree", id="no queries"),
        pytest.param(lambda a: _data(a).update(top_k=5), "top_k 5, 3 asked", id="another top_k"),
        pytest.param(
            lambda a: a["result"]["status"].update(state="failed"), "without a reason", id="failed"
        ),
        pytest.param(_a_message, "answered by a message", id="a message"),
        pytest.param(_internal_error, "internal JSON-RPC error", id="-32603"),
    ],
)
def test_assessments_breaking_a_rule_fail(edit: Edit, why: str) -> None:
    with pytest.raises(AssertionError, match=why):
        check_green(edited(_v03_task(_report()), edit), GREEN)


def test_every_task_of_a_task_list_is_read() -> None:
    listing = {"jsonrpc": "2.0", "id": 3, "method": "ListTasks", "params": {}}
    task = {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}
    answer = {"jsonrpc": "2.0", "id": 3, "result": {"tasks": [task], "totalSize": 1}}
    assert check_green(edited(answer), listing) == "task list"
    assert check_a2a(edited(answer), listing, CONTRACT) == "task list"
    task["status"]["state"] = "TASK_STATE_FAILED"  # type: ignore[index]
    with pytest.raises(AssertionError, match="without a reason"):
        check_green(edited(answer), listing)
    task["kind"] = "task"
    with pytest.raises(AssertionError, match=V10_SCHEMA):
        check_a2a(edited(answer), listing, CONTRACT)
