"""Documents as the queries that judged them describe them: the judged-by field, in two views.

NFCorpus's relevance comes from citation links: the queries that judged a document relevant
describe it in the words queries use, which its own abstract may not. Every other collaborative
signal looks from the query's side (which voting queries resemble this one?); these look from the
document's.

- Lexical (:class:`JudgedBy`): the field of a document is the analyzed text of every voting query
  that judged it relevant, and a query's score is BM25 over those fields (:data:`SHORT_TEXTS` k1
  and b, the formula of :mod:`services.retrieval.query.bm25_table`).
- Dense (:class:`NudgedDocs`): NUDGE (Zeighami et al., ICLR 2025) moves each document's
  embedding toward the training queries that judged it relevant, in closed form and without
  touching the model: ``d' = unit(d + gamma * unit(sum of its judging queries' vectors))``. The
  ranker gets the query's cosine to every candidate's nudged vector (``nudged_cos``); a document
  nobody judged keeps its own vector, so the column is then its plain MiniLM cosine (which
  ``dense_score`` leaves NaN off the dense list). :data:`GAMMA` was chosen on dev in the ranker
  lab (docs/quality.md): the largest pull tried moved the most, on its own and through the
  ranker; a judged document then points mostly at what its judging queries share, which is what
  the citation-built relevance of NFCorpus rewards.

A voting query scored while the ranker learns leaves itself out exactly: its words leave the
fields of the documents it judged (the number of fields, their average length and each term's
document frequency are those of the fields without it), and its vector leaves the sums of the
documents it judged (a document it alone judged falls back to its own vector). So nothing a query
judged reaches its own features. Both views are products over what the index already stores (the
judgements, the voting queries' analyzed texts and vectors, the documents' vectors), so an index
version holds nothing new for them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from services.retrieval.encoders.sparse import Bm25Params
from services.retrieval.query.bm25_table import SHORT_TEXTS
from services.retrieval.query.judgements import Csr, Judgements, Located


class JudgedBy:
    """Term counts of every document's judged-by field, and BM25 over them."""

    def __init__(
        self,
        terms: Mapping[str, Sequence[str]],
        judgements: Judgements,
        params: Bm25Params = SHORT_TEXTS,
    ) -> None:
        """Fields from ``terms`` (voting query id -> analyzed text) through ``judgements``."""
        self._params = params
        self._judgements = judgements
        order = judgements.queries
        self._vocabulary: dict[str, int] = {}
        rows, cols, counts = [], [], []
        for row, query in enumerate(order):
            for term, tf in sorted(Counter(terms.get(query, ())).items()):
                rows.append(row)
                cols.append(self._vocabulary.setdefault(term, len(self._vocabulary)))
                counts.append(float(tf))
        shape = (len(order), len(self._vocabulary))
        self._query_tf = Csr.from_entries(rows, cols, counts, shape)
        self._query_length = self._query_tf.row_sums()
        # Terms x documents: a query reads the few rows of its own terms. A field holds each
        # judging query's words once, whatever the grade.
        self._term_docs = _fields_by_term(judgements.binary, self._query_tf)
        self._doc_length = self._term_docs.transposed().row_sums()
        self._fields = int(np.count_nonzero(self._doc_length))
        self._total_length = float(self._doc_length.sum())
        self._df = np.diff(self._term_docs.indptr).astype(np.float64)

    def scores(
        self,
        query_terms: Sequence[str],
        doc_ids: Sequence[str] | Located,
        exclude_query: str | None = None,
    ) -> npt.NDArray[np.float64]:
        """BM25 of ``query_terms`` over the fields of ``doc_ids`` (0 for a document without one).

        ``exclude_query`` (a voting query itself, in training) is left out of every field.
        """
        out = np.zeros(len(doc_ids))
        cols = sorted({self._vocabulary[t] for t in query_terms if t in self._vocabulary})
        if not cols or not len(doc_ids):
            return out
        located = Located.of(self._judgements.doc_index, doc_ids)
        at, known = located.at, located.known
        columns = self._term_counts(cols)
        tf = columns[at]
        length = self._doc_length[at].copy()
        df, fields, total = self._df[cols].copy(), self._fields, self._total_length
        own = self._judgements.query_index.get(exclude_query) if exclude_query else None
        if own is not None:
            judged, _ = self._judgements.row(self._judgements.queries[own])
            own_terms = self._query_tf.take_rows([own])
            counts = dict(zip(own_terms.indices.tolist(), own_terms.data.tolist(), strict=True))
            own_tf = np.array([counts.get(c, 0.0) for c in cols])
            own_length = float(self._query_length[own])
            before = columns[judged]
            df -= ((before > 0) & (before - own_tf == 0)).sum(axis=0)
            fields -= int(np.count_nonzero(self._doc_length[judged] == own_length))
            total -= own_length * len(judged)
            mine = np.isin(at, judged) & known
            tf[mine] -= own_tf
            length[mine] -= own_length
        k1, b = self._params.k1, self._params.b
        average = total / fields if fields > 0 and total > 0 else 1.0
        idf = np.log(1 + (max(fields, 0) - df + 0.5) / (df + 0.5))
        norm = k1 * (1 - b + b * length / average)
        weights = tf * (k1 + 1) / (tf + norm[:, None])
        for j in range(len(cols)):  # one summation order (sorted term ids), whatever the platform
            out += weights[:, j] * idf[j]
        return np.where(known, out, 0.0)

    def _term_counts(self, cols: Sequence[int]) -> npt.NDArray[np.float64]:
        """Every document's counts of terms ``cols`` (documents x terms), read term by term."""
        m = self._term_docs
        out = np.zeros((m.shape[1], len(cols)))
        for k, j in enumerate(cols):
            start, end = m.indptr[j], m.indptr[j + 1]
            out[m.indices[start:end], k] = m.data[start:end]
        return out


def _fields_by_term(judged: Csr, query_tf: Csr) -> Csr:
    """Terms x documents: each term's count in each document's field.

    ``judged`` is queries x documents (one entry per judgement), ``query_tf`` queries x terms.
    Counts are whole numbers: they add up exactly in any order.
    """
    terms = query_tf.take_rows(judged.entry_rows)  # each judgement's query's terms, in turn
    docs = np.repeat(judged.indices, np.diff(terms.indptr))
    shape = (query_tf.shape[1], judged.shape[1])
    return Csr.from_entries(terms.indices, docs, terms.data, shape)


#: How far a judged document moves toward its judging queries (their unit mean direction).
GAMMA = 1.5

Vector = npt.NDArray[np.float32]


def unit(m: npt.NDArray[np.floating[Any]]) -> npt.NDArray[np.float32]:
    """Each row scaled to length 1 (a zero row stays zero)."""
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    return np.asarray(m / np.where(norms > 0, norms, 1.0), dtype=np.float32)


class NudgedDocs:
    """Every document's vector and the sum of its judging queries' vectors."""

    def __init__(
        self,
        doc_vectors: Mapping[str, npt.ArrayLike],
        query_vectors: Mapping[str, npt.ArrayLike],
        judgements: Judgements,
        gamma: float = GAMMA,
        leave_one_out: bool = False,
    ) -> None:
        """Index the vectors over ``judgements``' documents and voting queries.

        A document or voting query without a vector has none to give: a zero row (a document
        without one gets NaN, as for any list it is missing from). Only ``leave_one_out``
        keeps the plain vectors that leaving a voting query out needs (a serving process never
        reads them, so it does not hold them).
        """
        self._gamma = gamma
        self._judgements = judgements
        dim = np.asarray(next(iter(doc_vectors.values()))).size if doc_vectors else 0
        self._has_vector = np.array([d in doc_vectors for d in judgements.doc_ids], dtype=bool)
        docs = unit(self._stack(doc_vectors, judgements.doc_ids, dim))
        queries = unit(self._stack(query_vectors, judgements.queries, dim))
        # Each judging query counts once, whatever its grade.
        self._judges = judgements.binary.column_counts()
        sums = np.asarray(judgements.binary_by_doc.dot(queries), dtype=np.float32)
        # What a served query reads: every document nudged once, here, not per request. The
        # sums are not kept (a matrix the size of the documents'): training recomputes the few
        # rows it needs.
        self._nudged = self._nudge(docs, sums, self._judges)
        self._plain = (docs, queries) if leave_one_out else None

    def _nudge(self, docs: Vector, sums: Vector, judges: npt.NDArray[np.int64]) -> Vector:
        # Without a judge, the pull is nothing (not the rounding residue of a subtraction).
        pull = np.where((judges > 0)[:, None], unit(sums), 0.0)
        return unit(docs + self._gamma * pull)

    @staticmethod
    def _stack(vectors: Mapping[str, npt.ArrayLike], ids: Sequence[str], dim: int) -> Vector:
        out = np.zeros((len(ids), dim), dtype=np.float32)
        for i, key in enumerate(ids):
            vector = vectors.get(key)
            if vector is not None:
                out[i] = vector
        return out

    def cosines(
        self,
        query: Sequence[float],
        doc_ids: Sequence[str] | Located,
        exclude_query: str | None = None,
    ) -> npt.NDArray[np.float64]:
        """The cosine of ``query`` to each of ``doc_ids``' nudged vectors (NaN without a vector).

        ``exclude_query`` (a voting query itself, in training) is left out of every sum; that
        needs a table built with ``leave_one_out``.
        """
        if not len(doc_ids) or not self._nudged.shape[1]:
            return np.full(len(doc_ids), np.nan)
        located = Located.of(self._judgements.doc_index, doc_ids)
        at, known = located.at, located.known
        own = self._judgements.query_index.get(exclude_query) if exclude_query else None
        if own is None:
            nudged = self._nudged[at]
        elif self._plain is None:
            raise ValueError(
                f"cannot leave {exclude_query} out: this table was built without leave_one_out"
            )
        else:
            docs, queries = self._plain
            judged, _ = self._judgements.row(self._judgements.queries[own])
            mine = np.isin(at, judged) & known
            by_doc = self._judgements.binary_by_doc  # a few rows of it
            sums = np.asarray(by_doc.take_rows(at).dot(queries), dtype=np.float32)
            sums[mine] -= queries[own]
            nudged = self._nudge(docs[at], sums, self._judges[at] - mine)
        cos = nudged.astype(np.float64) @ unit(np.asarray(query, dtype=np.float32))
        return np.where(known & self._has_vector[at], cos, np.nan)
