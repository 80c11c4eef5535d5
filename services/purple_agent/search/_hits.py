"""The search answer every backend hands over, read the same way: hits, repairs, or a failure.

MCP (``structuredContent``, or the JSON of its text content) and REST (the body) both carry
``{"results": [{"doc_id", "score", "title", "text"}, ...]}``; the seed's REST server adds keys of
its own (``qdrant_calls``), which are ignored, and reports a failure inside an HTTP 200 as
``{"error": "...", "results": []}``. What the agent cannot use is repaired where it can be (a
malformed hit, an id that is no NFCorpus id, a duplicate: dropped and counted) and is a failure
with the reason where it cannot (no results list, an error, nothing usable at all).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from services.purple_agent.ranking_policy import Candidate, is_valid_doc_id
from services.purple_agent.search._errors import BadAnswer, ToolFailed

_MAX_SHOWN = 160


@dataclass(slots=True)
class Hits:
    """Usable candidates, best first as the server sent them, and what was dropped."""

    candidates: list[Candidate]
    dropped: Counter[str] = field(default_factory=Counter)


def _shown(text: str) -> str:
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + "..."


def _score(value: object) -> float | None:
    """A hit's score, if it is a finite number (it only breaks ties between equal neighbours)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def read_hits(answer: object) -> Hits:
    """The candidates of a search answer (see the module docstring).

    Raises:
        ToolFailed: The answer reports an error of the search itself.
        BadAnswer: The answer has no results list, or no usable hit in a non-empty one.

    """
    if not isinstance(answer, dict):
        raise BadAnswer("the answer is not a JSON object")
    error = answer.get("error")
    if error not in (None, "", False):
        raise ToolFailed(_shown(error if isinstance(error, str) else repr(error)))
    results = answer.get("results")
    if not isinstance(results, list):
        found = "no" if results is None else f"a {type(results).__name__} as its"
        raise BadAnswer(f"the answer has {found} results list")
    hits = Hits([])
    seen: set[str] = set()
    for hit in results:
        doc_id = hit.get("doc_id") if isinstance(hit, dict) else None
        if not isinstance(doc_id, str) or not isinstance(hit, dict):
            hits.dropped["malformed_hit"] += 1
        elif not is_valid_doc_id(doc_id):
            hits.dropped["invalid_id"] += 1
        elif doc_id in seen:
            hits.dropped["duplicate"] += 1
        else:
            seen.add(doc_id)
            hits.candidates.append(_candidate(doc_id, hit))
    if results and not hits.candidates:
        what = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in hits.dropped.items())
        raise BadAnswer(f"none of its {len(results)} hits is usable ({what})")
    return hits


def _candidate(doc_id: str, hit: dict[str, Any]) -> Candidate:
    return Candidate(
        doc_id=doc_id,
        score=_score(hit.get("score")),
        title=_text(hit.get("title")),
        text=_text(hit.get("text")),
    )
