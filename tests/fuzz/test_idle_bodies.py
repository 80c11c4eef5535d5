"""Connections that promise a body and never send it, against the MCP server's searches.

Issue 52's input 1: 64 connections sending ``DELETE /mcp`` with ``Content-Length: 1000`` and no
body made every ``POST /search_nfcorpus`` a 503 for as long as they stayed open. What is
asserted is the mechanism (every search answered while the idle bodies are open, the methods
``/mcp`` does not serve refused from the head); the searches' median time without and with them
goes to the fuzz report (``make fuzz``), a figure of the machine.
"""

from __future__ import annotations

import statistics
import time

import httpx
import pytest

from harness.processes import McpServer
from tests.fuzz.verdict import Tally
from tests.support.idle_bodies import IDLE, idle_bodies

SEARCHES = 20


def _median_ms(mcp_server: McpServer, round_name: str) -> float:
    """The median time of ``SEARCHES`` searches, each a query of its own (no cached answer)."""
    times = []
    with httpx.Client(base_url=mcp_server.base_url, timeout=10) as client:
        for i in range(SEARCHES):
            search = {"query": f"soy and hot flashes {round_name} {i}", "top_k": 5}
            started = time.perf_counter()
            answer = client.post("/search_nfcorpus", json=search)
            times.append(time.perf_counter() - started)
            assert answer.status_code == 200, answer.text
    return statistics.median(times) * 1000


@pytest.mark.parametrize(("method", "path"), [("DELETE", "/mcp"), ("POST", "/search_nfcorpus")])
def test_searches_are_answered_besideidle_bodies(
    mcp_server: McpServer, tally: Tally, method: str, path: str
) -> None:
    alone = _median_ms(mcp_server, f"alone {method} {path}")
    with idle_bodies(mcp_server.port, method, path, IDLE):
        beside = _median_ms(mcp_server, f"beside {method} {path}")
    tally.note(
        f"{IDLE} idle {method} {path} bodies (Content-Length: 1000, nothing sent)",
        f"POST /search_nfcorpus median {alone:.1f} ms alone, {beside:.1f} ms beside them "
        f"({SEARCHES} searches each, all answered)",
    )
