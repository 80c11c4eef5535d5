"""A Service's cluster IP, as kube-proxy gives it, for the pods that ``make chart-run`` starts.

Runs inside a container of the project's image (standard library only) that carries the
Service's names (short and namespaced) as network aliases. Each connection to one of its ports is
passed whole to one ready endpoint, taken in turn, as kube-proxy's round-robin mode does: an
endpoint removed from the list gets no new connection, while the connections it already has
keep running until either side closes them (a draining pod finishes its requests). A port with
no ready endpoint refuses the connection.

The endpoints come from a JSON file the runner rewrites atomically whenever a pod's readiness
changes: ``{"<service port>": [["<pod ip>", <target port>, "<pod name>"], ...]}``. Each
connection is logged as one JSON line on stdout (which pod took it, or why none did).

    python service_proxy.py --endpoints /run/service/endpoints.json --port 8000 [--port ...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time

Endpoint = tuple[str, int, str]
CONNECT_TIMEOUT_S = 5.0


class Endpoints:
    """The ready endpoints of each port, as the runner's file lists them now."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.turns: dict[int, int] = {}

    def pick(self, port: int) -> Endpoint | None:
        """The next ready endpoint of ``port`` in turn; None when it has none."""
        ready = self._read().get(port, [])
        if not ready:
            return None
        turn = self.turns.get(port, 0)
        self.turns[port] = turn + 1
        return ready[turn % len(ready)]

    def _read(self) -> dict[int, list[Endpoint]]:
        # Read for every connection (a few hundred bytes; clients keep their connections): a
        # change is never missed, as a cache keyed on inode and mtime could miss one when the
        # file system's clock ticks coarser than two updates and an inode is reused.
        try:
            with open(self.path, encoding="utf-8") as f:
                listed = json.load(f)
        except FileNotFoundError:
            return {}
        return {
            int(p): [(host, int(tp), pod) for host, tp, pod in eps] for p, eps in listed.items()
        }


def log(**fields: object) -> None:
    """One JSON line on stdout, with the time (the runner reads them with ``podman logs``)."""
    print(json.dumps({"t": round(time.time(), 3), **fields}), flush=True)


async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Copy until end of stream, then half-close; a reset on one side resets the other."""
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()
    except OSError:
        sink.transport.abort()


async def forward(
    client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter, port: int, eps: Endpoints
) -> None:
    """Pass one client connection to a ready endpoint of ``port``."""
    target = eps.pick(port)
    if target is None:
        log(event="refused", port=port, reason="no ready endpoint")
        client_w.transport.abort()
        return
    try:
        connecting = asyncio.open_connection(target[0], target[1])
        up_r, up_w = await asyncio.wait_for(connecting, CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError) as e:
        log(event="refused", port=port, pod=target[2], reason=str(e) or type(e).__name__)
        client_w.transport.abort()
        return
    log(event="connected", port=port, pod=target[2])
    try:
        await asyncio.gather(pipe(client_r, up_w), pipe(up_r, client_w))
    finally:
        for writer in (up_w, client_w):
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


async def main(argv: list[str]) -> None:
    """Listen on every port until SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoints", required=True, help="JSON file of the ready endpoints")
    parser.add_argument("--port", type=int, action="append", required=True, help="a port")
    args = parser.parse_args(argv)
    eps = Endpoints(args.endpoints)
    servers = []
    for port in args.port:

        async def accept(
            r: asyncio.StreamReader, w: asyncio.StreamWriter, port: int = port
        ) -> None:
            await forward(r, w, port, eps)

        servers.append(await asyncio.start_server(accept, "0.0.0.0", port, backlog=1024))
    log(event="listening", ports=args.port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # PID 1 of a container: without a handler, SIGTERM would be ignored.
    for signum in (15, 2):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    for server in servers:
        server.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
