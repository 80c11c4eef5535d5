"""Token files read again when they change, and one token value per purpose (issue 52, 7).

A revoked token stops working, and a new one starts, with no restart: the purple agent's callers'
file rewritten as a Secret's mount replaces it (a new file renamed over the old), and the file of
the token the agent sends to the MCP server. A rewrite that cannot be used keeps the tokens read
before and logs an error. Each server refuses to start with one value in two of its purposes,
saying which two, never the token.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.processes import BASE_ENV, REPO, ServerProcess, free_port
from tests.support.polling import wait_for
from tests.support.purple import v03_body
from tests.support.small_index import SmallIndex

OLD, NEW = "revoked-token-0123456789", "rotated-token-0123456789"
AGENT = "purple-agent-token-0123456789"
KEPT = "the tokens read before stay in use"
#: Far above the once-a-second look at the file: a safety net, not a figure.
SEEN_WITHIN_S = 20.0


def _replace(path: Path, text: str) -> None:
    """Write ``text`` as a mounted Secret changes: a new file renamed over the old one."""
    fresh = path.with_name(path.name + ".new")
    fresh.write_text(text)
    os.replace(fresh, path)


def _status(base: str, token: str) -> int:
    get = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "none"}}
    headers = {"authorization": f"Bearer {token}"}
    return httpx.post(base + "/", json=get, headers=headers, timeout=10).status_code


@pytest.fixture
def tokens_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    path.write_text(f"# mounted from a Secret\nalice:{OLD}\n")
    return path


@pytest.fixture
def purple(tokens_file: Path, tmp_path: Path) -> Iterator[ServerProcess]:
    env = {
        "PURPLE_MCP_URL": f"http://127.0.0.1:{free_port()}/mcp",  # never called here
        "PURPLE_AUTH_TOKENS_FILE": str(tokens_file),
    }
    agent = ServerProcess.module(
        "services.purple_agent", env=env, ready_path="/healthz", log_path=tmp_path / "purple.log"
    )
    with agent:
        yield agent


def test_a_revoked_token_stops_working_and_a_new_one_starts(
    purple: ServerProcess, tokens_file: Path
) -> None:
    base = purple.base_url
    assert (_status(base, OLD), _status(base, NEW)) == (200, 401)
    _replace(tokens_file, f"alice:{NEW}\n")
    wait_for(lambda: _status(base, OLD) == 401, SEEN_WITHIN_S, "refusal of the revoked token")
    assert _status(base, NEW) == 200
    # Written in place, as an editor or a ConfigMap-less host would.
    tokens_file.write_text(f"alice:{OLD}\n")
    wait_for(lambda: _status(base, OLD) == 200, SEEN_WITHIN_S, "the token written in place")
    assert _status(base, NEW) == 401


@pytest.mark.parametrize(
    "rewrite",
    ["# emptied\n", "alice:short\n", None],
    ids=["no token left", "a short token", "the file removed"],
)
def test_a_bad_rewrite_keeps_the_tokens_read_before(
    purple: ServerProcess, tokens_file: Path, rewrite: str | None
) -> None:
    if rewrite is None:
        tokens_file.unlink()
    else:
        _replace(tokens_file, rewrite)
    # The file is looked at as requests come: each poll is one.
    wait_for(
        lambda: _status(purple.base_url, OLD) == 200 and KEPT in purple.log(),
        SEEN_WITHIN_S,
        "error logged for the bad rewrite",
    )
    assert (_status(purple.base_url, OLD), _status(purple.base_url, "x" * 24)) == (200, 401)
    assert OLD not in purple.log()
    _replace(tokens_file, f"alice:{NEW}\n")  # a good one is taken again
    wait_for(lambda: _status(purple.base_url, NEW) == 200, SEEN_WITHIN_S, "the repaired file")


@pytest.fixture(scope="module")
def secured_mcp(
    small_index: SmallIndex, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("token-files")
    tokens = folder / "tokens"
    tokens.write_text(f"purple:{AGENT}\n")
    env = {**small_index.env(private_copy=True), "MCP_AUTH_TOKENS_FILE": str(tokens)}
    with ServerProcess.module("services.mcp_server", env=env, log_path=folder / "mcp.log") as s:
        yield s


def test_the_token_the_agent_sends_is_read_again_when_its_file_changes(
    secured_mcp: ServerProcess, tmp_path: Path
) -> None:
    sent = tmp_path / "mcp-token"
    sent.write_text("wrong-token-0123456789\n")
    env = {
        "PURPLE_MCP_URL": secured_mcp.base_url + "/mcp",
        "PURPLE_MCP_TOKEN_FILE": str(sent),
        "PURPLE_MCP_RETRIES": "0",
    }
    agent = ServerProcess.module(
        "services.purple_agent", env=env, ready_path="/healthz", log_path=tmp_path / "purple.log"
    )
    body = v03_body('{"query": "green tea", "top_k": 3}')

    def state() -> str:
        task = httpx.post(agent.base_url + "/", json=body, timeout=30).json()["result"]
        return str(task["status"]["state"])

    with agent:
        assert state() == "failed"  # HTTP 401 from the MCP server
        _replace(sent, AGENT + "\n")
        wait_for(lambda: state() == "completed", SEEN_WITHIN_S, "a search with the new token")
        _replace(sent, "")  # emptied: the token read before is still sent
        wait_for(
            lambda: state() == "completed" and KEPT in agent.log(),
            SEEN_WITHIN_S,
            "error logged for the empty file",
        )
        assert state() == "completed"


def _start(module: str, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", module, *args, "--host", "127.0.0.1", "--port", str(free_port())]
    return subprocess.run(
        argv,
        env={**os.environ, **BASE_ENV, **env},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


SAME = "same-token-0123456789abcdef"


@pytest.mark.parametrize(
    ("module", "args", "env", "purposes"),
    [
        (
            "services.purple_agent",
            [],
            {"PURPLE_AUTH_TOKENS": f"alice:{SAME}", "PURPLE_MCP_TOKEN": SAME},
            ("PURPLE_AUTH_TOKENS[_FILE]", "PURPLE_MCP_TOKEN[_FILE]"),
        ),
        (
            "services.mcp_server",
            [],
            {"MCP_AUTH_TOKENS": f"purple:{SAME}", "MCP_METRICS_TOKEN": SAME},
            ("MCP_AUTH_TOKENS[_FILE]", "MCP_METRICS_TOKEN[_FILE]"),
        ),
        (
            "services.green_agent",
            ["serve"],
            {"GREEN_AUTH_TOKENS": f"caller:{SAME}", "GREEN_AGENT_TOKEN": SAME},
            ("GREEN_AUTH_TOKENS[_FILE]", "GREEN_AGENT_TOKEN[_FILE]"),
        ),
        (
            "services.green_agent",
            ["load-collect", "--workers", "1"],
            {"GREEN_LOAD_COLLECTOR_TOKEN": SAME, "GREEN_METRICS_TOKEN": SAME},
            ("GREEN_METRICS_TOKEN[_FILE]", "GREEN_LOAD_COLLECTOR_TOKEN[_FILE]"),
        ),
    ],
    ids=["purple agent", "MCP server", "green agent", "load collector"],
)
def test_one_token_in_two_purposes_stops_the_start(
    module: str, args: list[str], env: dict[str, str], purposes: tuple[str, str]
) -> None:
    started = _start(module, args, env)
    output = started.stdout + started.stderr
    assert started.returncode != 0, output
    assert f"{purposes[0]} and {purposes[1]} hold the same token" in output, output
    assert SAME not in output
