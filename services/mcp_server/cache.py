"""Answers kept per index version: a query asked again is answered without searching again.

An evaluator sends the same few hundred queries on every run, and a search costs milliseconds of
CPU while a cached answer costs none of it (docs/performance.md has both). An answer is keyed by the concrete collection it came
from (what the alias resolved to: a new index version is a new key, and the entries of the old
one are dropped as soon as the new one is seen), the query text, top_k and include_text. The
cache is bounded twice, in entries (least recently used first out) and in an estimate of the
memory its answers hold, so that long answers (abstracts, top_k 100) cannot grow it past the
pod's budget. Lookups run on the event loop, stores in search threads: one lock guards both.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from services.mcp_server.schemas import SearchHits

#: (collection, query, top_k, include_text)
Key = tuple[str, str, int, bool]
#: Per hit besides its text: the dict, its float and three string headers (CPython, measured).
HIT_OVERHEAD_BYTES = 400
#: Per entry besides its hits: key, tuple and the ordered dict's slot.
ENTRY_OVERHEAD_BYTES = 300


def answer_bytes(query: str, hits: SearchHits) -> int:
    """Estimated memory of one cached answer (ASCII text: one byte a character)."""
    text = sum(len(h["doc_id"]) + len(h["title"]) + len(h["text"]) for h in hits)
    return ENTRY_OVERHEAD_BYTES + len(query) + text + HIT_OVERHEAD_BYTES * len(hits)


class ResultCache:
    """A bounded LRU map from :data:`Key` to hits; ``max_entries=0`` keeps nothing."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        """Keep at most ``max_entries`` answers holding at most ``max_bytes`` together."""
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._answers: OrderedDict[Key, tuple[SearchHits, int]] = OrderedDict()
        self._collection: str | None = None
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """Whether answers are kept at all."""
        return self.max_entries > 0

    @property
    def entries(self) -> int:
        """Answers held now."""
        return len(self._answers)

    @property
    def bytes(self) -> int:
        """Estimated memory the answers hold now."""
        return self._bytes

    def get(self, key: Key) -> SearchHits | None:
        """The answer kept for ``key`` (now the most recently used), or None."""
        with self._lock:
            found = self._answers.get(key)
            if found is None:
                return None
            self._answers.move_to_end(key)
            return found[0]

    def put(self, key: Key, hits: SearchHits) -> None:
        """Keep an answer, dropping the least recently used ones beyond the bounds.

        An answer of another collection than the one held so far drops every older entry: the
        alias moved on and they can never be asked for again.
        """
        if not self.enabled:
            return
        size = answer_bytes(key[1], hits)
        if size > self.max_bytes:
            return
        with self._lock:
            self._retain(key[0])
            old = self._answers.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._answers[key] = (hits, size)
            self._bytes += size
            while len(self._answers) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, dropped) = self._answers.popitem(last=False)
                self._bytes -= dropped

    def retain(self, collection: str) -> None:
        """Drop every answer not from ``collection`` (the one the alias resolves to now)."""
        with self._lock:
            self._retain(collection)

    def _retain(self, collection: str) -> None:
        if collection != self._collection:
            self._answers.clear()
            self._bytes = 0
            self._collection = collection
