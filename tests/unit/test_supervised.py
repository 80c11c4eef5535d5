import math

import numpy as np
import pytest

from services.retrieval.indexing import training
from services.retrieval.query.bm25_table import FieldStats
from services.retrieval.query.candidates import Candidates, candidates
from services.retrieval.query.corelevance import CoRelevance, CoScores, anchors
from services.retrieval.query.documents import DocRecord, JudgedDocs, Outsiders, RecordCache
from services.retrieval.query.evidence import Depths, Evidence, RankedDocs, gather
from services.retrieval.query.features import FEATURES, DocTable, QuerySide, build_features
from services.retrieval.query.judgements import Judgements, Located
from services.retrieval.query.ranker import Ranker
from services.retrieval.query.votes import LexicalColumns, VoteTable
from services.retrieval.settings import FeedbackSettings, KnnSettings
from services.retrieval.store.base import StoreError
from services.retrieval.types import (
    DocInfo,
    EncodedQuery,
    Hit,
    Scored,
    SparseVector,
    VectorQuery,
)


def _ranked(judgements: Judgements, *scored: tuple[str, float]) -> RankedDocs:
    """A retriever's list as the store numbers it (a corpus of ``judgements``' documents alone)."""
    points = [judgements.doc_index[d] for d, _ in scored]
    return RankedDocs(np.array(points, dtype=np.int64), np.array([s for _, s in scored]))


def _judged(judgements: Judgements) -> JudgedDocs:
    """``judgements``' documents as a version holds them, numbered by column."""
    hits = [
        Hit(i, 0.0, {"doc_id": d, "title": f"{d}.", "ordinal": i})
        for i, d in enumerate(judgements.doc_ids)
    ]
    return JudgedDocs(hits)


def _candidates(judgements: Judgements, doc_ids: list[str]) -> Candidates:
    judged = _judged(judgements)
    points = np.array([judgements.doc_index[d] for d in doc_ids], dtype=np.int64)
    return Candidates(points, judged.locate(points), judged)


QRELS = {"Q-self": {"A": 1, "B": 1}, "Q1": {"A": 2, "C": 1}, "Q2": {"C": 1}}
JUDGEMENTS = Judgements(QRELS, ["A", "B", "C", "D", "E"])
NEIGHBOURS = [("Q-self", 1.0), ("Q1", 0.8), ("Q2", 0.5)]
NO_CO = CoRelevance(Judgements({}, ["A", "B"])).scores({})
_TWO = np.arange(2, dtype=np.int64)


def tally_votes(
    neighbours: list[tuple[str, float]],
    judgements: Judgements,
    k: int,
    power: float,
    exclude_query: str | None = None,
) -> VoteTable:
    return VoteTable(judgements, neighbours, k, power, exclude_query)


def test_votes_weight_similarity_and_leave_one_out() -> None:
    votes = tally_votes(NEIGHBOURS, JUDGEMENTS, k=2, power=2.0, exclude_query="Q-self")
    # Q-self is skipped, so Q1 and Q2 are the two nearest.
    assert votes.ranked == ["A", "C"] and votes.get("B") is None
    a, c = votes.get("A"), votes.get("C")
    assert a is not None and c is not None
    assert a.score == pytest.approx(0.8**2 * 2) and a.rank == 1
    assert c.score == pytest.approx(0.8**2 + 0.5**2) and c.rank == 2
    assert c.voters == 2 and c.nearest_rank == 1
    assert a.max_grade == 2 and a.best_similarity == pytest.approx(0.8)
    assert votes.top_score == pytest.approx(a.score) and votes.nearest_similarity == pytest.approx(
        0.8
    )
    with_self = tally_votes(NEIGHBOURS, JUDGEMENTS, k=2, power=2.0)
    b = with_self.get("B")
    assert b is not None and b.score == pytest.approx(1.0)
    ties = tally_votes([("Q2", 0.5), ("Q-self", 0.5)], JUDGEMENTS, k=2, power=1.0)
    assert ties.ranked == ["A", "B", "C"]  # equal scores: doc id order


def test_candidates_union_lists_and_known_voted_documents() -> None:
    corpus = Judgements(QRELS, ["A", "B", "D", "E"])  # C has left the corpus
    evidence = Evidence(
        _ranked(corpus, ("A", 0.9)),
        _ranked(corpus, ("D", 3.0)),
        _ranked(corpus, ("D", 4.0), ("E", 1.0)),
        NEIGHBOURS,
    )
    judged = _judged(corpus)
    knn = KnnSettings(neighbours=3, power=1.0, vote_depth=10)
    points, votes = candidates(evidence, corpus, judged, knn)
    cands = Candidates(points, judged.locate(points), judged)
    assert cands.doc_ids == ["A", "D", "E", "B"]
    assert cands.located.at.tolist() == [0, 2, 3, 1] and cands.located.known.all()
    assert cands.names([3]) == [("B", "B.")]
    assert votes.get("C") is None


def test_feature_rows_mark_missing_lists_and_remove_own_judgements() -> None:
    evidence = Evidence(
        _ranked(JUDGEMENTS, ("A", 0.9), ("B", 0.7)),
        _ranked(JUDGEMENTS, ("B", 3.0)),
        _ranked(JUDGEMENTS, ("B", 4.0)),
        NEIGHBOURS,
    )
    votes = tally_votes(NEIGHBOURS, JUDGEMENTS, 3, 1.0, exclude_query="Q-self")
    info = {"A": DocInfo(("vitamin",), 3, 20), "B": DocInfo((), 1)}
    lexical = LexicalColumns(np.array([0.5, 0.0]), np.array([2.0, 0.0]), 7.5)
    rows = build_features(
        evidence,
        _candidates(JUDGEMENTS, ["A", "B"]),
        votes,
        DocTable(info),  # A and B first, as in JUDGEMENTS: the table reads by column
        QuerySide(
            "Vitamin D?", ["vitamin", "d"], lexical, np.array([1.25, 0.0]), np.array([0.5, np.nan])
        ),
        depth=100,
        co_relevance=NO_CO,
        own_judgements={"A": 1},
    )
    assert rows.shape == (2, len(FEATURES))
    f = {name: rows[:, i] for i, name in enumerate(FEATURES)}
    assert math.isnan(f["bm25_score"][0]) and f["bm25_rank"][0] == 101  # A is not in BM25's list
    assert f["bm25_score"][1] == pytest.approx(3.0) and f["dense_rank"][1] == 2
    assert f["prior"][0] == pytest.approx(math.log1p(2))  # 3 training votes, minus its own
    assert f["title_overlap"][0] == pytest.approx(0.5) and f["title_overlap"][1] == 0.0
    assert f["vote"][1] == 0.0 and f["voters"][0] == 1
    assert f["query_terms"][0] == 2 and f["query_chars"][1] == len("Vitamin D?")
    assert f["lex_vote"].tolist() == [0.5, 0.0] and f["lex_voters"].tolist() == [2.0, 0.0]
    assert f["lex_top_score"].tolist() == [7.5, 7.5]
    assert f["doc_length"][0] == pytest.approx(math.log1p(20)) and f["title_length"][0] == 1
    assert f["title_bm25"][0] > 0.0 and f["title_bm25"][1] == 0.0
    assert f["judged_bm25"].tolist() == [1.25, 0.0]
    assert f["nudged_cos"][0] == 0.5 and math.isnan(f["nudged_cos"][1])


def _grouped(seed: int, queries: int = 30, per_query: int = 12) -> training.Grouped:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(queries * per_query, len(FEATURES))).astype(np.float32)
    y = (x[:, 0] + 0.1 * rng.normal(size=len(x)) > 0.8).astype(np.float32)  # feature 0 decides
    return training.Grouped(x, y, [per_query] * queries)


def test_ranker_learns_is_reproducible_and_round_trips_through_text() -> None:
    first = training.train(_grouped(0), _grouped(1))
    second = training.train(_grouped(0), _grouped(1))
    probe = _grouped(2).features
    np.testing.assert_array_equal(first.score(probe), second.score(probe))
    order = np.argsort(-first.score(probe))
    assert probe[order[:20], 0].mean() > probe[:, 0].mean()  # it ranks by the informative feature
    assert len(first.meta["dev_lightgbm_ndcg@10"]) == len(training.SEEDS)
    assert all(0.0 < x <= 1.0 for x in first.meta["dev_lightgbm_ndcg@10"])
    restored = Ranker.from_text(first.to_text(), first.meta)
    np.testing.assert_allclose(restored.score(probe), first.score(probe))
    assert first.score(np.zeros((0, len(FEATURES)), dtype=np.float32)).shape == (0,)


def test_a_ranker_of_several_seeds_scores_the_sum_of_one_model_per_seed() -> None:
    probe = _grouped(2).features
    assert training.train(_grouped(0)).meta["seeds"] == list(training.SEEDS)  # served: one per seed
    several = (42, 43, 44)
    summed = training.train(_grouped(0), seeds=several)
    members = [training.train(_grouped(0), seeds=(seed,)) for seed in several]
    assert summed.meta["seeds"] == list(several)
    restored = Ranker.from_text(summed.to_text(), summed.meta)
    np.testing.assert_allclose(restored.score(probe), sum(m.score(probe) for m in members))
    assert not np.array_equal(members[0].score(probe), members[1].score(probe))


def test_a_model_for_other_features_is_refused() -> None:
    model = training.train(_grouped(0))
    text = model.to_text().replace("feature_names=dense_score", "feature_names=old_feature", 1)
    with pytest.raises(ValueError, match="features do not match"):
        Ranker.from_text(text, {})


def test_co_relevance_spreads_seed_weight_through_shared_judgements() -> None:
    judgements = {"Q1": {"A": 1, "B": 1}, "Q2": {"B": 1, "C": 1, "D": 1}, "Q3": {"E": 1}}
    co = CoRelevance(Judgements(judgements, ["A", "B", "C", "D", "E"]))
    scores = co.scores({0: 1.0})  # A
    w1 = 1 / math.log1p(2)
    assert scores.score("B") == pytest.approx(w1) and scores.score("A") == pytest.approx(w1)
    assert scores.score("C") == 0.0 and scores.score("unknown") == 0.0
    # Ranks among all documents: ordinal 5 is a sixth document, judged by no query.
    points = np.array([0, 4, 5], dtype=np.int64)  # A, E, the sixth
    located = Located(np.array([0, 4, 0]), np.array([True, True, False]))
    assert scores.columns(located, points)[1].tolist() == [1, 5, 6]
    via_b = co.scores({"B": 1.0})
    assert via_b.score("D") == pytest.approx(1 / math.log1p(3))
    # Leave-one-out: a training query's own judgements lend it nothing.
    assert co.scores({"A": 1.0}, exclude_query="Q1").score("B") == 0.0


def test_co_relevance_ranks_documents_among_the_whole_corpus_in_id_order() -> None:
    # Eight documents, of which ordinals 1, 4 and 6 are judged: a rank counts the other five too.
    values = np.array([0.5, 0.0, 0.5])
    judged = np.array([1, 4, 6], dtype=np.int64)
    index = {"P1": 0, "P4": 1, "P6": 2}
    every = np.zeros(8)
    every[judged] = values
    expected = np.empty(8, dtype=np.int64)
    expected[np.argsort(-every, kind="stable")] = np.arange(1, 9)
    points = np.arange(8, dtype=np.int64)
    at = np.searchsorted(judged, points).clip(max=2)
    located = Located(at, judged[at] == points)
    ranks = CoScores(index, values, judged).columns(located, points)[1]
    assert ranks.tolist() == expected.tolist()


@pytest.mark.parametrize("size", [0, 1, 2, 7, 3633])
def test_co_relevance_ranks_are_a_stable_sort_s_highest_first_ties_in_position_order(
    size: int,
) -> None:
    rng = np.random.default_rng(size)
    # Long runs of ties, as the corpus has (zeros, documents judged by the same queries).
    values = rng.integers(0, 5, size) / 4.0
    values[rng.random(size) < 0.1] = -0.0  # equal to 0.0 for either sort
    expected = np.empty(size, dtype=np.int64)
    expected[np.argsort(-values, kind="stable")] = np.arange(1, size + 1)
    index = {f"D{i}": i for i in range(size)}
    points = np.arange(size, dtype=np.int64)
    located = Located.of(index, [f"D{i}" for i in range(size)])
    ranks = CoScores(index, values, points).columns(located, points)[1]
    assert ranks.tolist() == expected.tolist()


def test_anchors_fuse_rankings_by_reciprocal_rank() -> None:
    a, b, c, d = 0, 1, 20, 300  # ordinals (places in doc id order)
    best = anchors([np.array([a, b, c]), np.array([b, a, d])], n=3)
    # A and B tie (1/61 + 1/62): the lower ordinal first.
    assert list(best) == [a, b, c] and best[a] == 1.0 and best[b] == 0.5 and best[c] == 1 / 3
    assert anchors([np.array([d, c]), np.array([], dtype=np.int64)], n=5) == {d: 1.0, c: 0.5}
    assert anchors([]) == {}


def test_doc_table_reads_priors_and_title_overlap_by_index() -> None:
    info = {
        "A": DocInfo(("vitamin", "d"), 3, 40),
        "B": DocInfo(("d",), 0, 10),
        "C": DocInfo(("d", "d", "dose", "dose", "dose"), 0, 0),
    }
    table = DocTable(info)
    cols = table.columns(["B", "unknown", "A"], ["vitamin", "d", "d"], {"A": 2})
    assert cols.prior.tolist() == [0.0, 0.0, math.log1p(2)]  # A: 3 votes, one of them its own
    overlap = cols.title_overlap
    assert overlap[0] == 0.5 and math.isnan(overlap[1]) and overlap[2] == 1.0
    assert cols.doc_length[2] == pytest.approx(math.log1p(40)) and math.isnan(cols.doc_length[1])
    assert cols.title_length[2] == 2 and math.isnan(cols.title_length[1])
    # BM25 over titles: a rare term weighs more than a common one; a short title more than a
    # long one with the same match; the same terms give the same bits in any order.
    bm25 = table.columns(["A", "B", "C"], ["vitamin"]).title_bm25
    assert bm25[0] > 0.0 and bm25[1] == 0.0 and bm25[2] == 0.0
    d_only = table.columns(["A", "B", "C"], ["d"]).title_bm25
    assert d_only[1] > d_only[0] > 0.0 and bm25[0] > d_only[0]
    again = table.columns(["A"], ["d", "vitamin"]).title_bm25
    assert again.tobytes() == table.columns(["A"], ["vitamin", "d"]).title_bm25.tobytes()
    no_terms = table.columns(["A"], []).title_overlap
    assert math.isnan(no_terms[0])
    assert DocTable({}).columns(["A"], ["d"]).prior.tolist() == [0.0]


@pytest.mark.parametrize("query", [["vitamin", "d", "d"], ["dose"], [], ["absent"]])
def test_documents_read_at_the_candidates_get_the_bits_of_a_table_holding_them(
    query: list[str],
) -> None:
    info = {
        "A": DocInfo(("vitamin", "d"), 3, 40),
        "B": DocInfo(("d",), 0, 10),
        "C": DocInfo(("d", "d", "dose", "dose", "dose"), 1, 7),
    }
    titles = FieldStats.of(i.title_terms for i in info.values())
    whole = DocTable(info, titles).columns(["A", "B", "C"], query, {"C": 1})
    # A version holding A and B only, C read at the candidates (its point id 2).
    judgements = Judgements({}, ["A", "B"])
    judged = _judged(judgements)
    points = np.arange(3, dtype=np.int64)
    rows = np.array([2], dtype=np.intp)
    outsiders = Outsiders(rows, [DocRecord("C", "C.", info["C"], 2)], np.array([0.25]))
    cands = Candidates(points, judged.locate(points), judged, outsiders)
    assert cands.doc_ids == ["A", "B", "C"] and cands.names([2]) == [("C", "C.")]
    part = DocTable({d: info[d] for d in ("A", "B")}, titles).columns(cands, query, {"C": 1})
    for field in ("prior", "title_overlap", "doc_length", "title_length", "title_bm25"):
        assert getattr(part, field).tobytes() == getattr(whole, field).tobytes(), field


def test_vote_columns_match_single_votes() -> None:
    votes = tally_votes(NEIGHBOURS, JUDGEMENTS, k=3, power=2.0)
    columns = votes.columns(["C", "D", "unknown", "A"])
    assert columns.voted.tolist() == [True, False, False, True]
    for i, d in ((0, "C"), (3, "A")):
        vote = votes.get(d)
        assert vote is not None
        assert (columns.score[i], columns.rank[i], columns.voters[i]) == (
            vote.score,
            vote.rank,
            vote.voters,
        )
    assert votes.top(1) == votes.ranked[:1] and len(votes) == len(votes.ranked)


def test_overrides_change_the_model_and_extra_columns_train_under_their_names() -> None:
    probe = _grouped(2).features
    default = training.train(_grouped(0))
    reseeded = training.train(_grouped(0), overrides={"num_iterations": 20}, seeds=(7,))
    assert reseeded.meta["rounds"] == 20 and reseeded.meta["seeds"] == [7]
    assert not np.array_equal(default.score(probe), reseeded.score(probe))
    wide = _grouped(0)
    extra = np.hstack([wide.features, wide.features[:, :1]])
    names = (*FEATURES, "copy_of_dense_score")
    model = training.train(training.Grouped(extra, wide.labels, wide.groups), features=names)
    assert model.score(np.hstack([probe, probe[:, :1]])).shape == (len(probe),)
    with pytest.raises(ValueError, match="features do not match"):
        Ranker.from_text(model.to_text(), {})  # the served columns only


def test_a_document_listed_twice_keeps_its_first_place() -> None:
    listed = _ranked(JUDGEMENTS, ("B", 3.0), ("A", 2.0), ("B", 1.0))
    evidence = Evidence(listed, listed, listed, NEIGHBOURS)
    votes = tally_votes(NEIGHBOURS, JUDGEMENTS, 3, 1.0)
    lexical = LexicalColumns(np.zeros(2), np.zeros(2), 1.0)
    rows = build_features(
        evidence,
        _candidates(JUDGEMENTS, ["A", "B"]),
        votes,
        DocTable({"A": DocInfo((), 0), "B": DocInfo((), 0)}),
        QuerySide("q", ["q"], lexical, np.zeros(2), np.zeros(2)),
        depth=100,
        co_relevance=NO_CO,
    )
    f = {name: rows[:, i] for i, name in enumerate(FEATURES)}
    assert f["dense_rank"].tolist() == [2, 1] and f["dense_score"].tolist() == [2.0, 3.0]
    scores = np.array([3.0, 2.0, 1.0])  # z over the whole list, duplicates included
    z = (scores - scores.mean()) / scores.std()
    assert f["dense_z"].tolist() == pytest.approx([z[1], z[0]])


def test_judged_documents_locate_point_ids_and_leave_others_unknown() -> None:
    # Point ids follow the corpus's order, columns the doc ids' order.
    found = ((7, "A", 0), (2, "C", 5), (4, "B", 3))
    judged = JudgedDocs([Hit(p, 0.0, {"doc_id": d, "ordinal": o}) for p, d, o in found])
    assert judged.doc_ids == ["A", "B", "C"] and judged.points.tolist() == [7, 4, 2]
    assert judged.ordinals.tolist() == [0, 3, 5]
    located = judged.locate(np.array([7, 3, 2, 9, 4], dtype=np.int64))
    assert located.known.tolist() == [True, False, True, False, True]
    assert located.at[located.known].tolist() == [0, 2, 1]
    cands = Candidates(np.array([2, 7], dtype=np.int64), judged.locate(np.array([2, 7])), judged)
    assert cands.ordinals.tolist() == [5, 0] and cands.doc_ids == ["C", "A"]
    # By ordinal too (what co-relevance's anchors are known by): 4 and 6 are no judged one's.
    by_ordinal = judged.at_ordinals(np.array([5, 4, 0, 6, 3], dtype=np.int64))
    assert by_ordinal.known.tolist() == [True, False, True, False, True]
    assert by_ordinal.at[by_ordinal.known].tolist() == [2, 0, 1]


class _DenseOnly:
    """The one call gather makes without a lexical side or voters: dense."""

    def __init__(self, ids: list[int | str]) -> None:
        self.ids = ids

    def search(self, name: str, queries: list[VectorQuery]) -> list[Scored]:
        return [Scored(self.ids, [0.9, 0.8, 0.5, 0.4][: len(self.ids)])]


def test_gather_numbers_documents_by_point_id_and_refuses_uuid_ones() -> None:
    q = EncodedQuery([1.0], SparseVector([], []), "the", ())
    depths = Depths(4, FeedbackSettings(docs=0), 0)
    evidence = gather(_DenseOnly([3, 7, 0, 1]), "docs", None, q, depths, {})  # type: ignore[arg-type]
    assert evidence.dense.points.tolist() == [3, 7, 0, 1]
    assert evidence.dense.scores.tolist() == [0.9, 0.8, 0.5, 0.4]
    uuid = "6f1d3c2e-8a4b-4e1f-9c7d-2b5a0e9f4c31"
    with pytest.raises(StoreError, match="older index schema"):
        gather(_DenseOnly([0, uuid]), "docs", None, q, depths, {})  # type: ignore[arg-type]


def test_the_record_cache_holds_the_last_records_up_to_its_bound() -> None:
    cache = RecordCache(size=2)
    record = {p: DocRecord(f"D{p}", "", DocInfo((), 0), p) for p in range(3)}
    cache.put({0: record[0], 1: record[1]})
    assert cache.get([1, 0]) == [record[1], record[0]]  # 1, then 0, used last
    cache.put({2: record[2]})  # beyond the bound: the least recently used (1) goes
    assert cache.get([0, 1, 2]) == [record[0], None, record[2]]
