"""The purple agent served in-process by uvicorn on loopback, and raw JSON-RPC bodies for it."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from typing import Any

import uvicorn

from services.purple_agent.app import create_app
from services.purple_agent.settings import PurpleSettings

START_TIMEOUT_S = 15.0


class ThreadedServer:
    """An ASGI app served by uvicorn in a thread, on a loopback socket bound up front."""

    def __init__(self, settings: PurpleSettings) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        port = self.socket.getsockname()[1]
        self.port: int = port
        self.url = f"http://127.0.0.1:{port}"
        settings = settings.model_copy(update={"port": port})
        config = uvicorn.Config(create_app(settings), log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, args=([self.socket],), daemon=True)

    def __enter__(self) -> ThreadedServer:
        self.thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("purple agent did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(START_TIMEOUT_S)
        self.socket.close()


def v03_body(text: str) -> dict[str, Any]:
    message = {
        "kind": "message",
        "messageId": uuid.uuid4().hex,
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    }
    return {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}


def v10_body(parts: list[dict[str, Any]]) -> dict[str, Any]:
    message = {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": parts}
    return {"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": message}}
