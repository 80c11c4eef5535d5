"""One structured JSON line per request in every service, with the trace that links them.

Both servers run as processes writing JSON logs (what a container's stdout carries). Valid and
invalid requests each leave exactly one request line with route, status, outcome and duration;
the purple agent's line and the MCP server's line of one query share a trace id; no line holds
more of a query than its short prefix.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.processes import ServerProcess
from tests.support.purple import v03_body
from tests.support.small_index import SmallIndex

# The purple agent and its log, the MCP server's log and the MCP server.
Logged = tuple[ServerProcess, Path, Path, ServerProcess]
SECRET_TAIL = "and the rest of this long question must never reach a log line"


@pytest.fixture(scope="module")
def logged(small_index: SmallIndex, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Logged]:
    folder = tmp_path_factory.mktemp("request-logs")
    mcp_log, purple_log = folder / "mcp.log", folder / "purple.log"
    env = {"LOG_FORMAT": "json"}
    mcp = ServerProcess.module(
        "services.mcp_server", env={**small_index.env(private_copy=True), **env}, log_path=mcp_log
    )
    with mcp:
        purple_env = {**env, "PURPLE_MCP_URL": mcp.base_url + "/mcp"}
        with ServerProcess.module(
            "services.purple_agent", env=purple_env, log_path=purple_log
        ) as purple:
            yield purple, purple_log, mcp_log, mcp


def _lines(path: Path) -> list[dict[str, Any]]:
    # Records are split on "\n" alone, as a log shipper does; a line still being written (no
    # "\n" yet) is not a record.
    complete = path.read_text().split("\n")[:-1]
    return [json.loads(line) for line in complete if line.strip()]


def _requests(path: Path, route: str) -> list[dict[str, Any]]:
    return [r for r in _lines(path) if r["logger"] == "nfcorpus.request" and r["route"] == route]


def _wait_for(condition: Callable[[], object], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the request lines were not written"
        time.sleep(0.02)


def test_every_request_gets_one_json_line_linked_by_its_trace(
    logged: Logged,
) -> None:
    purple, purple_log, mcp_log, _ = logged
    query = f"vitamin D supplements {SECRET_TAIL}"
    with httpx.Client(base_url=purple.base_url, timeout=30) as client:
        ok = client.post("/", json=v03_body(json.dumps({"query": query, "top_k": 3})))
        bad = client.post("/", json=v03_body('{"query": ""}'))
    assert ok.json()["result"]["status"]["state"] == "completed"
    assert bad.json()["result"]["status"]["state"] == "failed"
    # The lines are written as the answers go out: wait for both, do not guess how long.
    _wait_for(
        lambda: (
            len(_requests(purple_log, "/")) >= 2
            and any("via" in r for r in _requests(mcp_log, "/mcp"))
        )
    )

    lines = _lines(purple_log)  # every line of the stream is JSON (uvicorn's included)
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    answered, refused = _requests(purple_log, "/")
    for line, outcome in ((answered, "ok"), (refused, "failed")):  # a failed task is a failure
        assert (line["method"], line["status"], line["outcome"]) == ("POST", 200, outcome)
        assert line["duration_ms"] > 0 and re.fullmatch(r"[0-9a-f]{32}", line["trace_id"])
    assert answered["top_k"] == 3 and answered["query"] == "vitamin D supplements an…"
    assert "reason" not in answered and refused["reason"] == "invalid_request"

    # The MCP session also initializes; the tool call is the line with the search's fields.
    (search,) = [r for r in _requests(mcp_log, "/mcp") if "via" in r]
    assert search["via"] == "tool" and search["top_k"] >= 3
    assert search["trace_id"] == answered["trace_id"]  # one trace across both services
    for path in (purple_log, mcp_log):
        assert SECRET_TAIL not in path.read_text()


def test_a_query_with_unicode_line_breaks_stays_one_line(
    logged: Logged,
) -> None:
    _, _, mcp_log, mcp = logged
    # Raw JSON: the escapes reach the server as U+2028 and U+0085.
    body = '{"query": "a\\u2028b\\u0085c", "top_k": 2}'
    headers = {"content-type": "application/json"}
    answer = httpx.post(
        mcp.base_url + "/search_nfcorpus", content=body, headers=headers, timeout=30
    )
    assert answer.status_code == 200
    _wait_for(lambda: any(r.get("top_k") == 2 for r in _requests(mcp_log, "/search_nfcorpus")))
    text = mcp_log.read_text(encoding="utf-8")  # strict: every byte written is UTF-8
    assert text.splitlines() == text.rstrip("\n").split("\n")  # no break but "\n"
    (line,) = [r for r in _requests(mcp_log, "/search_nfcorpus") if r.get("top_k") == 2]
    assert line["query"] == "a\u2028b\u0085c"
