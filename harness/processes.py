"""Our servers as child processes on loopback: pick a port, start, wait until ready, stop.

One harness for everything that runs the stack from outside: ``make run`` (``devtools/stack.py``),
the benchmarks, the quality report and the test suite. A server is ready when its readiness path
answers 200; a child that exits while starting fails at once with its exit status.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

import httpx

REPO = Path(__file__).resolve().parents[1]
#: What every child gets: the repository importable, and BLAS off the model's cores.
BASE_ENV = {"PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": "1"}
#: Loading the full index and the model takes seconds; a cold machine may take much longer.
START_TIMEOUT_S = 120.0


def _ephemeral_low() -> int:
    """The first port the kernel hands out for outgoing connections (and for binding 0)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


#: Every port ``free_port`` has handed out in this process: a test that asks for three ports at
#: once must get three different ones, and nothing has bound any of them yet when it asks again.
_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A loopback port nobody listens on right now, outside the kernel's ephemeral range.

    A port the kernel chose for ``bind(0)`` is free again once we close it, and the kernel may
    then hand it out as the source port of any outgoing connection (a test run makes thousands)
    before the server binds it. Ports below the ephemeral range are only ever taken by an
    explicit bind, so a random one of those that binds now stays free for the server. A port
    is never handed out twice in one process, since the first caller may not have bound it yet.
    """
    low = _ephemeral_low()
    if low > 11_000:
        for _ in range(64):
            port = random.randint(10_000, low - 1)
            if port not in _HANDED_OUT and _binds(port):
                _HANDED_OUT.add(port)
                return port
    while True:  # no room below the range: the kernel's choice
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def _binds(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something already accepts connections on ``host:port``."""
    with socket.socket() as s:
        return s.connect_ex((host, port)) == 0


def wait_until_ready(
    url: str, timeout_s: float = 60.0, process: subprocess.Popen[bytes] | None = None
) -> None:
    """Poll ``url`` until it answers 200; fail early if ``process`` exits."""
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
    raise TimeoutError(f"{url} not ready after {timeout_s:g}s: {last}")


class ServerProcess:
    """One server command; :meth:`stop` then :meth:`start` serves again on the same port.

    Output goes to ``log_path`` (appended) or, without one, to this process's terminal.
    """

    def __init__(
        self,
        argv: Sequence[str],
        port: int,
        *,
        env: Mapping[str, str] | None = None,
        ready_path: str = "/readyz",
        log_path: Path | None = None,
        host: str = "127.0.0.1",
        cwd: Path | None = None,
    ) -> None:
        """Describe the server; nothing starts before :meth:`start`.

        ``cwd`` (default: the repository's root) is where it runs; ``python -m`` finds modules there
        first, so another checkout's servers run from their own folder.
        """
        self.port = port
        self._cwd = cwd
        self.base_url = f"http://{host}:{port}"
        self._argv = list(argv)
        self._env = {**os.environ, **BASE_ENV, **(env or {})}
        self._ready_path = ready_path
        self._log_path = log_path
        self._process: subprocess.Popen[bytes] | None = None

    @classmethod
    def module(
        cls,
        module: str,
        args: Sequence[str] = (),
        *,
        port: int | None = None,
        host: str = "127.0.0.1",
        env: Mapping[str, str] | None = None,
        ready_path: str = "/readyz",
        log_path: Path | None = None,
        cwd: Path | None = None,
    ) -> Self:
        """``python -m module *args --host H --port P`` (a subcommand goes first, in ``args``)."""
        port = port or free_port()
        argv = [sys.executable, "-m", module, *args, "--host", host, "--port", str(port)]
        return cls(
            argv, port, env=env, ready_path=ready_path, log_path=log_path, host=host, cwd=cwd
        )

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        return self._process.pid if self._process is not None else None

    def rss_kb(self) -> int:
        """Resident memory of the running child, in KiB (from /proc)."""
        return self.memory_kb()["VmRSS"]

    def memory_kb(self) -> dict[str, int]:
        """The child's resident memory in KiB by kind, from /proc.

        ``VmRSS`` (all of it), ``RssAnon`` (its own), ``RssFile`` (mapped files: the page
        cache, shared with every process mapping them) and ``RssShmem``.
        """
        status = Path(f"/proc/{self.pid}/status").read_text()
        wanted = ("VmRSS", "RssAnon", "RssFile", "RssShmem")
        return {
            name: int(value.split()[0])
            for name, _, value in (line.partition(":") for line in status.splitlines())
            if name in wanted
        }

    def cpu_seconds(self) -> float:
        """CPU time (user + system) the running child has used so far (from /proc)."""
        # Fields after the command name, which is in parentheses and may hold spaces.
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        utime, stime = int(fields[11]), int(fields[12])
        return (utime + stime) / os.sysconf("SC_CLK_TCK")

    @property
    def running(self) -> bool:
        """Whether the child is alive."""
        return self._process is not None and self._process.poll() is None

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Launch and wait for readiness (stopping the child again if it never gets ready)."""
        if self._log_path is None:
            self._process = subprocess.Popen(self._argv, env=self._env, cwd=self._cwd or REPO)
        else:
            with open(self._log_path, "ab") as log:  # the child keeps its own descriptor
                self._process = subprocess.Popen(
                    self._argv, env=self._env, cwd=self._cwd or REPO, stdout=log, stderr=log
                )
        try:
            wait_until_ready(self.base_url + self._ready_path, timeout_s, self._process)
        except BaseException:
            self.stop()
            raise

    def stop(self, timeout_s: float = 10.0) -> None:
        """Terminate, then kill if it does not exit within ``timeout_s``."""
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process = None

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the child (SIGTERM to drain, SIGKILL to crash, SIGSTOP to hang)."""
        if self._process is not None:
            self._process.send_signal(signum)

    def wait(self, timeout_s: float) -> int:
        """Wait for the child to exit by itself; its exit status (negative: killed by signal)."""
        if self._process is None:
            raise RuntimeError("the server is not running")
        returncode = self._process.wait(timeout=timeout_s)
        self._process = None
        return returncode

    def log(self) -> str:
        """What the server wrote to its log so far (for assertion messages)."""
        if self._log_path is None or not self._log_path.exists():
            return ""
        return self._log_path.read_text(errors="replace")

    def __enter__(self) -> Self:
        """Start (see :meth:`start`)."""
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop."""
        self.stop()


class McpServer(ServerProcess):
    """The MCP server subprocess; ``mcp_url`` is its MCP endpoint."""

    @property
    def mcp_url(self) -> str:
        """The server's streamable HTTP MCP endpoint."""
        return self.base_url + "/mcp"


def gunicorn_mcp_server(
    env: Mapping[str, str], log_path: Path, *, workers: int = 1
) -> ServerProcess:
    """The MCP server as the image runs it: gunicorn with ``workers`` uvicorn workers, on loopback.

    Prometheus's multi-process files go to a ``metrics`` folder beside ``log_path``.
    """
    port = free_port()
    cmd = [
        sys.executable, "-m", "gunicorn", "--config", str(REPO / "services/gunicorn.conf.py"),
        "--workers", str(workers), "--bind", f"127.0.0.1:{port}", "services.mcp_server.asgi:app",
    ]  # fmt: skip
    env = {**env, "PROMETHEUS_MULTIPROC_DIR": str(log_path.parent / "metrics")}
    return ServerProcess(cmd, port, env=env, log_path=log_path)
