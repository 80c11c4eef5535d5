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
from operator import attrgetter
from typing import Protocol

from services.nfcorpus.ranking import break_ties


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


_score = attrgetter("score")
_doc_id = attrgetter("doc_id")


class ServerOrder:
    """Keep the server's order, cut to ``top_k``.

    Asking for a few more candidates than ``top_k`` keeps the answer full when the server returns
    a duplicate or a malformed id (dropped before the policy sees them). Neighbours with exactly
    the same score (NFCorpus holds duplicate documents) come back from the server in no fixed
    order; they are put in doc id order (:func:`~services.nfcorpus.ranking.break_ties`) so the
    same query always gets the same answer.
    """

    def __init__(self, min_candidates: int, max_candidates: int = 100) -> None:
        self._min = min_candidates
        self._max = max_candidates

    def candidates(self, top_k: int) -> int:
        """``max(top_k, min_candidates)``, capped at what the MCP tool accepts."""
        return min(self._max, max(top_k, self._min))

    def rank(self, query: str, candidates: Sequence[Candidate], top_k: int) -> list[str]:
        """The first ``top_k`` ids in server order, exact ties in doc id order."""
        return [c.doc_id for c in break_ties(candidates, top_k, _score, _doc_id)]
