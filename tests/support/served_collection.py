"""What a built collection serves, as one value: two builds that wrote the same collection
compare equal, point for point and search for search."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.nfcorpus.dataset import load_queries
from services.retrieval.encoders.sparse import query_vector
from services.retrieval.settings import StoreSettings
from services.retrieval.store import open_store
from services.retrieval.text import analyze
from services.retrieval.types import VectorQuery


def served_collection(store_settings: StoreSettings, data: Path) -> dict[str, Any]:
    """Everything the collection behind the settings' alias answers: its points, and BM25 and
    dense searches (the first queries of the BEIR folder ``data``, the first points' vectors)."""
    store = open_store(store_settings)
    try:
        name = store.resolve_alias(store_settings.collection) or ""
        points = sorted(store.scroll(name, True, vectors=True), key=lambda h: h.id)
        texts = list(load_queries(data).values())[:20]
        asks = [VectorQuery(query_vector(analyze(t)), 10) for t in texts]
        asks += [VectorQuery(p.dense.tolist(), 10) for p in points[:5] if p.dense is not None]
        return {
            "name": name,
            "points": [
                (p.id, dict(p.payload), p.dense.tobytes()) for p in points if p.dense is not None
            ],
            "searches": [(f.ids, f.scores) for f in store.search(name, asks)],
        }
    finally:
        store.close()
