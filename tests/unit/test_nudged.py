"""Nudged documents: NUDGE's closed form, and leave-one-out equal to rebuilding without the query."""

from __future__ import annotations

import math

import numpy as np
import pytest

from services.retrieval.query.judged_by import NudgedDocs
from services.retrieval.query.judgements import Judgements

RNG = np.random.default_rng(7)
DOCS = ["D1", "D2", "D3", "D4"]
DOC_VECTORS = {d: RNG.normal(size=4).tolist() for d in DOCS[:3]}  # D4 has no vector
QUERY_VECTORS = {q: RNG.normal(size=4).tolist() for q in ("q1", "q2", "q3")}
# D1 judged by q1 and q2, D2 by q1 only (grade 2 counts once), D3 by nobody (q3 gave it 0).
QRELS = {"q1": {"D1": 1, "D2": 2}, "q2": {"D1": 1}, "q3": {"D3": 0}}


def _unit(v: np.ndarray) -> np.ndarray:
    return np.asarray(v / np.linalg.norm(v))


def _by_the_book(query: np.ndarray, doc: str, judges: list[str], gamma: float) -> float:
    d = _unit(np.array(DOC_VECTORS[doc]))
    if judges:
        pull = _unit(np.sum([_unit(np.array(QUERY_VECTORS[q])) for q in judges], axis=0))
        d = _unit(d + gamma * pull)
    return float(d @ _unit(query))


@pytest.mark.parametrize("gamma", [0.8, 1.5])
def test_cosines_follow_nudges_closed_form(gamma: float) -> None:
    table = NudgedDocs(DOC_VECTORS, QUERY_VECTORS, Judgements(QRELS, DOCS), gamma)
    query = RNG.normal(size=4)
    got = table.cosines(query.tolist(), ["D2", "D1", "D3", "D4", "MED-404"])
    want = [
        _by_the_book(query, "D2", ["q1"], gamma),
        _by_the_book(query, "D1", ["q1", "q2"], gamma),
        _by_the_book(query, "D3", [], gamma),  # nobody judged it: its own cosine
    ]
    assert got[:3] == pytest.approx(want, rel=1e-5)
    assert math.isnan(got[3]) and math.isnan(got[4])  # no vector, not in the corpus


def test_a_voting_query_leaves_itself_out_exactly() -> None:
    table = NudgedDocs(DOC_VECTORS, QUERY_VECTORS, Judgements(QRELS, DOCS), leave_one_out=True)
    without_q1 = {q: j for q, j in QRELS.items() if q != "q1"}
    rebuilt = NudgedDocs(DOC_VECTORS, QUERY_VECTORS, Judgements(without_q1, DOCS))
    query = RNG.normal(size=4).tolist()
    left_out = table.cosines(query, DOCS[:3], exclude_query="q1")
    assert left_out == pytest.approx(rebuilt.cosines(query, DOCS[:3]), rel=1e-6)
    # D2's only judge left: back to its plain cosine, not a rounding residue's direction.
    assert left_out[1] == pytest.approx(_by_the_book(np.array(query), "D2", [], 1.5), rel=1e-6)
    # An unknown query to leave out changes nothing.
    assert table.cosines(query, DOCS[:3], "q9") == pytest.approx(table.cosines(query, DOCS[:3]))


def test_no_candidates_or_no_vectors_give_nan_not_errors() -> None:
    assert NudgedDocs(DOC_VECTORS, QUERY_VECTORS, Judgements(QRELS, DOCS)).cosines(
        [1.0, 0, 0, 0], []
    ).shape == (0,)
    empty = NudgedDocs({}, {}, Judgements(QRELS, DOCS))
    assert np.isnan(empty.cosines([1.0, 0, 0, 0], ["D1"])).all()


def test_a_serving_table_scores_alike_but_cannot_leave_a_query_out() -> None:
    judgements = Judgements(QRELS, DOCS)
    served = NudgedDocs(DOC_VECTORS, QUERY_VECTORS, judgements)
    training = NudgedDocs(DOC_VECTORS, QUERY_VECTORS, judgements, leave_one_out=True)
    query = RNG.normal(size=4).tolist()
    assert served.cosines(query, DOCS[:3]).tolist() == training.cosines(query, DOCS[:3]).tolist()
    with pytest.raises(ValueError, match="cannot leave q1 out"):
        served.cosines(query, DOCS[:3], exclude_query="q1")
