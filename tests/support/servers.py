"""Start the project's real servers as subprocesses on free loopback ports."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_ready(
    url: str, timeout_s: float = 60.0, process: subprocess.Popen[bytes] | None = None
) -> None:
    """Poll ``url`` until it answers 200; fail early if ``process`` died."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before {url} was ready")
        try:
            response = httpx.get(url, timeout=2.0)
            if response.status_code == 200:
                return
            last = f"{response.status_code} {response.text[:200]}"
        except httpx.HTTPError as e:
            last = repr(e)
        time.sleep(0.1)
    raise TimeoutError(f"{url} not ready after {timeout_s}s: {last}")


class ServerProcess:
    """A server module run with ``python -m``; stop() and start() reuse the same port."""

    def __init__(
        self,
        module: str,
        args: Sequence[str],
        env: Mapping[str, str],
        ready_path: str,
        log_path: Path,
        port: int | None = None,
    ) -> None:
        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        # Arguments first: a subcommand (``serve``) must come before the options.
        self._cmd = [sys.executable, "-m", module, *args, "--host", "127.0.0.1"]
        self._cmd += ["--port", str(self.port)]
        self._env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(REPO), **env}
        self._ready_path = ready_path
        self._log_path = log_path
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 60.0) -> None:
        """Launch and wait for readiness."""
        with open(self._log_path, "ab") as log:  # the child keeps its own descriptor
            self._process = subprocess.Popen(
                self._cmd, env=self._env, cwd=REPO, stdout=log, stderr=log
            )
        wait_until_ready(self.base_url + self._ready_path, timeout_s, self._process)

    def stop(self) -> None:
        """Terminate (then kill) the process."""
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process = None

    def log(self) -> str:
        """What the server printed so far (for assertion messages)."""
        return self._log_path.read_text(errors="replace") if self._log_path.exists() else ""
