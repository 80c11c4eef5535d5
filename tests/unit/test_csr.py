"""The judgement matrix's own CSR gives scipy's bits: the same products in the same order."""

from __future__ import annotations

import numpy as np
import pytest

from services.retrieval.query.judgements import Csr

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
