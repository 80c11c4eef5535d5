import math
from collections import Counter

import pytest

from services.retrieval.encoders.sparse import Bm25Params, encode_documents, query_vector
from services.retrieval.query.feedback import expand
from services.retrieval.query.fusion import fuse, normalize
from services.retrieval.settings import FeedbackSettings
from services.retrieval.text import analyze, term_index
from services.retrieval.types import SparseVector


def test_analyzer_lowercases_drops_stopwords_and_stems() -> None:
    assert analyze("The Effects of Vitamins on Running") == ["effect", "vitamin", "run"]
    assert analyze("omega-3 fatty_acids") == ["omega", "3", "fatti", "acid"]
    assert analyze("the and of") == []


def test_query_vector_counts_terms() -> None:
    v = query_vector(analyze("cancer risk and cancer"))
    weights = dict(zip(v.indices, v.values, strict=True))
    assert weights == {term_index("cancer"): 2.0, term_index("risk"): 1.0}
    assert query_vector(analyze("the of")).indices == []


def test_document_weights_are_bm25() -> None:
    texts = ["apple banana apple", "banana cherry", "cherry cherry cherry date"]
    params = Bm25Params(k1=1.2, b=0.75)
    vectors = encode_documents(texts, params)
    bags = [Counter(analyze(t)) for t in texts]
    avgdl = sum(sum(b.values()) for b in bags) / 3
    df = Counter(term for bag in bags for term in bag)

    def bm25(doc: int, query: str) -> float:
        score = 0.0
        for term in analyze(query):
            tf = bags[doc][term]
            if tf:
                idf = math.log(1 + (3 - df[term] + 0.5) / (df[term] + 0.5))
                dl = sum(bags[doc].values())
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))
        return score

    for doc, vector in enumerate(vectors):
        q = query_vector(analyze("apple cherry banana"))
        doc_weights = dict(zip(vector.indices, vector.values, strict=True))
        dot = sum(w * doc_weights.get(i, 0.0) for i, w in zip(q.indices, q.values, strict=True))
        assert dot == pytest.approx(bm25(doc, "apple cherry banana"))


def test_fusion_normalizes_and_floors_missing() -> None:
    assert normalize({"a": 1.0, "b": 3.0}, "minmax") == {"a": 0.0, "b": 1.0}
    z = normalize({"a": 1.0, "b": 3.0}, "zscore")
    assert z["a"] == pytest.approx(-1.0) and z["b"] == pytest.approx(1.0)
    ranked = fuse([{"a": 10.0, "b": 5.0}, {"c": 2.0, "a": 1.0}], [0.5, 0.5], "minmax")
    # a: 0.5*1 + 0.5*0 ; b: 0.5*0 + 0.5*floor(0) ; c: 0.5*floor(0) + 0.5*1
    assert ranked == [("a", 0.5), ("c", 0.5), ("b", 0.0)]
    with pytest.raises(ValueError):
        fuse([{"a": 1.0}], [0.5, 0.5], "zscore")


def test_feedback_mixes_original_and_expansion_terms() -> None:
    query = SparseVector([1, 2], [1.0, 1.0])
    docs = [(2.0, SparseVector([1, 3], [1.0, 3.0])), (1.0, SparseVector([3, 4], [1.0, 1.0]))]
    expanded = expand(query, docs, FeedbackSettings(docs=2, terms=2, weight=0.5))
    weights = dict(zip(expanded.indices, expanded.values, strict=True))
    assert sum(weights.values()) == pytest.approx(1.0)
    assert set(weights) == {1, 2, 3}  # term 4 is not among the two best
    assert weights[3] > weights[2]  # strongly supported by the best feedback document
    assert expand(query, [], FeedbackSettings()) == query
