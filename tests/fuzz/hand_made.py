"""Answers built by hand for the verdicts' own tests: the contract of a toy index (MED-1 to
MED-8), the request they answer, and an answer edited one way before it is sent."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import httpx

from services.mcp_server.schemas import SearchResponse
from tests.fuzz.verdict import Contract

CONTRACT = Contract(SearchResponse.model_json_schema(), frozenset(f"MED-{i}" for i in range(1, 9)))
SEARCH = {"query": "soy", "top_k": 3}
CALL = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {"name": "search_nfcorpus", "arguments": SEARCH},
}
Edit = Callable[[dict[str, Any]], object]
SCHEMA = "off the output schema"


def edited(answer: dict[str, Any], edit: Edit | None = None) -> httpx.Response:
    """A 200 carrying ``answer`` after ``edit``."""
    answer = copy.deepcopy(answer)
    if edit is not None:
        edit(answer)
    return httpx.Response(200, json=answer)
