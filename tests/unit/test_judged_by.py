"""The judged-by field: BM25 over the words of each document's judging queries, leave-one-out exact."""

from __future__ import annotations

import math

import numpy as np
import pytest

from services.retrieval.query.judged_by import JudgedBy
from services.retrieval.query.judgements import Judgements

TERMS = {
    "q1": ["flaxse", "cancer", "breast"],
    "q2": ["flaxse", "lignan"],
    "q3": ["arsen", "rice", "rice"],
    "q4": ["breast", "cancer", "soy"],
}
QRELS = {"q1": {"D1": 1, "D2": 2}, "q2": {"D1": 1}, "q3": {"D3": 1}, "q4": {"D2": 1, "D4": 0}}
DOCS = ["D1", "D2", "D3", "D4", "D5"]


def _bm25(
    fields: dict[str, list[str]], query: list[str], doc: str, k1: float = 0.9, b: float = 0.4
) -> float:
    """BM25 by the book over ``fields`` (documents without a field do not count)."""
    present = {d: f for d, f in fields.items() if f}
    if doc not in present:
        return 0.0
    n = len(present)
    average = sum(len(f) for f in present.values()) / n
    score = 0.0
    for term in set(query):
        df = sum(term in f for f in present.values())
        tf = present[doc].count(term)
        if tf:
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(present[doc]) / average))
    return score


def _fields(qrels: dict[str, dict[str, int]]) -> dict[str, list[str]]:
    fields: dict[str, list[str]] = {d: [] for d in DOCS}
    for q, judged in qrels.items():
        for d, grade in judged.items():
            if grade > 0:
                fields[d] += TERMS[q]
    return fields


def test_scores_are_bm25_over_the_judging_queries_words() -> None:
    table = JudgedBy(TERMS, Judgements(QRELS, DOCS))
    query = ["flaxse", "cancer", "unknown"]
    got = table.scores(query, ["D2", "D1", "D5", "MED-404"])
    fields = _fields(QRELS)
    want = [_bm25(fields, query, d) for d in ("D2", "D1", "D5")] + [0.0]
    assert got == pytest.approx(want)
    assert got[0] > 0 and got[1] > 0  # both fields hold a query word; D5 has no field


@pytest.mark.parametrize("left_out", ["q1", "q2", "q3", "q4"])
def test_a_voting_query_left_out_scores_as_if_it_had_never_judged(left_out: str) -> None:
    # Exactly what rebuilding without the query gives, for every document and every query word.
    table = JudgedBy(TERMS, Judgements(QRELS, DOCS))
    others = {q: j for q, j in QRELS.items() if q != left_out}
    rebuilt = JudgedBy(TERMS, Judgements(others, DOCS))
    query = TERMS[left_out] + ["breast"]
    got = table.scores(query, DOCS, exclude_query=left_out)
    assert got == pytest.approx(rebuilt.scores(query, DOCS))
    assert got == pytest.approx([_bm25(_fields(others), query, d) for d in DOCS])


def test_no_query_word_in_any_field_scores_zero() -> None:
    table = JudgedBy(TERMS, Judgements(QRELS, DOCS))
    assert np.array_equal(table.scores(["tofu"], DOCS), np.zeros(len(DOCS)))
    assert len(table.scores(["cancer"], [])) == 0
