"""The MCP conformance suite against our MCP server, run as SDKs run it in their CI.

``@modelcontextprotocol/conformance`` (npm, pinned by scripts/tools/mcp-conformance, installed
by ``make tools-mcp-conformance``) runs every scenario a specification revision requires, on
that revision's wire: 2025-11-25 with the initialize handshake, 2026-07-28 stateless. Each run
is judged against a reviewed baseline of what the server deliberately lacks
(``mcp_expected_failures_<revision>.yml``, the suite's ``--expected-failures``): a scenario that
starts failing fails the run, and so does one in the baseline that starts passing.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from harness.processes import REPO, McpServer

SUITE = REPO / ".tools/mcp-conformance/node_modules/@modelcontextprotocol/conformance"
#: Lets the suite load on Node 20, which lacks the fs.globSync its build imports.
NODE20 = REPO / "scripts/tools/mcp-conformance/node20/register.mjs"
HERE = Path(__file__).parent
REVISIONS = ("2025-11-25", "2026-07-28")


def baseline(revision: str) -> Path:
    return HERE / f"mcp_expected_failures_{revision}.yml"


def conformance(results: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``conformance server ARGS`` with its results under ``results``."""
    if not (SUITE / "dist/index.js").is_file():
        pytest.fail("the MCP conformance suite is not installed: make tools-mcp-conformance")
    command = ["node", "--import", str(NODE20), str(SUITE / "dist/index.js"), "server", *args]
    command += ["--output-dir", str(results)]
    return subprocess.run(
        command, cwd=results.parent, capture_output=True, text=True, timeout=600, check=False
    )


def _said(run: subprocess.CompletedProcess[str]) -> str:
    return f"exit {run.returncode}\n{run.stdout[-6000:]}\n{run.stderr[-3000:]}"


@pytest.mark.parametrize("revision", REVISIONS)
def test_what_each_revision_requires_passes_but_for_the_reviewed_baseline(
    mcp_server: McpServer, revision: str, tmp_path: Path
) -> None:
    run = conformance(
        tmp_path / "results",
        *("--url", mcp_server.mcp_url, "--requirements", revision),
        *("--expected-failures", str(baseline(revision))),
    )
    assert run.returncode == 0, _said(run)
    assert "Baseline check passed" in run.stdout, _said(run)


@pytest.mark.parametrize(
    ("scenario", "entries", "said"),
    [
        ("tools-list", "[tools-list]", r"Stale baseline entries"),
        ("prompts-get-simple", "[]", r"Unexpected failures.*\n.*prompts-get-simple"),
    ],
    ids=["a scenario that passes while in the baseline", "a failure outside the baseline"],
)
def test_the_baseline_is_held_both_ways(
    mcp_server: McpServer, tmp_path: Path, scenario: str, entries: str, said: str
) -> None:
    made_up = tmp_path / "baseline.yml"
    made_up.write_text(f"server: {entries}\n")
    run = conformance(
        tmp_path / "results",
        *("--url", mcp_server.mcp_url, "--scenario", scenario),
        *("--expected-failures", str(made_up)),
    )
    assert run.returncode == 1, _said(run)
    assert re.search(said, run.stdout), _said(run)


@pytest.mark.parametrize("revision", REVISIONS)
def test_every_baseline_entry_says_why(revision: str) -> None:
    """Each entry sits under a comment giving the reason, or carries one on its own line."""
    lines = baseline(revision).read_text().splitlines()
    reason = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#"):
            reason = True
        elif stripped.startswith("- "):
            assert reason or "#" in stripped, f"{revision}: no reason given for {stripped}"
        elif not stripped:
            reason = False
