"""Run the local stack: MCP server (8000) and purple agent (9010) on the embedded store.

``python -m devtools.stack`` starts both, waits until they are ready, prints the URLs and a curl
example, and stops both cleanly on Ctrl-C. ``--then CMD`` runs a command once the stack is ready
(``{mcp}`` and ``{purple}`` in it become the base URLs) and stops the stack when it ends, with
its exit status. ``--only mcp`` starts the MCP server alone.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

from harness.processes import BASE_ENV, REPO, ServerProcess, port_in_use

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


def _examples(mcp: str, purple: str | None) -> str:
    lines = [
        "\nTry:",
        f"  curl -s -X POST {mcp}/search_nfcorpus -H 'content-type: application/json' "
        '-d \'{"query": "vitamin D and breast cancer", "top_k": 5}\'',
    ]
    if purple is not None:
        lines += [
            f"  curl -s {purple}/.well-known/agent-card.json",
            f"  curl -s -X POST {purple}/ -H 'content-type: application/json' -d '{A2A_EXAMPLE}'",
        ]
    return "\n".join([*lines, "Ctrl-C stops the stack."])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--mcp-port", type=int, default=int(os.environ.get("MCP_PORT", 8000)))
    parser.add_argument("--purple-port", type=int, default=int(os.environ.get("PURPLE_PORT", 9010)))
    parser.add_argument("--only", choices=["mcp"], help="start only the MCP server")
    parser.add_argument("--then", help="command to run once ready; the stack stops after it")
    args = parser.parse_args()

    host = args.host
    mcp = ServerProcess.module("services.mcp_server", port=args.mcp_port, host=host)
    servers = [("MCP server", mcp)]
    if args.only != "mcp":
        card_url = f"http://{host}:{args.purple_port}/"
        agent_args = ["--card-url", card_url, "--mcp-url", f"{mcp.base_url}/mcp"]
        purple = ServerProcess.module(
            "services.purple_agent", agent_args, port=args.purple_port, host=host
        )
        servers.append(("purple agent", purple))

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started: list[ServerProcess] = []
    try:
        for name, server in servers:
            if port_in_use(server.port, host):
                sys.exit(f"port {server.port} is in use: stop what listens there or pick another")
            try:
                server.start()
            except (RuntimeError, TimeoutError) as e:
                sys.exit(f"{name} did not start: {e}")
            started.append(server)
            print(f"{name} ready at {server.base_url}/", flush=True)
        purple_base = f"http://{host}:{args.purple_port}"
        if args.then:
            command = args.then.format(mcp=mcp.base_url, purple=purple_base)
            env = {**os.environ, **BASE_ENV}
            return subprocess.call(["bash", "-c", command], env=env, cwd=REPO)
        print(_examples(mcp.base_url, None if args.only else purple_base), flush=True)
        while all(server.running for server in started):
            time.sleep(0.5)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        for server in reversed(started):
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
