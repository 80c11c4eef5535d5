"""The executions of assessment requests in flight, to cancel those whose caller hung up."""

from __future__ import annotations

import asyncio
from typing import Any

from a2a.auth.user import User
from a2a.types import Message


class Running:
    """The executions of requests in flight, by caller and message id.

    The SDK runs the executor in a task of its own, which goes on when the request that started
    it is cancelled (its client hung up: :mod:`services.common.disconnect`). The handler cancels
    it through this registry instead, so an agent stops calling its own backends for nobody. The
    caller's name is part of the key: one caller cannot cancel another's request by reusing its
    message id.
    """

    def __init__(self) -> None:
        self._tasks: dict[tuple[str, str], asyncio.Task[Any]] = {}

    @staticmethod
    def key(user: User | None, message: Message | None) -> tuple[str, str]:
        """The registry's key of a request: its caller's name (``""``: none) and message id."""
        name = user.user_name if user is not None and user.is_authenticated else ""
        return name, message.message_id if message is not None else ""

    def add(self, key: tuple[str, str]) -> None:
        """Register the current task (the execution) under ``key`` until it ends."""
        task = asyncio.current_task()
        if task is None or not key[1]:
            return
        self._tasks[key] = task
        task.add_done_callback(lambda done: self._tasks.pop(key, None))

    def cancel(self, key: tuple[str, str]) -> None:
        """Cancel the execution registered under ``key``, if it still runs."""
        task = self._tasks.pop(key, None)
        if task is not None:
            task.cancel()


#: The process's one registry: the executor adds to it, the request handler cancels through it.
RUNNING = Running()
