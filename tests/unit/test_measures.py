import random

import pytest
import pytrec_eval

from services.nfcorpus.measures import (
    mean_over_queries,
    ndcg_at_k,
    ndcg_at_k_retrieved_ideal,
    per_query,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)


def _random_case(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    rng = random.Random(seed)
    docs = [f"D{i}" for i in range(60)]
    qrels, run = {}, {}
    for q in range(25):
        judged = rng.sample(docs, rng.randint(1, 20))
        qrels[f"Q{q}"] = {d: rng.choice([1, 1, 2]) for d in judged}
        run[f"Q{q}"] = rng.sample(docs, rng.randint(0, 15))
    return qrels, run


@pytest.mark.parametrize("seed", range(5))
def test_matches_trec_eval(seed: int) -> None:
    qrels, run = _random_case(seed)
    # trec_eval ranks by score; give strictly decreasing scores to keep our order.
    scored = {q: {d: float(100 - i) for i, d in enumerate(docs)} for q, docs in run.items()}
    measures = {"ndcg_cut_5", "ndcg_cut_10", "recip_rank", "recall_10", "P_10"}
    reference = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(scored)
    for q, docs in run.items():
        ref = reference.get(q)
        if ref is None:  # trec_eval skips queries with an empty run
            assert docs == []
            continue
        assert ndcg_at_k(docs, qrels[q], 5) == pytest.approx(ref["ndcg_cut_5"])
        assert ndcg_at_k(docs, qrels[q], 10) == pytest.approx(ref["ndcg_cut_10"])
        assert reciprocal_rank(docs, qrels[q]) == pytest.approx(ref["recip_rank"])
        assert recall_at_k(docs, qrels[q], 10) == pytest.approx(ref["recall_10"])
        assert precision_at_k(docs, qrels[q], 10) == pytest.approx(ref["P_10"])


def test_ideal_uses_all_judged_documents() -> None:
    judged = {"a": 2, "b": 1, "c": 1}
    # Retrieving only 'b' is far from ideal under trec_eval, perfect under the AgentBeats variant.
    assert ndcg_at_k(["b"], judged, 5) < 0.5
    assert ndcg_at_k_retrieved_ideal(["b"], judged, 5) == 1.0
    assert ndcg_at_k(["a", "b", "c"], judged, 5) == pytest.approx(1.0)


def test_mean_counts_missing_queries_as_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    assert mean_over_queries({"q1": ["a"]}, qrels, "ndcg", 10) == pytest.approx(0.5)
    assert mean_over_queries({"q1": ["x", "a"]}, qrels, "mrr") == pytest.approx(0.25)


def test_unknown_metric_and_missing_cutoff_are_errors() -> None:
    with pytest.raises(ValueError, match="unknown metric"):
        per_query(["a"], {"a": 1}, "map", 10)
    with pytest.raises(ValueError, match="needs a cut-off"):
        per_query(["a"], {"a": 1}, "ndcg", None)
