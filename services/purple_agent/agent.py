"""The purple agent's logic: a query and a top_k answered from the MCP tool, ranked, in time.

The answer is at most ``top_k`` unique valid corpus ids, best first, within one deadline; every
failure is an :class:`AgentFailure` whose message says what went wrong, in words for the caller
(the search service's address and answers stay in its ``detail``, which the logs get). Reading the request from
an A2A message and writing the answer back is the A2A adapter's (:mod:`services.purple_agent.a2a`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from services.purple_agent.ranking_policy import Candidate, RankingPolicy
from services.purple_agent.search import McpCallError


class AgentFailure(Exception):
    """The request cannot be answered; ``reason`` labels the metric, the message is for the user.

    ``detail`` (the message, unless given) is for the logs: it may name internal addresses.
    """

    def __init__(self, reason: str, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.detail = detail or message


class Searcher(Protocol):
    """What the agent needs from the MCP client."""

    url: str

    async def search(self, query: str, top_k: int, deadline: float) -> list[Candidate]:
        """Candidates for ``query`` (valid ids, each once), best first, before ``deadline``.

        ``deadline`` is a ``time.monotonic()`` instant.
        """
        ...


class RetrievalAgent:
    """Answers one retrieval request within the deadline."""

    def __init__(self, searcher: Searcher, policy: RankingPolicy, deadline_s: float) -> None:
        self._searcher = searcher
        self._policy = policy
        self._deadline_s = deadline_s

    async def answer(self, query: str, top_k: int) -> list[str]:
        """The ranked document ids answering ``query``: at most ``top_k``, best first.

        Raises:
            AgentFailure: Retrieval failed or ran out of time.

        """
        deadline = time.monotonic() + self._deadline_s
        try:
            async with asyncio.timeout(self._deadline_s):
                wanted = self._policy.candidates(top_k)
                candidates = await self._searcher.search(query, wanted, deadline)
                return self._policy.rank(query, candidates, top_k)
        except TimeoutError:
            failure = McpCallError(
                "deadline",
                f"no answer from the MCP server at {self._searcher.url}",
                retryable=False,
            )
        except McpCallError as e:
            failure = e
        if failure.reason != "mcp_tool_error" and (
            failure.reason == "deadline" or time.monotonic() >= deadline - 0.05
        ):
            raise AgentFailure(
                "deadline",
                f"deadline of {self._deadline_s:g} s exceeded: {failure.public}",
                f"deadline of {self._deadline_s:g} s exceeded: {failure}",
            )
        raise AgentFailure(
            failure.reason, f"retrieval failed: {failure.public}", f"retrieval failed: {failure}"
        )
