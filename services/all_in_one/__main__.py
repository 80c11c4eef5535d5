"""``python -m services.all_in_one --host 0.0.0.0 --port 9009 --card-url URL``: the whole agent.

The image's entrypoint, with the AgentBeats flags (the image's CMD and the manifests pass
``--host 0.0.0.0``; without it the agent listens on loopback only, as every server of the
project does by default). It starts the MCP server on the baked index at
``127.0.0.1:--mcp-port`` (inside the container only) and the purple agent on ``--host:--port``
pointed at it; the agent stays unready until the MCP server answers, so the container is ready
when both are. ``--mcp-url URL`` names an external search server instead, and then no local one
starts. Other flags go to the purple agent. The components remain separate commands of the
same image (``python -m services.mcp_server``, ``python -m services.purple_agent``) for
Kubernetes, where each scales on its own.
"""

from __future__ import annotations

import argparse
import os
import sys

from services.all_in_one.supervisor import Child, supervise
from services.telemetry.logging import setup_logging

#: Time each server gets to drain on SIGTERM (docker stop waits 10 s in all before SIGKILL).
GRACE_S = 4.0


def children(args: argparse.Namespace, agent_args: list[str]) -> list[Child]:
    """The servers to run, in start order: the local MCP server (unless one is named), the agent."""
    env = dict(os.environ)
    servers = []
    mcp_url = args.mcp_url
    if mcp_url is None:
        mcp_port = str(args.mcp_port)
        mcp = [
            sys.executable,
            "-m",
            "services.mcp_server",
            "--host",
            "127.0.0.1",
            "--port",
            mcp_port,
        ]
        # The metrics port is the agent's, the container's server: the MCP server inside it
        # keeps /metrics on its loopback port (two processes cannot bind one port).
        mcp_env = {k: v for k, v in env.items() if k != "SERVER_METRICS_PORT"}
        servers.append(Child("mcp-server", mcp, mcp_env))
        mcp_url = f"http://127.0.0.1:{mcp_port}"
    agent = [
        sys.executable,
        "-m",
        "services.purple_agent",
        "--host",
        args.host,
        "--port",
        str(args.port),
    ]
    if args.card_url:
        agent += ["--card-url", args.card_url]
    servers.append(Child("purple-agent", [*agent, "--mcp-url", mcp_url, *agent_args], env))
    return servers


def argument_parser() -> argparse.ArgumentParser:
    """The command line; unknown flags go to the purple agent."""
    parser = argparse.ArgumentParser(prog="python -m services.all_in_one", description=__doc__)
    parser.add_argument(
        "--host", default="127.0.0.1", help="the agent's bind address (0.0.0.0 in a container)"
    )
    parser.add_argument("--port", type=int, default=9009, help="the agent's port")
    parser.add_argument("--card-url", help="URL in the agent card (default: http://HOST:PORT/)")
    parser.add_argument("--mcp-url", help="an external search server: no local one starts")
    parser.add_argument("--mcp-port", type=int, default=8000, help="the local MCP server's port")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse the flags and supervise the servers until a stop signal."""
    parser = argument_parser()
    args, agent_args = parser.parse_known_args(argv)
    if args.mcp_url is None and args.mcp_port == args.port:
        # Both servers bind the loopback port, so the second would die with "address in use".
        parser.error(f"--mcp-port {args.mcp_port} is the agent's --port: give them different ports")
    setup_logging()
    return supervise(children(args, agent_args), GRACE_S)


if __name__ == "__main__":
    sys.exit(main())
