"""Three points of four dimensions with sparse vectors: what the store tests write and read."""

from services.retrieval.types import CollectionSpec, Point, SparseVector, point_id

SPEC = CollectionSpec(dense_size=4)
POINTS = [
    Point(point_id(d), dense, {"doc_id": d, "title": f"t{d[1]}", "text": f"x{d[1]}"}, sparse)
    for d, dense, sparse in (
        ("D1", [1, 0, 0, 0], SparseVector([7], [2.0])),
        ("D2", [0, 1, 0, 0], SparseVector([7, 9], [1.0, 1.0])),
        ("D3", [0.9, 0.1, 0, 0], SparseVector([9], [3.0])),
    )
]
