"""The answer contract the green agent checks on every reply, and the 0.3 concatenation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from a2a.helpers import new_data_part, new_text_part
from a2a.types import Artifact, Message, Role, Task, TaskState, TaskStatus

from services.green_agent.evaluation.answer_contract import (
    ContractViolation,
    Reply,
    ReplyPart,
    check_reply,
    legacy_concatenation,
)
from services.green_agent.evaluation.client import reply_from_task, reply_from_v03_result

VALID = frozenset(f"MED-{i}" for i in range(1, 20))


def _ok(ids: list[Any]) -> Reply:
    return Reply("completed", [], [[ReplyPart("data", {"doc_ids": ids})]])


def test_a_conforming_reply_passes_in_both_modes() -> None:
    ids = ["MED-3", "MED-1", "MED-2"]
    assert check_reply(_ok(ids), 3, VALID) == ids
    assert check_reply(_ok(ids), 3, VALID, legacy=True) == ids


@pytest.mark.parametrize(
    ("reply", "reason", "message"),
    [
        (
            Reply("failed", [ReplyPart("text", "invalid request: boom")]),
            "failed_task",
            "task failed: invalid request: boom",
        ),
        (
            Reply("completed", [ReplyPart("text", "done")], [[ReplyPart("data", {"doc_ids": []})]]),
            "contract",
            "the completed status carries a message",
        ),
        (Reply("completed"), "contract", "expected 1 artifact, got 0"),
        (
            Reply("completed", [], [[ReplyPart("data", {"doc_ids": ["MED-1"]})]] * 2),
            "contract",
            "expected 1 artifact, got 2",
        ),
        (
            Reply("completed", [], [[ReplyPart("text", '{"doc_ids": ["MED-1"]}')]]),
            "contract",
            "expected 1 data part, got parts ['text']",
        ),
        (
            Reply("completed", [], [[ReplyPart("data", {"ids": []})]]),
            "contract",
            'the data part is not {"doc_ids": [...]}',
        ),
        (_ok(["MED-1", 2, "MED-3"]), "contract", "doc_ids holds a non-string"),
        (_ok(["MED-1", "MED-1", "MED-3"]), "contract", "doc_ids holds duplicates"),
        (_ok(["MED-1", "MED-999", "MED-3"]), "contract", "unknown doc ids ['MED-999']"),
        (_ok(["MED-1", "MED-2"]), "contract", "expected 3 doc ids, got 2"),
        (_ok(["MED-1", "MED-2", "MED-3", "MED-4"]), "contract", "expected 3 doc ids, got 4"),
    ],
)
def test_each_breach_is_named(reply: Reply, reason: str, message: str) -> None:
    with pytest.raises(ContractViolation) as violation:
        check_reply(reply, 3, VALID)
    assert (violation.value.reason, str(violation.value)) == (reason, message)


def test_legacy_concatenation_is_what_a_03_green_agent_parses() -> None:
    reply = _ok(["MED-1", "MED-2"])
    assert json.loads(legacy_concatenation(reply)) == {"doc_ids": ["MED-1", "MED-2"]}
    # A data part plus a text part would break json.loads on the 0.3 side.
    two_parts = Reply(
        "completed", [], [[ReplyPart("data", {"doc_ids": []}), ReplyPart("text", "x")]]
    )
    assert legacy_concatenation(two_parts).endswith("\nx")


def test_replies_convert_from_1_0_tasks_and_0_3_results() -> None:
    task = Task(
        id="t",
        context_id="c",
        status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED),
        artifacts=[Artifact(artifact_id="a", parts=[new_data_part({"doc_ids": ["MED-1"]})])],
    )
    assert reply_from_task(task) == _ok(["MED-1"])
    failed = Task(
        id="t",
        context_id="c",
        status=TaskStatus(
            state=TaskState.TASK_STATE_FAILED,
            message=Message(role=Role.ROLE_AGENT, message_id="m", parts=[new_text_part("no")]),
        ),
    )
    assert reply_from_task(failed) == Reply("failed", [ReplyPart("text", "no")])
    result = {
        "kind": "task",
        "status": {"state": "completed"},
        "artifacts": [{"parts": [{"kind": "data", "data": {"doc_ids": ["MED-1"]}}]}],
    }
    assert reply_from_v03_result(result) == _ok(["MED-1"])
