"""The green agent's command line, run as a real subprocess the way a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys

from services.common.processes import REPO

CLI_TIMEOUT_S = 120


def run_green(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m services.green_agent *args``, its output captured as text."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "services.green_agent", *args]
    return subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT_S
    )
