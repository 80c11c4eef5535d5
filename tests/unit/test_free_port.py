"""free_port hands out ports a server can bind, and never the same one twice in a process;
closed_port one that refuses connections."""

from __future__ import annotations

import random
import socket

import pytest

from harness import processes
from harness.processes import free_port
from tests.support.ports import closed_port


def test_a_port_is_bindable_and_never_handed_out_twice() -> None:
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    with socket.socket() as s:
        s.bind(("127.0.0.1", ports[-1]))


def test_a_random_draw_that_repeats_is_not_handed_out_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The scenario test once drew the same port for the agent and its MCP server; both then
    # tried to bind it. Forcing every draw to one port shows the second caller gets another.
    monkeypatch.setattr(processes, "_HANDED_OUT", set())
    monkeypatch.setattr(random, "randint", lambda low, high: 12_345)
    first, second = free_port(), free_port()
    assert first != second


def test_a_closed_port_refuses_connections_and_cannot_be_taken() -> None:
    with closed_port() as port:
        with socket.socket() as client, pytest.raises(ConnectionRefusedError):
            client.connect(("127.0.0.1", port))
        with socket.socket() as other, pytest.raises(OSError):
            other.bind(("127.0.0.1", port))
