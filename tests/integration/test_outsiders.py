"""A query's outsiders (candidates no voting query judged) read from a real embedded store.

What :func:`~services.retrieval.query.candidates.locate` reads of them must be what the
store holds: each one's record from its payload and its dense score for the query, whether
the score came from the dense list or was asked for; and a record read once is not read again.
"""

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from services.retrieval.query.candidates import locate
from services.retrieval.query.documents import RANKER_FIELDS, DocRecord, JudgedDocs, RecordCache
from services.retrieval.query.evidence import RankedDocs
from services.retrieval.store.base import StoreError
from services.retrieval.store.counting import CountingStore
from services.retrieval.store.edge import EdgeStore
from services.retrieval.types import (
    CollectionSpec,
    EncodedQuery,
    Point,
    SparseVector,
    VectorQuery,
)

VECTORS: list[list[float]] = [
    [1, 0, 0, 0],
    [0, 1, 0, 0],
    [0.6, 0.8, 0, 0],
    [0.8, 0, 0.6, 0],
    [0, 0, 0, 1],
]
QUERY = EncodedQuery([0.8, 0.6, 0.0, 0.0], SparseVector([], []), "q", ("heart",))


def _payload(i: int) -> dict[str, object]:
    return {
        "doc_id": f"D{i}",
        "title": f"title {i}",
        "title_terms": ["heart", f"t{i}"],
        "train_votes": 0,
        "text_length": 10 + i,
        "ordinal": 4 - i,
        "text": f"the text of D{i}",
    }


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CountingStore]:
    inner = EdgeStore(tmp_path)
    inner.create_collection("c", CollectionSpec(dense_size=4, sparse=False))
    inner.upsert("c", [Point(i, v, _payload(i)) for i, v in enumerate(VECTORS)])
    yield CountingStore(inner)
    inner.close()


def _judged(store: CountingStore, points: list[int]) -> JudgedDocs:
    return JudgedDocs(store.retrieve("c", points, RANKER_FIELDS, vectors=True))


def test_outsiders_hold_their_payloads_records_and_their_cosines(store: CountingStore) -> None:
    (exact,) = store.search("c", [VectorQuery(QUERY.dense, 5, exact=True)])
    cosine = dict(zip(exact.ids, exact.scores, strict=True))
    # Point 2 is on the dense list, point 3 only on another list: its score has to be asked.
    dense = RankedDocs(np.array([2, 0]), np.array([cosine[2], cosine[0]]))
    points = np.array([0, 2, 3, 1], dtype=np.int64)
    cands = locate(store, "c", _judged(store, [0, 1]), RecordCache(), QUERY, points, dense)
    assert cands.outsiders.rows.tolist() == [1, 2]
    assert cands.outsiders.records == [DocRecord.of_payload(_payload(p)) for p in (2, 3)]
    assert cands.outsiders.cosines == pytest.approx([cosine[2], cosine[3]], abs=1e-6)
    assert cands.ordinals.tolist() == [4, 2, 1, 3]
    assert cands.names([1, 2]) == [("D2", "title 2"), ("D3", "title 3")]


def test_a_record_read_once_is_not_read_again(store: CountingStore) -> None:
    judged, records = _judged(store, [0]), RecordCache()
    dense = RankedDocs(np.array([0]), np.array([0.8]))
    points = np.array([0, 3, 4], dtype=np.int64)
    store.reset()
    first = locate(store, "c", judged, records, QUERY, points, dense)
    assert store.calls == 2  # the scores of 3 and 4, their records
    store.reset()
    again = locate(store, "c", judged, records, QUERY, points, dense)
    assert store.calls == 1  # the scores only: a query's cosines are its own
    assert again.outsiders.records == first.outsiders.records
    assert again.outsiders.cosines.tolist() == first.outsiders.cosines.tolist()


def test_a_candidate_the_store_lacks_is_an_error(store: CountingStore) -> None:
    judged = _judged(store, [0])
    points = np.array([0, 99], dtype=np.int64)
    dense = RankedDocs(np.array([0]), np.array([0.8]))
    with pytest.raises(StoreError, match="rebuild"):
        locate(store, "c", judged, RecordCache(), QUERY, points, dense)
