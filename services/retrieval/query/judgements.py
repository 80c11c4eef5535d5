"""The voting queries' qrels as one sparse query x document matrix (values are grades).

Read once per index version from the kNN collection; the collaborative signals (the votes,
co-relevance, the judged-by field) are sparse products over it, so a query costs a few vector
operations rather than a Python loop over every judgement of its neighbours.

The matrix is a :class:`Csr`: scipy's compressed-rows layout with the few products the signals
take, in numpy, so that serving needs no scipy (docs/image.md). Each product adds its terms in
the order scipy's ``csr_matvec`` and ``csr_matvecs`` add them (a row's entries in storage order,
from 0.0), so the scores keep their bits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

Index = npt.NDArray[np.int32]
Values = npt.NDArray[np.float64]


def row_positions(starts: npt.NDArray[Any], lengths: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Where the entries of rows starting at ``starts``, ``lengths`` long, are stored, in turn."""
    before = np.cumsum(lengths) - lengths  # entries of the earlier rows
    positions = np.repeat(starts - before, lengths)
    positions += np.arange(positions.size)
    return positions


@dataclass(frozen=True)
class Csr:
    """A sparse matrix by rows: row ``i``'s columns ``indices[indptr[i]:indptr[i + 1]]``.

    Columns ascend within a row and no (row, column) appears twice, as in scipy's canonical CSR.
    """

    indptr: Index
    indices: Index
    data: Values
    shape: tuple[int, int]

    @classmethod
    def from_entries(
        cls, rows: npt.ArrayLike, cols: npt.ArrayLike, values: npt.ArrayLike, shape: tuple[int, int]
    ) -> Csr:
        """The matrix of ``values[k]`` at ``(rows[k], cols[k])``; a repeated cell holds their sum."""
        width = max(shape[1], 1)
        flat = np.asarray(rows, dtype=np.int64) * width + np.asarray(cols, dtype=np.int64)
        cells, cell_of = np.unique(flat, return_inverse=True)
        summed = np.bincount(cell_of, weights=np.asarray(values, dtype=np.float64))
        indptr = np.zeros(shape[0] + 1, dtype=np.int32)
        np.cumsum(np.bincount(cells // width, minlength=shape[0]), out=indptr[1:])
        return cls(indptr, (cells % width).astype(np.int32), summed.astype(np.float64), shape)

    @cached_property
    def entry_rows(self) -> Index:
        """The row of every stored entry, in storage order."""
        return np.repeat(np.arange(self.shape[0], dtype=np.int32), np.diff(self.indptr))

    def with_values(self, value: float) -> Csr:
        """The same entries, each holding ``value``."""
        return Csr(self.indptr, self.indices, np.full(len(self.data), value), self.shape)

    def transposed(self) -> Csr:
        """Columns as rows: each new row's entries in the order of the old rows."""
        rows, cols = self.shape
        return Csr.from_entries(self.indices, self.entry_rows, self.data, (cols, rows))

    def take_rows(self, rows: npt.ArrayLike) -> Csr:
        """The matrix of ``rows`` (in that order; one may come twice)."""
        rows = np.asarray(rows, dtype=np.int64)
        starts, lengths = self.indptr[rows], np.diff(self.indptr)[rows]
        positions = row_positions(starts, lengths)
        indptr = np.zeros(len(rows) + 1, dtype=np.int32)
        np.cumsum(lengths, out=indptr[1:])
        taken = (len(rows), self.shape[1])
        return Csr(indptr, self.indices[positions], self.data[positions], taken)

    def row_sums(self) -> Values:
        """Each row's values summed, as scipy's ``sum(axis=1)`` adds them (``np.add.reduceat``)."""
        sums = np.zeros(self.shape[0])
        filled = np.flatnonzero(np.diff(self.indptr))
        if len(filled):
            sums[filled] = np.add.reduceat(self.data, self.indptr[filled])
        return sums

    def column_counts(self) -> npt.NDArray[np.int64]:
        """How many entries each column holds."""
        return np.bincount(self.indices, minlength=self.shape[1])

    def dot(self, x: npt.ArrayLike) -> Values:
        """The product with the vector ``x``, or with each column of the matrix ``x``.

        In float64, each row's products added in storage order from 0.0 (scipy's ``@``).
        """
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 1:
            products = self.data * x[self.indices]
            return np.asarray(
                np.bincount(self.entry_rows, weights=products, minlength=self.shape[0]),
                dtype=np.float64,
            )
        out = np.zeros((self.shape[0], x.shape[1]))
        lengths = np.diff(self.indptr)
        # The k-th entry of every row that has one, k = 0, 1, ...: each row adds in order.
        for k in range(int(lengths.max(initial=0))):
            rows = np.flatnonzero(lengths > k)
            at = self.indptr[rows] + k
            out[rows] += self.data[at, None] * x[self.indices[at]]
        return out


class Judgements:
    """Qrels indexed by query and by document (documents in the order given)."""

    def __init__(self, qrels: Mapping[str, Mapping[str, int]], doc_ids: Sequence[str]) -> None:
        """Index ``qrels`` (query -> doc -> grade) over ``doc_ids``; unknown documents are dropped."""
        self.doc_ids = list(doc_ids)  # by column
        self.doc_index = {d: i for i, d in enumerate(self.doc_ids)}
        self.query_index = {q: i for i, q in enumerate(qrels)}
        self.queries = list(self.query_index)  # voting query ids in row order
        rows, cols, grades = [], [], []
        for q, judged in qrels.items():
            for d, grade in judged.items():
                if d in self.doc_index and grade > 0:
                    rows.append(self.query_index[q])
                    cols.append(self.doc_index[d])
                    grades.append(float(grade))
        shape = (len(self.query_index), len(self.doc_ids))
        self.matrix = Csr.from_entries(rows, cols, grades, shape)

    @cached_property
    def binary(self) -> Csr:
        """Queries x documents, 1 for every judgement: each judging query counts once."""
        return self.matrix.with_values(1.0)

    @cached_property
    def binary_by_doc(self) -> Csr:
        """:attr:`binary` transposed (documents x queries), by row."""
        return self.binary.transposed()

    def row(self, query_id: str) -> tuple[Index, Values]:
        """Document indices and grades judged by one query (empty if unknown)."""
        i = self.query_index.get(query_id)
        if i is None:
            return np.zeros(0, dtype=np.int32), np.zeros(0)
        start, end = self.matrix.indptr[i], self.matrix.indptr[i + 1]
        return self.matrix.indices[start:end], self.matrix.data[start:end]


@dataclass(frozen=True, slots=True)
class Located:
    """Documents by their column in the judgement matrix: ``at`` (0 where unknown) and ``known``.

    A query's candidates are located once; every signal then reads its columns by position.
    """

    at: npt.NDArray[np.int64]
    known: npt.NDArray[np.bool_]

    def __len__(self) -> int:
        """Number of documents."""
        return len(self.at)

    @classmethod
    def of(cls, index: Mapping[str, int], ids: Sequence[str] | Located) -> Located:
        """``ids`` located in ``index`` (doc id -> column); located ones as they are.

        Unknown ids get column 0 (a valid place to read from) and ``known`` False: read
        with ``np.where``.
        """
        if isinstance(ids, Located):
            return ids
        at = np.fromiter((index.get(i, -1) for i in ids), dtype=np.int64, count=len(ids))
        known = at >= 0
        at[~known] = 0
        return cls(at, known)

    @classmethod
    def known_at(cls, at: npt.NDArray[np.int64]) -> Located:
        """Columns that are all in the matrix."""
        return cls(at, np.ones(len(at), dtype=np.bool_))
