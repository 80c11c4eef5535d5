"""The search verdicts can fail: each rule, fed a malformed answer that still came with a 200,
fails it, naming the breach; the well-formed answer passes.

No server: answers are built by hand (``httpx.Response``), one rule broken in each. A check that
cannot fail would pass every answer. The A2A verdicts' turn is in ``test_a2a_verdicts.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fuzz.hand_made import CALL, CONTRACT, SCHEMA, SEARCH, Edit, edited
from tests.fuzz.verdict import check_mcp, check_rest


def _hits(*numbers: int) -> dict[str, Any]:
    hits = [{"doc_id": f"MED-{n}", "score": 1 / n, "title": "t", "text": "x"} for n in numbers]
    return {"results": hits}


def _tool_answer() -> dict[str, Any]:
    hits = _hits(1, 2, 3)
    content = [{"type": "text", "text": json.dumps(hits, indent=2)}]
    return {"jsonrpc": "2.0", "id": 7, "result": {"content": content, "structuredContent": hits}}


def _error(code: int, message: str) -> Edit:
    return lambda a: (a.pop("result"), a.update(error={"code": code, "message": message}))


def _structured(a: dict[str, Any]) -> dict[str, Any]:
    results: dict[str, Any] = a["result"]["structuredContent"]
    return results


def test_a_well_formed_search_answer_passes() -> None:
    assert check_rest(edited(_hits(1, 2, 3)), SEARCH, CONTRACT) == "ok"
    assert check_mcp(edited(_tool_answer()), CALL, CONTRACT) == "ok"


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda a: a["results"][0].pop("title"), SCHEMA),
        (lambda a: a["results"][0].update(score="high"), SCHEMA),
        (lambda a: a.pop("results"), SCHEMA),
        (lambda a: a["results"].pop(), "2 ids .* for top_k 3"),
        (lambda a: a["results"].append(a["results"][0]), r"4 ids \(3 distinct\)"),
        (lambda a: a["results"][0].update(doc_id="MED-99"), "the index does not hold"),
        (lambda a: a.update(results=[], error="Search failed"), "0 ids"),  # the seed's way
    ],
    ids=[
        "no title",
        "a score not a number",
        "no results",
        "not top_k",
        "a duplicate",
        "an id not indexed",
        "an error in a 200",
    ],
)
def test_rest_answers_breaking_a_rule_fail(edit: Edit, why: str) -> None:
    with pytest.raises(AssertionError, match=why):
        check_rest(edited(_hits(1, 2, 3), edit), SEARCH, CONTRACT)


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda a: a["result"].update(structuredContent={}), SCHEMA),
        (lambda a: a["result"].pop("structuredContent"), SCHEMA),
        (lambda a: _structured(a)["results"].pop(), "2 ids .* for top_k 3"),
        (lambda a: _structured(a)["results"].append(_hits(1)["results"][0]), "4 ids"),
        (lambda a: _structured(a)["results"][0].update(doc_id="X"), "the index does not hold"),
        (lambda a: a["result"]["content"][0].update(text="{}"), "text block is not"),
        (lambda a: a["result"].update(content=[{"type": "nope"}]), "off the MCP schema"),
        (lambda a: a.update(id=8), "does not answer the request's id"),
        (lambda a: a.pop("jsonrpc"), "not a JSON-RPC response"),
        (lambda a: a.update(error={"code": -32600, "message": "m" * 9}), "one of result, error"),
        (lambda a: a.update(result=[1]), "not an object"),
        (_error(-32603, "something broke in the server"), "internal JSON-RPC error"),
        (_error(-32602, "Error"), "without a reason"),
        (
            lambda a: a["result"].update(isError=True, content=[{"type": "text", "text": "Err"}]),
            "tool error without a reason",
        ),
    ],
    ids=[
        "no results",
        "no structured content",
        "not top_k",
        "a duplicate",
        "an id not indexed",
        "text differs",
        "bad content",
        "another id",
        "no jsonrpc",
        "result and error",
        "a result not an object",
        "-32603",
        "a vague error",
        "a vague tool error",
    ],
)
def test_tool_answers_breaking_a_rule_fail(edit: Edit, why: str) -> None:
    with pytest.raises(AssertionError, match=why):
        check_mcp(edited(_tool_answer(), edit), CALL, CONTRACT)


def test_results_of_other_methods_are_read_too() -> None:
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    tools = [{"name": "search_nfcorpus", "inputSchema": {"type": "object"}}]
    listed = edited({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}})
    assert check_mcp(listed, listing, CONTRACT) == "tools/list"
    for result in ({"tool": tools}, {"tools": [{"name": "x"}]}):
        with pytest.raises(AssertionError, match="tools/list result off the MCP schema"):
            check_mcp(edited({"jsonrpc": "2.0", "id": 1, "result": result}), listing, CONTRACT)
    unknown = {**listing, "method": "tools/lisp"}
    with pytest.raises(AssertionError, match="unknown method"):
        check_mcp(edited({"jsonrpc": "2.0", "id": 1, "result": {}}), unknown, CONTRACT)
    another_tool = {**CALL, "params": {"name": "search_nfcorpus2", "arguments": SEARCH}}
    with pytest.raises(AssertionError, match="unknown tool"):
        check_mcp(edited(_tool_answer()), another_tool, CONTRACT)
    tool_error = {"content": [{"type": "text", "text": "Unknown tool"}], "isError": True}
    with pytest.raises(AssertionError, match="unknown tool"):
        check_mcp(edited({"jsonrpc": "2.0", "id": 7, "result": tool_error}), another_tool, CONTRACT)
    refused = {**CALL, "params": {"name": "search_nfcorpus", "arguments": {**SEARCH, "top_k": 0}}}
    with pytest.raises(AssertionError, match="arguments the rules refuse"):
        check_mcp(edited(_tool_answer()), refused, CONTRACT)
