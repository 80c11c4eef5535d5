"""Replicas of our servers behind HAProxy on loopback: a stand-in for Kubernetes Services.

HAProxy (Debian's package, installed by ``scripts/install-haproxy.sh``) fronts the MCP
servers and the purple agents, health-checking ``/readyz`` every 500 ms as a Service's endpoints
follow readiness, and sends a request whose connection is refused to another replica. The purple
agents reach the MCP servers through their front, as in the cluster. Replicas drain on SIGTERM
(``SERVER_DRAIN_S``), as the chart's preStop pause makes pods do.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.common.processes import BASE_ENV, REPO, ServerProcess, free_port, wait_until_ready

DRAIN_S = 2.0
HAPROXY_CONFIG = """global
    maxconn 8192
defaults
    mode http
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
        with open(self.workdir / "haproxy.log", "ab") as log:
            self._haproxy = subprocess.Popen(
                [haproxy, "-db", "-f", str(config)], stdout=log, stderr=log
            )
        wait_until_ready(f"http://127.0.0.1:{self._stats_port}/healthz", 10, self._haproxy)
        for replica in self.replicas:
            replica.process.start()
        wait_until_ready(f"{self.mcp_url}/readyz", 30)
        wait_until_ready(f"{self.purple_url}/readyz", 30)

    def restart(self, replica: Replica) -> None:
        """SIGTERM (the replica drains, then exits), then start it again and wait until ready."""
        replica.process.stop(timeout_s=DRAIN_S + 60)
        replica.process.start()

    def kill(self, replica: Replica) -> None:
        """SIGKILL: requests in flight on it are lost; then start it again."""
        replica.process.signal(signal.SIGKILL)
        replica.process.wait(timeout_s=10)
        replica.process.start()

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
