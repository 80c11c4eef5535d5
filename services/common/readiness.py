"""Readiness answered from a short-lived cache.

Each kubelet probes every few seconds, and several pods may be probed at once: without a cache,
every probe would become a store query or an MCP request.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

Check = Callable[[], Awaitable[tuple[bool, str]]]


class CachedCheck:
    """Runs ``check`` at most once per ``cache_s``; calls in between get its last answer."""

    def __init__(self, check: Check, cache_s: float) -> None:
        """Wrap ``check``, which returns ``(ready, explanation)``."""
        self._check = check
        self._cache_s = cache_s
        self._checked_at: float | None = None
        self._last: tuple[bool, str] = (False, "not checked yet")

    async def __call__(self) -> tuple[bool, str]:
        """Whether the service is ready, and why (or why not)."""
        now = time.monotonic()
        if self._checked_at is None or now - self._checked_at >= self._cache_s:
            self._last = await self._check()
            self._checked_at = now
        return self._last
