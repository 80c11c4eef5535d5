"""Work for clients that have gone is dropped: searches still queued when the caller hangs up.

One search thread and a burst of callers that give up: the server runs the searches that had
started and never runs the others (``outcome="abandoned"``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
from collections.abc import Iterator

import httpx
import pytest

from devtools.processes import ServerProcess
from services.purple_agent.settings import PurpleSettings
from tests.conftest import SmallIndex
from tests.support.purple import ThreadedServer, v03_body

BURST = 24
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def one_thread_mcp(
    small_index: SmallIndex, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("abandon")
    env = {**small_index.env(private_copy=True), "MCP_SEARCH_THREADS": "1"}
    with ServerProcess.module(
        "services.mcp_server", env=env, log_path=folder / "mcp.log"
    ) as server:
        yield server


def _searches(server: ServerProcess, via: str) -> dict[str, float]:
    text = httpx.get(server.base_url + "/metrics").text
    pattern = rf'mcp_searches_total\{{outcome="(\w+)",via="{via}"\}} ([\d.e+]+)'
    return {outcome: float(n) for outcome, n in re.findall(pattern, text)}


async def _burst(server: ServerProcess, via: str) -> None:
    """BURST callers that each send a whole request, then hang up without waiting.

    Raw sockets, not a client with a timeout: the request is known to be sent in full before the
    caller goes, whatever the machine's speed (a timeout could fire before the request left, and
    the server would then never see it: CI run 3 of a fresh series lost such requests).
    """

    async def send_and_hang_up(i: int) -> None:
        body: dict[str, object] = {"query": f"vitamin D and bone health {i}", "top_k": 10}
        if via == "tool":
            call = {"name": "search_nfcorpus", "arguments": body}
            body = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": call}
        path = "/mcp" if via == "tool" else "/search_nfcorpus"
        payload = json.dumps(body).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
            f"Content-Type: application/json\r\nAccept: {MCP_HEADERS['accept']}\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        )
        # The kernel completes the connection and buffers the request while the server is frozen.
        _, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(head.encode() + payload)
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    await asyncio.gather(*(send_and_hang_up(i) for i in range(BURST)))


def _requests(server: ServerProcess, route: str, outcome: str) -> float:
    text = httpx.get(server.base_url + "/metrics").text
    line = f'mcp_http_request_duration_seconds_count{{outcome="{outcome}",route="{route}"}} '
    return float(next(m for m in text.splitlines() if m.startswith(line)).split()[-1])


def _recorded(server: ServerProcess, route: str) -> float:
    """Requests to ``route`` the server has finished with, whatever their outcome."""
    text = httpx.get(server.base_url + "/metrics").text
    pattern = rf'mcp_http_request_duration_seconds_count\{{outcome="\w+",route="{route}"\}} (\S+)'
    return sum(float(n) for n in re.findall(pattern, text))


async def _until_recorded(server: ServerProcess, route: str, count: float) -> None:
    async with asyncio.timeout(60):
        while True:  # polled: the server's metrics are the only signal it gives
            if _recorded(server, route) >= count:
                return
            await asyncio.sleep(0.05)


@pytest.mark.parametrize("via", ["rest", "tool"])
async def test_searches_of_callers_that_hung_up_are_not_run(
    one_thread_mcp: ServerProcess, via: str
) -> None:
    # The server is frozen while the callers give up, so when it thaws every request it reads
    # comes from a client that has gone: the outcome does not depend on how fast the machine is.
    route = "/mcp" if via == "tool" else "/search_nfcorpus"
    before = _searches(one_thread_mcp, via)
    abandoned_before = _requests(one_thread_mcp, route, "abandoned")
    recorded_before = _recorded(one_thread_mcp, route)
    one_thread_mcp.signal(signal.SIGSTOP)
    try:
        await _burst(one_thread_mcp, via)
    finally:
        one_thread_mcp.signal(signal.SIGCONT)
    await _until_recorded(one_thread_mcp, route, recorded_before + BURST)  # all have ended
    after = _searches(one_thread_mcp, via)
    ran = after.get("ok", 0) - before.get("ok", 0)
    # At most the first search starts before its disconnect is read; the rest never run, and
    # every request is recorded as abandoned, not as a server error.
    assert ran <= 2, ran
    assert _requests(one_thread_mcp, route, "abandoned") - abandoned_before >= BURST - ran
    async with httpx.AsyncClient() as client:
        metrics = (await client.get(one_thread_mcp.base_url + "/metrics")).text
    server_errors = re.findall(
        r'mcp_http_request_duration_seconds_count\{outcome="server_error",route="[^"]*"\} (\S+)',
        metrics,
    )
    assert server_errors and all(float(n) == 0 for n in server_errors)


async def test_a_purple_agent_whose_caller_hung_up_stops_calling_mcp(
    one_thread_mcp: ServerProcess,
) -> None:
    # The MCP server is frozen while the callers give up: without cancellation the agent would
    # wait for it (and retry), and the server would run every search once it thaws.
    settings = PurpleSettings(mcp_url=one_thread_mcp.base_url + "/mcp", deadline_s=10)
    before = _searches(one_thread_mcp, "tool")
    with ThreadedServer(settings) as purple:

        async def give_up(client: httpx.AsyncClient, i: int) -> None:
            body = v03_body(f'{{"query": "fish oil and the heart {i}", "top_k": 10}}')
            with contextlib.suppress(httpx.TimeoutException):
                await client.post(purple.url + "/", json=body)

        one_thread_mcp.signal(signal.SIGSTOP)
        try:
            async with httpx.AsyncClient(timeout=1.0) as client:
                await asyncio.gather(*(give_up(client, i) for i in range(8)))
        finally:
            one_thread_mcp.signal(signal.SIGCONT)
        # What is asserted is that nothing runs: a wait, not a poll. On a slower machine a late
        # search would make this pass wrongly, never fail wrongly.
        await asyncio.sleep(2)
        after = _searches(one_thread_mcp, "tool")
        async with httpx.AsyncClient() as client:
            ready = (await client.get(purple.url + "/readyz")).status_code
    assert after.get("ok", 0) - before.get("ok", 0) == 0
    assert ready == 200
