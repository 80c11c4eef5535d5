"""The final ranking policy: from the MCP server's candidates to the ids the agent answers with.

A policy says how many candidates it wants for a given ``top_k`` and turns them into at most
``top_k`` unique, valid document ids, best first. Today's policy keeps the server's order; a
reranker is another :class:`RankingPolicy` and plugs in where the app builds the agent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict

#: Every NFCorpus document id has this form; anything else from the server is dropped.
DOC_ID_PATTERN = re.compile(r"MED-\d+")


class Candidate(BaseModel):
    """One search hit as the MCP tool returns it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    doc_id: str
    score: float | None = None  # servers of other makes may leave it out
    title: str = ""
    text: str = ""


class RankingPolicy(Protocol):
    """Turns candidates into the final answer."""

    def candidates(self, top_k: int) -> int:
        """How many candidates to ask the MCP server for, given the requested ``top_k``."""
        ...

    def rank(self, query: str, candidates: Sequence[Candidate], top_k: int) -> list[str]:
        """At most ``top_k`` unique valid document ids, best first."""
        ...


def is_valid_doc_id(doc_id: str) -> bool:
    """Whether ``doc_id`` has the form of a corpus id (``MED-<n>``)."""
    return DOC_ID_PATTERN.fullmatch(doc_id) is not None


class ServerOrder:
    """Keep the server's order, drop duplicates and malformed ids, cut to ``top_k``.

    Asking for a few more candidates than ``top_k`` keeps the answer full when the server returns
    a duplicate or a malformed id. Neighbours with exactly the same score (NFCorpus holds
    duplicate documents) come back from the server in no fixed order; they are put in doc id
    order so the same query always gets the same answer.
    """

    def __init__(self, min_candidates: int, max_candidates: int = 100) -> None:
        self._min = min_candidates
        self._max = max_candidates

    def candidates(self, top_k: int) -> int:
        """``max(top_k, min_candidates)``, capped at what the MCP tool accepts."""
        return min(self._max, max(top_k, self._min))

    def rank(self, query: str, candidates: Sequence[Candidate], top_k: int) -> list[str]:
        """Return the first ``top_k`` unique valid ids in server order."""
        seen: set[str] = set()
        ranked: list[str] = []
        for candidate in _break_ties(candidates):
            doc_id = candidate.doc_id
            if doc_id in seen or not is_valid_doc_id(doc_id):
                continue
            seen.add(doc_id)
            ranked.append(doc_id)
            if len(ranked) == top_k:
                break
        return ranked


def _break_ties(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Sort each run of adjacent equal scores by doc id; never move anything across a run."""
    ordered: list[Candidate] = []
    run: list[Candidate] = []
    for candidate in candidates:
        if run and candidate.score != run[-1].score:
            ordered.extend(sorted(run, key=lambda c: c.doc_id))
            run = []
        run.append(candidate)
    ordered.extend(sorted(run, key=lambda c: c.doc_id))
    return ordered
