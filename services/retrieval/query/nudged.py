"""Documents nudged toward the queries that judged them: the judged-by field's dense view.

NUDGE (Zeighami et al., ICLR 2025) moves each document's embedding toward the training queries
that judged it relevant, in closed form and without touching the model:
``d' = unit(d + gamma * unit(sum of its judging queries' vectors))``. The ranker gets the
query's cosine to every candidate's nudged vector (``nudged_cos``); a document nobody judged
keeps its own vector, so the column is then its plain MiniLM cosine (which ``dense_score``
leaves NaN off the dense list).

:data:`GAMMA` was chosen on dev in the ranker lab (docs/quality.md, round 4): of 0.4, 0.8 and
1.5, the largest moved the most on its own and through the ranker. A judged document then
points mostly at what its judging queries share, which is what the citation-built relevance of
NFCorpus rewards.

A voting query scored while the ranker learns leaves itself out exactly: its vector leaves the
sums of the documents it judged, and a document it alone judged falls back to its own vector. The
vectors are the ones the index already stores (the documents' and the kNN collection's), so an
index version holds nothing new for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from services.retrieval.query.judgements import Judgements, positions

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
        keeps the plain vectors that leaving a voting query out needs (about 10 MB, which a
        serving process never reads).
        """
        self._gamma = gamma
        self._judgements = judgements
        dim = np.asarray(next(iter(doc_vectors.values()))).size if doc_vectors else 0
        self._has_vector = np.array([d in doc_vectors for d in judgements.docs], dtype=bool)
        docs = unit(self._stack(doc_vectors, judgements.docs, dim))
        queries = unit(self._stack(query_vectors, judgements.queries, dim))
        # Each judging query counts once, whatever its grade.
        self._judges = np.asarray(judgements.binary.sum(axis=0), dtype=np.int64).ravel()
        sums = np.asarray(judgements.binary_by_doc @ queries, dtype=np.float32)
        # What a served query reads: every document nudged once, here, not per request. The
        # sums are not kept (5.6 MB): training recomputes the few rows it needs.
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
        self, query: Sequence[float], doc_ids: Sequence[str], exclude_query: str | None = None
    ) -> npt.NDArray[np.float64]:
        """The cosine of ``query`` to each of ``doc_ids``' nudged vectors (NaN without a vector).

        ``exclude_query`` (a voting query itself, in training) is left out of every sum; that
        needs a table built with ``leave_one_out``.
        """
        if not len(doc_ids) or not self._nudged.shape[1]:
            return np.full(len(doc_ids), np.nan)
        at, known = positions(self._judgements.doc_index, doc_ids)
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
            sums = np.asarray(by_doc[at] @ queries, dtype=np.float32)
            sums[mine] -= queries[own]
            nudged = self._nudge(docs[at], sums, self._judges[at] - mine)
        cos = nudged.astype(np.float64) @ unit(np.asarray(query, dtype=np.float32))
        return np.where(known & self._has_vector[at], cos, np.nan)
