"""The conformance suite needs no ``../shared``: its test queries come from the green agent's
data setting, and a folder with no corpus is filled from the BEIR archive, md5-checked.

Run as a user runs ``make conformance URL=...`` on a connected machine: pytest in a subprocess
against a running agent, with ``GREEN_DATA_DIR`` an empty folder and the archive served on
loopback in place of the official site.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from harness.processes import REPO, ServerProcess
from services.nfcorpus.dataset import DEFAULT_DATA_DIR, has_dataset
from tests.support.archive import serve_archive, zip_folder


def _conformance(agent_url: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["tests/conformance", "--agent-url", agent_url]
    return subprocess.run(
        command,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_suite_fetches_its_queries_into_an_empty_data_folder(
    purple_agent: ServerProcess, tmp_path: Path
) -> None:
    payload = zip_folder(DEFAULT_DATA_DIR)
    folder = tmp_path / "nfcorpus"
    with serve_archive(payload) as served:
        env = {
            "GREEN_DATA_DIR": str(folder),
            "GREEN_DOWNLOAD_URL": f"{served.base_url}/nfcorpus.zip",
            "GREEN_DOWNLOAD_MD5": hashlib.md5(payload).hexdigest(),
        }
        run = _conformance(purple_agent.base_url + "/", env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert served.requests == ["/nfcorpus.zip"]  # fetched once, for the whole session
    assert has_dataset(folder)


def test_an_archive_with_the_wrong_md5_fails_the_suite(
    purple_agent: ServerProcess, tmp_path: Path
) -> None:
    payload = zip_folder(DEFAULT_DATA_DIR)
    with serve_archive(payload) as served:
        env = {
            "GREEN_DATA_DIR": str(tmp_path / "nfcorpus"),
            "GREEN_DOWNLOAD_URL": f"{served.base_url}/nfcorpus.zip",
            "GREEN_DOWNLOAD_MD5": "0" * 32,
        }
        run = _conformance(purple_agent.base_url + "/", env)
    assert run.returncode != 0
    assert "does not match expected " + "0" * 32 in run.stdout + run.stderr
