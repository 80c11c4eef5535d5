"""Send one real retrieval query to a purple agent over A2A and check the answer.

Used by the chart's `helm test` pod and by `make smoke-image`; standard library only, so it runs in
any Python 3.11 image. It waits (bounded) until the agent card is served, sends the AgentBeats
request `{"query": ..., "top_k": k}` as an A2A 0.3 `message/send` call, and checks the contract:
a completed task whose artifact holds exactly `top_k` unique document ids. Exit status 0 on
success; otherwise the message says which step failed.

When the agent requires a token (the chart's auth.enabled), the script sends
`Authorization: Bearer <token>`: the token of `A2A_TOKEN`, else the first one of the file
`--token-file` / `A2A_TOKEN_FILE`, in the agent's own format (one per line, `name:token`, `#`
comments).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid
from typing import Any

COMPLETED = {"completed", "TASK_STATE_COMPLETED"}
RETRY_S = 2.0
UNAUTHORIZED = 401  # a wrong or missing token: retrying cannot help


def read_token(path: str) -> str:
    """The first token of a token file: one per line, ``name:token`` or bare, ``#`` comments."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise SystemExit(f"FAIL: cannot read the token file {path}: {e.strerror}") from None
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#"):
            return line.rpartition(":")[2].strip()
    raise SystemExit(f"FAIL: no token in {path}")


def http_json(
    url: str, body: dict[str, Any] | None = None, timeout: float = 30.0, token: str | None = None
) -> Any:
    """GET (or POST ``body`` to) ``url`` and decode the JSON answer."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST")
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return json.load(answer)


def wait_for_card(base: str, wait_s: float) -> dict[str, Any]:
    """The agent card, retried until ``wait_s`` has passed (the stack may still be starting)."""
    url = base + ".well-known/agent-card.json"
    deadline = time.monotonic() + wait_s
    while True:
        try:
            card = http_json(url, timeout=5)
            if not isinstance(card, dict) or "name" not in card:
                raise ValueError(f"not an agent card: {str(card)[:200]}")
            return card
        except (OSError, ValueError) as e:
            if time.monotonic() > deadline:
                raise SystemExit(f"FAIL: no agent card at {url} after {wait_s:g} s: {e}") from None
            print(f"waiting for {url}: {e}", flush=True)
            time.sleep(RETRY_S)


def find_key(node: Any, key: str) -> Any:
    """First value stored under ``key`` anywhere in ``node`` (depth first)."""
    if isinstance(node, dict):
        if key in node:
            return node[key]
        children = list(node.values())
    elif isinstance(node, list):
        children = node
    else:
        return None
    for child in children:
        found = find_key(child, key)
        if found is not None:
            return found
    return None


def query(base: str, text: str, top_k: int, wait_s: float, token: str | None = None) -> list[str]:
    """Send the query; retry while the agent answers with a failed task (MCP not ready yet)."""
    deadline = time.monotonic() + wait_s
    while True:
        request = {
            "jsonrpc": "2.0",
            "id": str(uuid.uuid4()),
            "method": "message/send",
            "params": {
                "message": {
                    "kind": "message",
                    "role": "user",
                    "messageId": str(uuid.uuid4()),
                    "parts": [
                        {"kind": "text", "text": json.dumps({"query": text, "top_k": top_k})}
                    ],
                }
            },
        }
        started = time.perf_counter()
        try:
            answer = http_json(base, request, timeout=60, token=token)
        except urllib.error.HTTPError as e:
            if e.code != UNAUTHORIZED:
                answer = {"error": str(e)}
            elif token:
                raise SystemExit("FAIL: HTTP 401: the agent refused the token") from None
            else:
                raise SystemExit(
                    "FAIL: HTTP 401: the agent requires a token (A2A_TOKEN_FILE or A2A_TOKEN)"
                ) from None
        except (OSError, ValueError) as e:
            answer = {"error": str(e)}
        elapsed = time.perf_counter() - started
        result = answer.get("result") if isinstance(answer, dict) else None
        status = result.get("status") if isinstance(result, dict) else None
        state = status.get("state") if isinstance(status, dict) else find_key(result, "state")
        if state in COMPLETED:
            doc_ids = find_key(result, "doc_ids")
            print(f"answer in {elapsed * 1000:.0f} ms: {json.dumps(doc_ids)}")
            return check(doc_ids, top_k)
        problem = json.dumps(answer)[:500]
        if time.monotonic() > deadline:
            raise SystemExit(f"FAIL: no completed task after {wait_s:g} s; last answer: {problem}")
        print(f"not answered yet (state {state}): {problem}", flush=True)
        time.sleep(RETRY_S)


def check(doc_ids: Any, top_k: int) -> list[str]:
    """The answer contract: exactly ``top_k`` unique non-empty string ids."""
    if not isinstance(doc_ids, list) or not all(isinstance(d, str) and d for d in doc_ids):
        raise SystemExit(f"FAIL: doc_ids is not a list of ids: {doc_ids!r}")
    if len(doc_ids) != top_k or len(set(doc_ids)) != top_k:
        raise SystemExit(f"FAIL: expected {top_k} unique ids, got {doc_ids!r}")
    return doc_ids


def main() -> None:
    """Parse the arguments, then card, query and check."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--url", required=True, help="purple agent base URL, e.g. http://host:9009/"
    )
    parser.add_argument("--query", default="vitamin D and breast cancer risk")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--wait", type=float, default=120.0, help="seconds to wait for the stack")
    parser.add_argument(
        "--token-file",
        default=os.environ.get("A2A_TOKEN_FILE") or None,
        help="file of the agent's accepted tokens; the first is sent (default: $A2A_TOKEN_FILE)",
    )
    args = parser.parse_args()
    base = args.url if args.url.endswith("/") else args.url + "/"
    # The token itself only from the environment: a command line is visible to every process.
    token = os.environ.get("A2A_TOKEN") or None
    if token is None and args.token_file:
        token = read_token(args.token_file)
    card = wait_for_card(base, args.wait)
    print(f"agent card: {card['name']} ({card.get('url') or base})")
    query(base, args.query, args.top_k, args.wait, token=token)
    print("OK")


if __name__ == "__main__":
    try:
        main()
    except urllib.error.HTTPError as e:
        sys.exit(f"FAIL: HTTP {e.code} from {e.url}")
