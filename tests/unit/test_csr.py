"""The judgement matrix's own CSR gives scipy's bits: the same products in the same order."""

from __future__ import annotations

import numpy as np
import pytest

from services.retrieval.query.corelevance import CoRelevance
from services.retrieval.query.judgements import Csr, Judgements, Located

sp = pytest.importorskip("scipy.sparse")  # the reference; serving no longer imports it

RNG = np.random.default_rng(3)


def _entries(rows: int, cols: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` distinct cells of a ``rows`` x ``cols`` matrix, in no order, with awkward values."""
    cells = RNG.choice(rows * cols, size=n, replace=False)
    values = RNG.normal(size=n) * 10.0 ** RNG.integers(-8, 8, size=n)
    return cells // cols, cells % cols, values


@pytest.mark.parametrize(("rows", "cols", "n"), [(40, 300, 2000), (300, 40, 2000), (5, 7, 0)])
def test_layout_and_products_are_scipys_to_the_bit(rows: int, cols: int, n: int) -> None:
    r, c, v = _entries(rows, cols, n)
    ours = Csr.from_entries(r, c, v, (rows, cols))
    theirs = sp.csr_matrix((v, (r, c)), shape=(rows, cols))
    assert ours.indptr.tolist() == theirs.indptr.tolist()
    assert ours.indices.tolist() == theirs.indices.tolist()
    assert ours.data.tobytes() == theirs.data.tobytes()

    x = RNG.normal(size=cols)
    assert ours.dot(x).tobytes() == (theirs @ x).tobytes()
    # A float32 matrix is multiplied in float64, as scipy upcasts it.
    m = RNG.normal(size=(cols, 6)).astype(np.float32)
    assert ours.dot(m).tobytes() == np.asarray(theirs @ m, dtype=np.float64).tobytes()

    transposed = ours.transposed()
    by_column = theirs.T.tocsr()
    assert transposed.indptr.tolist() == by_column.indptr.tolist()
    assert transposed.indices.tolist() == by_column.indices.tolist()
    y = RNG.normal(size=rows)
    assert transposed.dot(y).tobytes() == (by_column @ y).tobytes()

    picked = RNG.integers(0, rows, size=9)
    taken = ours.take_rows(picked)
    assert taken.dot(m).tobytes() == np.asarray(theirs[picked] @ m, dtype=np.float64).tobytes()
    assert ours.row_sums().tobytes() == np.asarray(theirs.sum(axis=1)).ravel().tobytes()
    assert ours.column_counts().tolist() == np.diff(theirs.tocsc().indptr).tolist()


def test_a_repeated_cell_holds_the_sum_of_its_values() -> None:
    m = Csr.from_entries([1, 0, 1, 1], [2, 0, 2, 0], [1.0, 5.0, 2.0, 4.0], (2, 3))
    assert m.indptr.tolist() == [0, 1, 3]
    assert m.indices.tolist() == [0, 0, 2]
    assert m.data.tolist() == [5.0, 4.0, 3.0]


def test_co_relevance_spreads_scipys_product_to_the_bit() -> None:
    """Aᵀ · per_query from the judging queries' rows only is the full product's bits."""
    docs = [f"D{i}" for i in range(400)]
    judged = [zip(RNG.choice(docs, 30), RNG.integers(0, 3, 30), strict=True) for _ in range(250)]
    qrels = {f"Q{q}": {d: 1 + int(g) for d, g in pairs} for q, pairs in enumerate(judged)}
    judgements = Judgements(qrels, docs)
    co = CoRelevance(judgements)
    a = judgements.binary
    by_doc = sp.csr_matrix((a.data, a.indices, a.indptr), shape=a.shape).T.tocsr()
    for _ in range(20):
        per_query = RNG.random(a.shape[0]) * 10.0 ** RNG.integers(-6, 6, a.shape[0])
        per_query[RNG.random(a.shape[0]) < 0.8] = 0.0  # most queries judge no anchor
        assert co._spread(per_query).tobytes() == (by_doc @ per_query).tobytes()
    anchors = {3: 0.5, 17: 0.25, 240: 0.125}
    spread = by_doc @ ((a.dot(_column(anchors, a.shape[1]))) * co._weights)
    located = Located.of(judgements.doc_index, docs)
    points = np.arange(len(docs), dtype=np.int64)
    assert co.scores(anchors).columns(located, points)[0].tobytes() == spread.tobytes()


def _column(weights: dict[int, float], size: int) -> np.ndarray:
    w = np.zeros(size)
    for i, x in weights.items():
        w[i] = x
    return w
