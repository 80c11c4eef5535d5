"""Run the local stack: MCP server (8000) and purple agent (9010) on the embedded store.

``python scripts/stack.py`` starts both, waits until they are ready, prints the URLs and a curl
example, and stops both cleanly on Ctrl-C. ``--then CMD`` runs a command once the stack is ready
(``{mcp}`` and ``{purple}`` in it become the base URLs) and stops the stack when it ends, with
its exit status. ``--only mcp`` starts the MCP server alone.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
# What an a2a-sdk 0.3 green agent sends (message/send, the request as JSON text).
A2A_EXAMPLE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/send",
        "params": {
            "message": {
                "role": "user",
                "messageId": "example-1",
                "parts": [{"kind": "text", "text": '{"query": "vitamin D", "top_k": 5}'}],
            }
        },
    }
)


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def _wait_ready(name: str, url: str, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{name} exited with status {proc.returncode} while starting")
        try:
            if httpx.get(url, timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    sys.exit(f"{name} was not ready at {url} after {timeout_s:.0f}s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--mcp-port", type=int, default=int(os.environ.get("MCP_PORT", 8000)))
    parser.add_argument("--purple-port", type=int, default=int(os.environ.get("PURPLE_PORT", 9010)))
    parser.add_argument("--only", choices=["mcp"], help="start only the MCP server")
    parser.add_argument("--then", help="command to run once ready; the stack stops after it")
    args = parser.parse_args()

    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    mcp = f"http://{args.host}:{args.mcp_port}"
    purple = f"http://{args.host}:{args.purple_port}"
    plan: list[tuple[str, str, int, list[str], str]] = [
        ("MCP server", "services.mcp_server", args.mcp_port, [], f"{mcp}/readyz")
    ]
    if args.only != "mcp":
        agent_args = ["--card-url", f"{purple}/", "--mcp-url", f"{mcp}/mcp"]
        plan.append(
            (
                "purple agent",
                "services.purple_agent",
                args.purple_port,
                agent_args,
                f"{purple}/readyz",
            )
        )

    procs: list[subprocess.Popen[bytes]] = []

    def stop(*_: object) -> None:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        for name, module, port, extra, ready in plan:
            if not _port_free(port):
                sys.exit(f"port {port} is in use: stop what listens there or pick another port")
            cmd = [sys.executable, "-m", module, "--host", args.host, "--port", str(port), *extra]
            procs.append(subprocess.Popen(cmd, env=env, cwd=REPO))
            _wait_ready(name, ready, procs[-1], timeout_s=120)
            print(f"{name} ready at http://{args.host}:{port}/", flush=True)
        if args.then:
            command = args.then.format(mcp=mcp, purple=purple)
            return subprocess.call(["bash", "-c", command], env=env, cwd=REPO)
        print(
            "\nTry:\n"
            f"  curl -s -X POST {mcp}/search_nfcorpus -H 'content-type: application/json' "
            '-d \'{"query": "vitamin D and breast cancer", "top_k": 5}\'\n'
            f"  curl -s {purple}/.well-known/agent-card.json\n"
            f"  curl -s -X POST {purple}/ -H 'content-type: application/json' -d '{A2A_EXAMPLE}'\n"
            "Ctrl-C stops both.",
            flush=True,
        )
        while all(p.poll() is None for p in procs):
            time.sleep(0.5)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        stop()


if __name__ == "__main__":
    sys.exit(main())
