"""The green agent as users run it: its command line as a subprocess, its A2A server by a client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest, StreamResponse

from harness.processes import REPO

CLI_TIMEOUT_S = 120


def run_green(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m services.green_agent *args``, its output captured as text (``env`` added)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    command = [sys.executable, "-m", "services.green_agent", *args]
    return subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT_S
    )


async def assess(green_url: str, request: dict[str, Any]) -> list[StreamResponse]:
    """Send one assessment request to the green agent's A2A server; every streamed event."""
    message = Message(
        role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=json.dumps(request))]
    )
    async with httpx.AsyncClient(timeout=120) as http:
        card = await A2ACardResolver(http, green_url).get_agent_card()
        client = await create_client(card, ClientConfig(httpx_client=http, streaming=True))
        return [e async for e in client.send_message(SendMessageRequest(message=message))]
