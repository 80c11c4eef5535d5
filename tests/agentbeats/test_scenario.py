"""scenario.toml, run as agentbeats-run runs it: start each agent's command, send the assessment.

The ports of the file become free ones and the purple agent's MCP server reads the suite's small
index; everything else (the commands, the roles, the config) is the file's own.
"""

from __future__ import annotations

import re
import shlex
import sys
import tomllib
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from a2a.helpers import get_data_parts
from a2a.types import TaskState

from harness.processes import REPO, ServerProcess, free_port
from tests.support.green import assess
from tests.support.small_index import SmallIndex

SCENARIO = tomllib.loads((REPO / "agentbeats/scenario.toml").read_text())


def _with_free_ports(text: str, ports: dict[str, str]) -> str:
    return re.sub(r"\b(9009|9010|8000)\b", lambda m: ports[m.group(1)], text)


def _server(
    agent: dict[str, Any], ports: dict[str, str], env: dict[str, str], log: Path
) -> ServerProcess:
    argv = shlex.split(_with_free_ports(agent["cmd"], ports))
    assert argv[0] == "python"
    port = int(_with_free_ports(agent["endpoint"], ports).rsplit(":", 1)[1])
    ready = "/readyz" if "all_in_one" in agent["cmd"] else "/healthz"
    return ServerProcess([sys.executable, *argv[1:]], port, env=env, ready_path=ready, log_path=log)


@pytest.fixture(scope="module")
def scenario(
    small_index: SmallIndex, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, dict[str, str]]]:
    ports = {p: str(free_port()) for p in ("9009", "9010", "8000")}
    logs = tmp_path_factory.mktemp("scenario")
    env = small_index.env(private_copy=True)
    with ExitStack() as running:
        green = running.enter_context(
            _server(SCENARIO["green_agent"], ports, {}, logs / "green.log")
        )
        participants = {}
        for n, agent in enumerate(SCENARIO["participants"]):
            server = running.enter_context(_server(agent, ports, env, logs / f"p{n}.log"))
            participants[agent["role"]] = server.base_url + "/"
        yield green.base_url, participants


async def test_the_scenario_runs_its_assessment_to_a_result(
    scenario: tuple[str, dict[str, str]],
) -> None:
    green_url, participants = scenario
    config = SCENARIO["config"]
    events = await assess(green_url, {"participants": participants, "config": config})
    final = [e.status_update.status.state for e in events if e.HasField("status_update")][-1]
    assert final == TaskState.TASK_STATE_COMPLETED
    (artifact,) = [e.artifact_update.artifact for e in events if e.HasField("artifact_update")]
    (data,) = get_data_parts(artifact.parts)
    assert data["total_queries"] == data["successful_communications"] == config["num_queries"]
    assert data["failed"] == 0 and data["top_k"] == config["top_k"]
