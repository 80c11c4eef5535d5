"""A participant cannot hold the green agent: its answers are bounded, and a run can be stopped.

``python -m services.green_agent serve`` on loopback, with bounds set small, assesses a hostile
participant (:mod:`harness.fakes.hostile_agent`) that streams an endless answer, trickles one
byte at a time, never answers, or answers with a huge text. Each ends as failed queries within
its bound, with the green agent's memory flat and its connections closed; ``tasks/cancel`` and a
caller hanging up on a streamed assessment stop the run and free its place.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.fakes.hostile_agent import Hostile
from harness.fakes.mcp_toy import serve_app
from harness.processes import ServerProcess
from services.green_agent.evaluation.bounds import MAX_ECHO_CHARS
from tests.support.polling import wait_for
from tests.support.purple import v03_body

CAP = 2 << 20  # GREEN_MAX_ANSWER_BYTES of these tests
CALLER = "assessor:assessor-token-0123456789"
SCRAPE = "scrape-token-0123456789"
HANG_S = 60.0  # bound of every wait: only a hang takes this long


@pytest.fixture
def hostile() -> Iterator[tuple[Hostile, str]]:
    participant = Hostile()
    with serve_app(participant.app) as url:
        yield participant, url + "/"


def _green(tmp_path: Path, **env: str) -> ServerProcess:
    settings = {
        "GREEN_MAX_ANSWER_BYTES": str(CAP),
        "GREEN_TIMEOUT_S": str(HANG_S),  # per read: never what ends a query here
        "GREEN_QUERY_DEADLINE_S": str(HANG_S),
        **env,
    }
    return ServerProcess.module(
        "services.green_agent",
        ["serve"],
        env=settings,
        ready_path="/healthz",
        log_path=tmp_path / "green.log",
    )


def _request(participant: str, protocol: str, num_queries: int = 2) -> str:
    config = {"num_queries": num_queries, "top_k": 5, "concurrency": 2, "protocol": protocol}
    return json.dumps({"participants": {"retrieval_agent": participant}, "config": config})


def _assess(green: ServerProcess, participant: str, protocol: str, **kw: Any) -> dict[str, Any]:
    """One blocking 0.3 ``message/send`` of an assessment; its final task."""
    body = v03_body(_request(participant, protocol, **kw))
    answer = httpx.post(green.base_url + "/", json=body, timeout=HANG_S)
    assert answer.status_code == 200, answer.text
    task: dict[str, Any] = answer.json()["result"]
    return task


def _data(task: dict[str, Any]) -> dict[str, Any]:
    assert task["status"]["state"] == "completed", task["status"]
    (data,) = [p["data"] for p in task["artifacts"][0]["parts"] if p["kind"] == "data"]
    assert isinstance(data, dict)
    return data


def _status_text(task: dict[str, Any]) -> str:
    return " ".join(p.get("text", "") for p in task["status"]["message"]["parts"])


def _running(green: ServerProcess) -> float:
    scrape = {"authorization": f"Bearer {SCRAPE}"}  # ignored where authentication is off
    for line in httpx.get(green.base_url + "/metrics", headers=scrape).text.splitlines():
        if line.startswith("green_assessments_running "):
            return float(line.split()[1])
    raise AssertionError("green_assessments_running not exported")


def _stays(condition: Any, seconds: float) -> bool:
    """Whether ``condition`` holds all along ``seconds`` (what must not happen, did not)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not condition():
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize("protocol", ["1.0", "0.3"])
def test_an_endless_answer_fails_as_too_large_with_memory_flat(
    hostile: tuple[Hostile, str], tmp_path: Path, protocol: str
) -> None:
    participant, url = hostile
    with _green(tmp_path) as green:
        participant.mode = "shout"  # a first run reads the test set and loads the clients
        _data(_assess(green, url, protocol))
        before_kb = green.rss_kb()
        participant.mode = "endless"
        data = _data(_assess(green, url, protocol, num_queries=4))
        grown_kb = green.rss_kb() - before_kb
    assert data["failures_by_reason"] == {"too_large": 4}, data["failures"]
    assert all("GREEN_MAX_ANSWER_BYTES" in f["message"] for f in data["failures"])
    # Two answers at a time, each stopped at the bound: never the stream's whole.
    assert grown_kb < 3 * CAP // 1024, f"grew by {grown_kb} KiB"
    assert participant.open == 0  # every endless answer was hung up on


@pytest.mark.parametrize("protocol", ["1.0", "0.3"])
def test_a_trickled_answer_fails_as_timeout_at_the_query_deadline(
    hostile: tuple[Hostile, str], tmp_path: Path, protocol: str
) -> None:
    participant, url = hostile
    participant.mode = "trickle"  # a byte every 0.2 s: no read ever waits GREEN_TIMEOUT_S
    with _green(tmp_path, GREEN_QUERY_DEADLINE_S="2") as green:
        started = time.monotonic()
        data = _data(_assess(green, url, protocol))
        took_s = time.monotonic() - started
    assert data["failures_by_reason"] == {"timeout": 2}, data["failures"]
    assert all("GREEN_QUERY_DEADLINE_S" in f["message"] for f in data["failures"])
    assert took_s < HANG_S  # ended by the overall deadline, before a single read timeout could
    assert participant.open == 0


@pytest.mark.parametrize("protocol", ["1.0", "0.3"])
def test_a_participants_text_in_the_report_is_cut(
    hostile: tuple[Hostile, str], tmp_path: Path, protocol: str
) -> None:
    participant, url = hostile
    participant.mode = "shout"
    with _green(tmp_path) as green:
        data = _data(_assess(green, url, protocol))
    assert data["failures_by_reason"] == {"failed_task": 2}
    for failure in data["failures"]:
        assert failure["message"].startswith("task failed: xxxxxxxxxx")
        assert len(failure["message"]) < MAX_ECHO_CHARS + 100
        assert "more characters" in failure["message"]


def test_an_assessment_longer_than_its_deadline_fails_and_frees_its_place(
    hostile: tuple[Hostile, str], tmp_path: Path
) -> None:
    participant, url = hostile
    participant.mode = "hold"
    with _green(tmp_path, GREEN_ASSESSMENT_DEADLINE_S="2") as green:
        task = _assess(green, url, "0.3")
        assert task["status"]["state"] == "failed"
        assert "GREEN_ASSESSMENT_DEADLINE_S" in _status_text(task)
        assert _running(green) == 0
    wait_for(lambda: participant.open == 0, HANG_S, "the held queries hung up on")


def _rpc(green: ServerProcess, method: str, params: dict[str, Any]) -> Any:
    headers = {"authorization": f"Bearer {CALLER.split(':')[1]}"}
    if method[0].isupper():  # a 1.0 method
        headers["a2a-version"] = "1.0"
    body = {"jsonrpc": "2.0", "id": 3, "method": method, "params": params}
    return httpx.post(green.base_url + "/", json=body, headers=headers, timeout=HANG_S).json()


@pytest.mark.parametrize(
    ("method", "canceled"), [("tasks/cancel", "canceled"), ("CancelTask", "TASK_STATE_CANCELED")]
)
def test_cancel_stops_the_assessment_and_frees_its_place(
    hostile: tuple[Hostile, str], tmp_path: Path, method: str, canceled: str
) -> None:
    participant, url = hostile
    participant.mode = "hold"
    env = {"GREEN_AUTH_TOKENS": CALLER, "GREEN_METRICS_TOKEN": SCRAPE}
    with _green(tmp_path, **env) as green:
        body = v03_body(_request(url, "0.3", num_queries=20))
        body["params"]["configuration"] = {"blocking": False}
        sent = _rpc(green, "message/send", body["params"])
        task_id = sent["result"]["id"]
        wait_for(lambda: participant.posts == 2, HANG_S, "the first two queries")
        assert _running(green) == 1
        answer = _rpc(green, method, {"id": task_id})
        assert answer.get("result", {}).get("status", {}).get("state") == canceled, answer
        wait_for(lambda: _running(green) == 0, HANG_S, "the place given back")
        wait_for(lambda: participant.open == 0, HANG_S, "the held queries hung up on")
        assert _stays(lambda: participant.posts == 2, 1.0), "a query was sent after the cancel"


def test_a_caller_hanging_up_on_a_streamed_assessment_stops_it(
    hostile: tuple[Hostile, str], tmp_path: Path
) -> None:
    participant, url = hostile
    participant.mode = "hold"
    with _green(tmp_path) as green:
        body = v03_body(_request(url, "0.3", num_queries=20))
        body["method"] = "message/stream"
        with httpx.stream("POST", green.base_url + "/", json=body, timeout=HANG_S) as answer:
            assert answer.status_code == 200
            lines = answer.iter_lines()  # kept: a loop's own iterator would close the stream
            for line in lines:
                if '"working"' in line:
                    break
            wait_for(lambda: participant.posts == 2, HANG_S, "the first two queries")
            assert _running(green) == 1
        # The caller has hung up: the run stops, its place is free, the participant is let go.
        wait_for(lambda: _running(green) == 0, HANG_S, "the place given back")
        wait_for(lambda: participant.open == 0, HANG_S, "the held queries hung up on")
        assert _stays(lambda: participant.posts == 2, 1.0), "a query was sent after the hang-up"
