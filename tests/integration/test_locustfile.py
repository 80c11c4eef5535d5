"""The supported locustfile, run by the real ``locust`` command against agents on loopback.

Its users must judge every answer as our load generator's client does: the same canned answers
(conforming, and broken in each way ``tests/integration/test_load_client.py`` knows), served one
after another, give Locust's ``query`` requests the outcome ``ask_and_check`` gives our client,
down to the failure's text where a whole answer came. Against the real purple agent, budgets set
Locust's exit status: one no run meets exits 3 naming it, ones met exit 0, along ``--stages``
after a ``--warmup``; a rate stage is refused before the run.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

import pytest

from harness.processes import REPO
from services.green_agent.evaluation.client import A2AVersion
from services.green_agent.evaluation.evaluator import ask_and_check
from services.green_agent.load.client import connect_lean
from services.green_agent.load.thresholds import EXIT_BREACHED
from tests.support.canned_agent import TOP_K, VALID, answers, canned_agent, write_data_set
from tests.support.small_index import SmallIndex

LOCUSTFILE = REPO / "services" / "green_agent" / "locust" / "locustfile.py"
PROBE = REPO / "tests" / "support" / "locust_probe.py"
#: Both clients' timeout here: the "too slow" answer keeps each waiting this long.
TIMEOUT_S = 1.0
#: Cases without a whole answer: each transport words its own failure, with the same reason.
NO_WHOLE_ANSWER = {"cut short", "too slow"}
#: A bound on a hung run, never a figure asserted.
RUN_BOUND_S = 120.0


def _locust(*args: str | int | Path, files: str = str(LOCUSTFILE)) -> list[str]:
    return [sys.executable, "-m", "locust", "-f", files, "--headless", *map(str, args)]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": "1", **extra}


async def _our_verdicts(base: str, version: A2AVersion, agent: Any) -> list[str | None]:
    """Each case's outcome through our client: None, or ``REASON: MESSAGE``."""
    lean = await connect_lean(base, version, TIMEOUT_S, 4)
    verdicts: list[str | None] = []
    try:
        for answer in answers(version).values():
            agent.answer = answer
            outcome = await ask_and_check(
                lean, "q1", "vitamin d", TOP_K, VALID, legacy=version == "0.3"
            )
            verdicts.append(None if outcome.ok else f"{outcome.reason}: {outcome.error}")
    finally:
        await lean.aclose()
    return verdicts


async def _locust_verdicts(agent: Any, version: A2AVersion, tmp_path: Path) -> list[str | None]:
    """Each case's outcome through one Locust user, the cases served in turn."""
    cases = list(answers(version).values())
    agent.answer, agent.queue = None, deque(cases)
    out, log = tmp_path / "probe.jsonl", tmp_path / f"locust-{version}.log"
    # The probe beside the locustfile writes each query's outcome.
    argv = _locust("-u", 1, "-r", 1, "--host", agent.base, files=f"{LOCUSTFILE},{PROBE}")
    argv += [
        "--protocol",
        version,
        "--top-k",
        str(TOP_K),
        "--data-dir",
        str(write_data_set(tmp_path / "data")),
    ]
    env = _env(GREEN_TIMEOUT_S=str(TIMEOUT_S), PROBE_OUT=str(out))
    with log.open("wb") as sink:
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT
        )
        try:
            deadline = time.monotonic() + RUN_BOUND_S
            while not out.exists() or len(out.read_text().splitlines()) < len(cases):
                assert process.returncode is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, f"no outcome of every case: {log}"
                await asyncio.sleep(0.05)
        finally:
            if process.returncode is None:
                process.terminate()
            await process.wait()
    lines = out.read_text().splitlines()[: len(cases)]
    return [json.loads(line)["error"] for line in lines]


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_the_locustfile_judges_every_answer_as_our_client(
    version: A2AVersion, tmp_path: Path
) -> None:
    async with canned_agent() as agent:
        agent.slow_s = 2 * TIMEOUT_S
        ours = await _our_verdicts(agent.base, version, agent)
        theirs = await _locust_verdicts(agent, version, tmp_path)
    for case, mine, locust in zip(answers(version), ours, theirs, strict=True):
        if case in NO_WHOLE_ANSWER:
            assert mine is not None and locust is not None, case
            assert locust.split(":")[0] == mine.split(":")[0], f"{case}: {locust} / {mine}"
        else:
            assert locust == mine, f"{case}: Locust {locust!r}, ours {mine!r}"
    # The cases are what they say: one conforming answer, every other one refused.
    assert [case for case, mine in zip(answers(version), ours, strict=True) if mine is None] == [
        "conforming"
    ]


def _run(argv: list[str], tmp_path: Path) -> tuple[int, str]:
    done = subprocess.run(
        argv, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=RUN_BOUND_S
    )
    (tmp_path / "locust.log").write_text(done.stdout + done.stderr)
    return done.returncode, done.stdout + done.stderr


def _data(small_index: SmallIndex) -> list[str]:
    return ["--data-dir", str(small_index.settings.data_dir), "--queries", "test"]


def test_a_budget_no_run_meets_exits_3_naming_it(
    purple: Any, small_index: SmallIndex, tmp_path: Path
) -> None:
    argv = _locust("--host", purple.url, "-u", 2, "-r", 2, "-t", "2s", *_data(small_index))
    status, output = _run([*argv, "--threshold", "p50<1us", "--only-summary"], tmp_path)
    assert status == EXIT_BREACHED, output[-3000:]
    assert "budget breached: p50<1us: " in output


def test_budgets_met_along_stages_after_a_warmup_exit_0(
    purple: Any, small_index: SmallIndex, tmp_path: Path
) -> None:
    argv = _locust("--host", purple.url, "--stages", "1s:1,1s:2", "--warmup", "1s")
    argv += [*_data(small_index), "--threshold", "p99<60s,errors<100%", "--only-summary"]
    status, output = _run(argv, tmp_path)
    assert status == 0, output[-3000:]
    assert "budget breached" not in output
    assert "Shape test updating to 2 users" in output  # the second stage's


def test_a_rate_stage_is_refused_before_the_run(tmp_path: Path) -> None:
    argv = _locust("--host", "http://127.0.0.1:1", "--stages", "10s:20/s")
    status, output = _run(argv, tmp_path)
    assert status == 2
    assert "is a rate (open loop)" in output
