"""Build an app in the process that serves it, after what can be shared was loaded before fork.

gunicorn's ``preload_app`` imports the ASGI module once, in the master, and forks the workers
from it: whatever the module loaded by then (imported packages, a model's weights) is shared
copy-on-write by every worker instead of loaded again by each. Some parts must not cross a fork
(an embedded Qdrant shard's file locks and threads, event-loop objects), so the module exports a
:class:`BuiltInWorker`, which builds the real app at its first ASGI event: the lifespan start-up
in the worker. Without gunicorn (uvicorn, tests) the same object simply builds on start-up.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import Any

ASGIApp = Callable[[Any, Any, Any], Any]


class BuiltInWorker:
    """An ASGI app that calls ``build`` on its first event and then hands every event to it."""

    def __init__(self, build: Callable[[], ASGIApp]) -> None:
        """Remember how to build the app; nothing is built here (this may be the master)."""
        self._build = build
        self._app: ASGIApp | None = None
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        """Whether this process has built its app."""
        return self._app is not None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Serve one ASGI event, building the app first if this process has none yet."""
        if self._app is None:
            with self._lock:  # one build, even if two events raced to start it
                if self._app is None:
                    self._app = self._build()
                    freeze_shared_objects()  # the app's tables live as long as the process
        await self._app(scope, receive, send)


def freeze_shared_objects() -> None:
    """Keep the objects loaded so far out of the garbage collector's passes.

    A collection writes to every object it visits, which would copy each preloaded page into
    every worker that runs one: frozen, they stay shared. And a full collection over a million
    start-up objects (packages, model, index tables) stalls every request in flight for tens of
    milliseconds; frozen, they are never scanned again.
    """
    gc.collect()
    gc.freeze()
