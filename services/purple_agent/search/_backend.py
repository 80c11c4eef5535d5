"""What every search backend offers the client, and how a probe says "not spoken here"."""

from __future__ import annotations

from typing import Protocol

from services.purple_agent.metrics import SEARCH_BACKENDS
from services.purple_agent.search._hits import Hits

#: The backends, the ``backend`` label of ``purple_search_backend``.
KINDS = SEARCH_BACKENDS


class Backend(Protocol):
    """One way of calling the search: found by discovery, used until a call fails."""

    @property
    def kind(self) -> str:
        """One of :data:`KINDS`."""
        ...

    @property
    def url(self) -> str:
        """The endpoint it calls."""
        ...

    async def search(self, query: str, top_k: int) -> Hits:
        """The hits for ``query``; raises the exceptions :func:`._errors.classify` reads."""
        ...

    async def ready(self) -> tuple[bool, str]:
        """Whether the server can search now, and why not."""
        ...


class NotSpoken(Exception):
    """The endpoint answered, but not in the protocol probed (the message says what it did)."""


def not_here(status: int) -> bool:
    """Whether an HTTP status means "no such protocol at this endpoint", not a failure of it.

    401 and 403 (a token) and 429 (busy) are the server speaking; any other 4xx (404, 405, 406,
    415, 400...) is an endpoint that is not there or takes another kind of request.
    """
    return 400 <= status < 500 and status not in (401, 403, 429)
