"""The voting queries' qrels as one sparse query x document matrix (values are grades).

Read once per index version from the kNN collection; the collaborative signals (the votes,
co-relevance, the judged-by field) are sparse products over it, so a query costs a few vector
operations rather than a Python loop over every judgement of its neighbours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp


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
        self.matrix = sp.csr_matrix((grades, (rows, cols)), shape=shape)

    @cached_property
    def binary(self) -> sp.csr_matrix:
        """Queries x documents, 1 for every judgement: each judging query counts once."""
        binary = self.matrix.copy()
        binary.data[:] = 1.0
        return binary

    @cached_property
    def binary_by_doc(self) -> sp.csr_matrix:
        """:attr:`binary` transposed (documents x queries), by row."""
        return self.binary.T.tocsr()

    def row(self, query_id: str) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]:
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
