"""Three points of four dimensions with sparse vectors: what the store tests write and read.

Numbered as the indexer numbers documents (their order: D1 is 0, D3 is 2).
"""

from services.retrieval.types import CollectionSpec, Point, SparseVector

SPEC = CollectionSpec(dense_size=4)
_DOCS: list[tuple[str, list[float], SparseVector]] = [
    ("D1", [1, 0, 0, 0], SparseVector([7], [2.0])),
    ("D2", [0, 1, 0, 0], SparseVector([7, 9], [1.0, 1.0])),
    ("D3", [0.9, 0.1, 0, 0], SparseVector([9], [3.0])),
]
POINTS = [
    Point(i, dense, {"doc_id": d, "title": f"t{d[1]}", "text": f"x{d[1]}"}, sparse)
    for i, (d, dense, sparse) in enumerate(_DOCS)
]
