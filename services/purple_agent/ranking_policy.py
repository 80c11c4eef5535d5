"""The final ranking policy: from the search's candidates to the ids the agent answers with.

A policy says how many candidates it wants for a given ``top_k`` and turns them into at most
``top_k`` document ids, best first. The candidates it is given are valid corpus ids, each once:
the search client checks that where it reads the server's answer
(:func:`services.purple_agent.search.backend.read_answer`), so no policy checks again.
:class:`ServerOrder` keeps the server's order; a reranker is another :class:`RankingPolicy` and
plugs in where the app builds the agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Candidate:
    """What a policy ranks by: a valid corpus id, unique among the candidates, and its score."""

    doc_id: str
    score: float | None = None  # servers of other makes may leave it out


class RankingPolicy(Protocol):
    """Turns candidates into the final answer."""

    def candidates(self, top_k: int) -> int:
        """How many candidates to ask the MCP server for, given the requested ``top_k``."""
        ...

    def rank(self, query: str, candidates: Sequence[Candidate], top_k: int) -> list[str]:
        """At most ``top_k`` of the candidates' ids, best first."""
        ...


class ServerOrder:
    """Keep the server's order, cut to ``top_k``.

    Asking for a few more candidates than ``top_k`` keeps the answer full when the server returns
    a duplicate or a malformed id (dropped before the policy sees them). Neighbours with exactly
    the same score (NFCorpus holds duplicate documents) come back from the server in no fixed
    order; they are put in doc id order so the same query always gets the same answer.
    """

    def __init__(self, min_candidates: int, max_candidates: int = 100) -> None:
        self._min = min_candidates
        self._max = max_candidates

    def candidates(self, top_k: int) -> int:
        """``max(top_k, min_candidates)``, capped at what the MCP tool accepts."""
        return min(self._max, max(top_k, self._min))

    def rank(self, query: str, candidates: Sequence[Candidate], top_k: int) -> list[str]:
        """The first ``top_k`` ids in server order, exact ties in doc id order."""
        return [candidate.doc_id for candidate in _break_ties(candidates, top_k)]


def _break_ties(candidates: Sequence[Candidate], limit: int) -> list[Candidate]:
    """The first ``limit`` candidates, each run of adjacent equal scores sorted by doc id.

    Nothing moves across a run; a run the cut falls into is sorted whole first. Runs after the
    cut are not looked at, and a run of one (most of them) is not sorted.
    """
    ordered: list[Candidate] = []
    start, end = 0, len(candidates)
    while start < end and len(ordered) < limit:
        stop = start + 1
        while stop < end and candidates[stop].score == candidates[start].score:
            stop += 1
        run = candidates[start:stop]
        ordered.extend(run if stop - start == 1 else sorted(run, key=_doc_id))
        start = stop
    return ordered[:limit]


def _doc_id(candidate: Candidate) -> str:
    return candidate.doc_id
