"""The order of a ranking of NFCorpus documents: best first, equal scores in doc id order.

NFCorpus holds duplicate documents (one abstract under several ids), which every retriever scores
exactly alike, and a search engine returns such ties in no fixed order. Ordering each run of
equal scores by doc id makes a ranking reproducible: the same query gets the same answer in every
process. The retrieval core and the purple agent both rank by this one rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def break_ties(
    ranked: Sequence[T], limit: int, score: Callable[[T], Any], key: Callable[[T], Any]
) -> list[T]:
    """The first ``limit`` of ``ranked`` (best first), each run of equal scores in key order.

    ``score`` and ``key`` read an item's score and its doc id (or another unique key). Nothing
    moves across a run: a list sorted by descending score comes out sorted by (score descending,
    key). A run the cut falls into is sorted whole first; runs after the cut are not looked at,
    and a run of one (most of them) is not sorted.
    """
    ordered: list[T] = []
    start, end = 0, len(ranked)
    while start < end and len(ordered) < limit:
        first = score(ranked[start])
        stop = start + 1
        while stop < end and score(ranked[stop]) == first:
            stop += 1
        run = ranked[start:stop]
        ordered.extend(run if stop - start == 1 else sorted(run, key=key))
        start = stop
    return ordered[:limit]
