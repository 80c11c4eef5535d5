"""Work for clients that have gone is dropped: searches still queued when the caller hangs up.

One search thread and a burst of callers that give up: the server runs the searches that had
started and never runs the others (``outcome="abandoned"``).
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from harness.processes import ServerProcess
from services.purple_agent.settings import PurpleSettings
from tests.support.purple import ThreadedServer, v03_body
from tests.support.small_index import SmallIndex

BURST = 24
CALLERS = 8
HANG_S = 30.0  # bound of every wait: only a hang takes this long
BUDGET_S = 55.0  # the purple agent's deadline and MCP timeout: longer than any wait here
SOCKET_STATES = {"01": "open", "08": "closed"}  # ESTABLISHED, CLOSE_WAIT (the peer sent FIN)
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
    line = f'mcp_http_request_duration_seconds_count{{caller="anonymous",outcome="{outcome}",route="{route}"}} '
    return float(next(m for m in text.splitlines() if m.startswith(line)).split()[-1])


def _recorded(server: ServerProcess, route: str) -> float:
    """Requests to ``route`` the server has finished with, whatever their outcome."""
    text = httpx.get(server.base_url + "/metrics").text
    pattern = rf'mcp_http_request_duration_seconds_count\{{caller="[^"]*",outcome="\w+",route="{route}"\}} (\S+)'
    return sum(float(n) for n in re.findall(pattern, text))


async def _until(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` (yielding to the callers' tasks) with a bound that only catches a hang."""
    try:
        async with asyncio.timeout(HANG_S):
            while True:  # polled: what a frozen server or the kernel shows has no event
                if condition():
                    return
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"no {what} after {HANG_S:g} s") from None


async def _until_recorded(server: ServerProcess, route: str, count: float) -> None:
    # Polled: the server's metrics are the only signal it gives.
    await _until(lambda: _recorded(server, route) >= count, f"{count:g} requests to {route}")


def _held(port: int) -> Counter[str]:
    """Connections to the server on ``port`` that hold request bytes it has not read, by state
    (``open``; ``closed``: the client has hung up), accepted or still in its listen queue.

    The kernel's view (``/proc/net/tcp``): a frozen server can tell nothing itself.
    """
    local = f"0100007F:{port:04X}"  # 127.0.0.1, as /proc writes it
    held: Counter[str] = Counter()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        unread = int(fields[4].split(":")[1], 16)
        if fields[1] == local and unread and fields[3] in SOCKET_STATES:
            held[SOCKET_STATES[fields[3]]] += 1
    return held


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
        r'mcp_http_request_duration_seconds_count\{caller="[^"]*",outcome="server_error",route="[^"]*"\} (\S+)',
        metrics,
    )
    assert server_errors and all(float(n) == 0 for n in server_errors)


async def test_a_purple_agent_whose_caller_hung_up_stops_calling_mcp(
    one_thread_mcp: ServerProcess,
) -> None:
    # The MCP server is frozen until every call of the agent has reached it and every caller has
    # hung up: without cancellation the agent would keep waiting on those connections, and the
    # server would run every search once it thaws. Its budget outlasts every wait of the test,
    # so nothing but the callers' going can end its calls in time.
    port = one_thread_mcp.port
    settings = PurpleSettings(mcp_url=f"{one_thread_mcp.base_url}/mcp", deadline_s=BUDGET_S)
    settings = settings.model_copy(update={"mcp_timeout_s": BUDGET_S})
    with ThreadedServer(settings) as purple:
        async with httpx.AsyncClient(timeout=30) as client:  # found the server's kind already
            warm = await client.post(purple.url + "/", json=v03_body('{"query": "soy"}'))
        assert warm.json()["result"]["status"]["state"] == "completed", warm.text
        before = _searches(one_thread_mcp, "tool")
        abandoned_before = _requests(one_thread_mcp, "/mcp", "abandoned")
        recorded_before = _recorded(one_thread_mcp, "/mcp")
        await _until(lambda: not _held(port), "quiet MCP server")  # it reads what it was sent
        one_thread_mcp.signal(signal.SIGSTOP)
        try:
            async with httpx.AsyncClient(timeout=HANG_S) as client:
                callers = [
                    asyncio.create_task(
                        client.post(
                            purple.url + "/",
                            json=v03_body(f'{{"query": "fish oil and the heart {i}"}}'),
                        )
                    )
                    for i in range(CALLERS)
                ]
                await _until(
                    lambda: _held(port) == Counter(open=CALLERS),
                    "tool call of every caller at the frozen MCP server",
                )
                assert not any(c.done() for c in callers), "a caller was answered while frozen"
                for caller in callers:  # they hang up: their connections close
                    caller.cancel()
                await asyncio.gather(*callers, return_exceptions=True)
            await _until(
                lambda: _held(port) == Counter(closed=CALLERS),
                "hang-up of the agent on every tool call",
            )
        finally:
            one_thread_mcp.signal(signal.SIGCONT)
        await _until_recorded(one_thread_mcp, "/mcp", recorded_before + CALLERS)
        ran = _searches(one_thread_mcp, "tool").get("ok", 0) - before.get("ok", 0)
        abandoned = _requests(one_thread_mcp, "/mcp", "abandoned") - abandoned_before
        async with httpx.AsyncClient() as client:
            ready = (await client.get(purple.url + "/readyz")).status_code
    # As above: at most the first search starts before its disconnect is read.
    assert ran <= 2 and abandoned >= CALLERS - ran, (ran, abandoned)
    assert ready == 200
