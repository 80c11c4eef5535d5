"""Replicas of our servers behind HAProxy on loopback: a stand-in for Kubernetes Services.

HAProxy (Debian's package, installed by ``make tools-reliability``) fronts the MCP servers and
the purple agents, health-checking ``/readyz`` (every ``inter`` of ``FRONT``) as a Service's
endpoints follow readiness, and sends a request whose connection is refused to another replica.
The purple agents reach the MCP servers through their front, as in the cluster. Replicas drain
on SIGTERM (``SERVER_DRAIN_S``), as the chart's preStop pause makes pods do.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.processes import BASE_ENV, REPO, ServerProcess, free_port, wait_until_ready

DRAIN_S = 2.0
HAPROXY_CONFIG = """global
    maxconn 8192
    log stdout format raw local0 info
defaults
    mode http
    log global
    # One line per request: backend, status, and the time from its first byte in to the last
    # byte of the answer out (%Ta): latency as the Service sees it, not as a busy client does.
    log-format "request %b %ST %Ta"
    timeout connect 2s
    timeout client 90s
    timeout server 90s
    timeout http-request 10s
    retries 2
    option redispatch 1
    retry-on conn-failure
frontend stats
    bind 127.0.0.1:{stats_port}
    http-request return status 200 content-type text/plain string ok if {{ path /healthz }}
    stats enable
    stats uri /stats
{fronts}"""
FRONT = """frontend {name}
    bind 127.0.0.1:{port}
    default_backend {name}
backend {name}
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 500ms fall 2 rise 2
{servers}"""


@dataclass
class Replica:
    """One server process of a tier."""

    name: str
    process: ServerProcess


class LocalCluster:
    """``mcp`` MCP servers and ``purple`` purple agents behind one HAProxy."""

    def __init__(
        self,
        workdir: Path,
        env: dict[str, str],
        tier_env: dict[str, dict[str, str]] | None = None,
        mcp: int = 2,
        purple: int = 2,
    ) -> None:
        """Describe the cluster (nothing starts yet).

        ``env`` configures every replica (index location...), ``tier_env`` the replicas of one
        tier (``"mcp"`` or ``"purple"``).
        """
        tier_env = tier_env or {}
        self.workdir = workdir
        # Where the MCP servers' private shard copies go (services.retrieval.store.copies).
        self._copies = Path(env.get("TMPDIR", tempfile.gettempdir())) / "nfcorpus-shard-copies"
        self._haproxy: subprocess.Popen[bytes] | None = None
        self._stats_port = free_port()
        self.mcp_port, self.purple_port = free_port(), free_port()
        self.mcp_url = f"http://127.0.0.1:{self.mcp_port}"
        self.purple_url = f"http://127.0.0.1:{self.purple_port}"
        common = {**env, "SERVER_DRAIN_S": str(DRAIN_S)}
        mcp_env = {**common, "RETRIEVAL_EDGE_PRIVATE_COPY": "true", **tier_env.get("mcp", {})}
        purple_env = {**common, **tier_env.get("purple", {})}
        agent_args = ["--mcp-url", f"{self.mcp_url}/mcp", "--card-url", f"{self.purple_url}/"]
        self.mcp = [self._replica("mcp", n, "services.mcp_server", [], mcp_env) for n in range(mcp)]
        self.purple = [
            self._replica("purple", n, "services.purple_agent", agent_args, purple_env)
            for n in range(purple)
        ]

    def _replica(
        self, tier: str, n: int, module: str, args: list[str], env: dict[str, str]
    ) -> Replica:
        log = self.workdir / f"{tier}-{n}.log"
        return Replica(f"{tier}-{n}", ServerProcess.module(module, args, env=env, log_path=log))

    @property
    def replicas(self) -> list[Replica]:
        """Every replica, MCP servers first."""
        return [*self.mcp, *self.purple]

    def _haproxy_config(self) -> str:
        fronts = []
        for name, port, tier in (
            ("mcp", self.mcp_port, self.mcp),
            ("purple", self.purple_port, self.purple),
        ):
            servers = "\n".join(
                f"    server {r.name} 127.0.0.1:{r.process.port} check" for r in tier
            )
            fronts.append(FRONT.format(name=name, port=port, servers=servers))
        return HAPROXY_CONFIG.format(stats_port=self._stats_port, fronts="\n".join(fronts)) + "\n"

    def start(self) -> None:
        """Start HAProxy, then every replica, and wait until both fronts answer."""
        haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
        config = self.workdir / "haproxy.cfg"
        config.write_text(self._haproxy_config())
        with (
            open(self.access_log, "ab") as access,
            open(self.workdir / "haproxy.log", "ab") as log,
        ):
            self._haproxy = subprocess.Popen(
                [haproxy, "-db", "-f", str(config)], stdout=access, stderr=log
            )
        wait_until_ready(f"http://127.0.0.1:{self._stats_port}/healthz", 10, self._haproxy)
        for replica in self.replicas:
            replica.process.start()
        wait_until_ready(f"{self.mcp_url}/readyz", 30)
        wait_until_ready(f"{self.purple_url}/readyz", 30)

    def footprint(self) -> dict[str, Any]:
        """RSS of every replica, and what their shard copies take in the temporary folder."""
        files = [p for p in self._copies.rglob("*") if p.is_file()]
        return {
            "rss_mb": {r.name: round(r.process.rss_kb() / 1024, 1) for r in self.replicas},
            "tmp_copies_mb": round(sum(p.stat().st_blocks * 512 for p in files) / 2**20, 1),
            "tmp_copy_folders": self.copy_folders(),
        }

    def copy_folders(self) -> int:
        """Folders of shard copies in the replicas' temporary folder (one per live MCP server)."""
        return len(list(self._copies.iterdir())) if self._copies.exists() else 0

    @property
    def access_log(self) -> Path:
        """HAProxy's request log: ``request <backend> <status> <ms>`` lines."""
        return self.workdir / "haproxy-access.log"

    def answers(self, since: int, backend: str = "purple") -> list[tuple[int, int]]:
        """(status, milliseconds) of what ``backend`` answered after byte ``since`` of the log.

        Take ``access_log.stat().st_size`` before a phase to read that phase's requests.
        """
        with open(self.access_log, "rb") as log:
            log.seek(since)
            lines = log.read().decode("utf-8", "replace").splitlines()
        found = []
        for line in lines:
            parts = line.split()
            if len(parts) == 4 and parts[0] == "request" and parts[1] == backend:
                found.append((int(parts[2]), int(parts[3])))
        return found

    def restart(self, replica: Replica) -> None:
        """SIGTERM (it drains, then exits), start it again, wait until HAProxy takes it back.

        As a Deployment's rolling update waits for the new pod to be Ready before it stops the
        next one: restarting the next replica before HAProxy's checks have taken this one back
        would leave the tier with no replica at all for a moment.
        """
        replica.process.stop(timeout_s=DRAIN_S + 60)
        replica.process.start()
        self.wait_until_balanced(replica)

    def stats(self, replica: Replica) -> dict[str, str]:
        """HAProxy's statistics of ``replica``, by CSV column name.

        ``status`` (UP, DOWN...), ``scur`` (requests on it now), ``hrsp_2xx`` (its answers since
        HAProxy started, across restarts of the replica)...
        """
        with urllib.request.urlopen(f"http://127.0.0.1:{self._stats_port}/stats;csv") as stats:
            header, *rows = csv.reader(stats.read().decode().splitlines())
        backend = replica.name.split("-")[0]
        row = next(row for row in rows if row[:2] == [backend, replica.name])
        return dict(zip([name.removeprefix("# ") for name in header], row, strict=False))

    def wait_until_balanced(self, replica: Replica, timeout_s: float = 30.0) -> None:
        """Wait until HAProxy's health checks report ``replica`` UP."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.stats(replica)["status"] == "UP":
                return
            time.sleep(0.1)
        raise TimeoutError(f"HAProxy did not take {replica.name} back within {timeout_s:g} s")

    def kill(self, replica: Replica) -> None:
        """SIGKILL: requests in flight on it are lost; then start it again (as :meth:`restart`)."""
        replica.process.signal(signal.SIGKILL)
        replica.process.wait(timeout_s=10)
        replica.process.start()
        self.wait_until_balanced(replica)

    def hang(self, replica: Replica, seconds: float) -> None:
        """SIGSTOP for ``seconds``: it holds its connections and answers nothing; then SIGCONT."""
        replica.process.signal(signal.SIGSTOP)
        time.sleep(seconds)
        replica.process.signal(signal.SIGCONT)

    def load(self, seconds: float, pace: list[str], name: str) -> dict[str, Any]:
        """Run the green agent's load mode against the purple front; its JSON report.

        ``pace`` is ``["--concurrency", N]`` or ``["--rate", R, ...]``.
        """
        out = self.workdir / f"{name}.json"
        cmd = [sys.executable, "-m", "services.green_agent", "load", "--agent", self.purple_url]
        cmd += [*pace, "--duration", str(seconds), "--top-k", "10", "--out", str(out)]
        env = {**os.environ, **BASE_ENV, "LOG_LEVEL": "WARNING"}
        subprocess.run(cmd, env=env, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        report: dict[str, Any] = json.loads(out.read_text())
        return report

    def stop(self) -> None:
        """Stop every replica, then HAProxy."""
        for replica in self.replicas:
            replica.process.stop(timeout_s=DRAIN_S + 30)
        if self._haproxy is not None:
            self._haproxy.terminate()
            self._haproxy.wait(timeout=10)
            self._haproxy = None
