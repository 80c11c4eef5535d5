import math

import numpy as np
import pytest

from services.retrieval.indexing import training
from services.retrieval.query.corelevance import CoRelevance, CoScores, anchors
from services.retrieval.query.evidence import Depths, Evidence, RankedDocs, gather, point_columns
from services.retrieval.query.features import (
    FEATURES,
    Candidates,
    DocTable,
    QuerySide,
    build_features,
    candidates,
)
from services.retrieval.query.judgements import Judgements, Located
from services.retrieval.query.ranker import Ranker
from services.retrieval.query.votes import LexicalColumns, VoteTable
from services.retrieval.settings import FeedbackSettings, KnnSettings
from services.retrieval.store.base import StoreError
from services.retrieval.types import (
    DocInfo,
    EncodedQuery,
    PointId,
    Scored,
    SparseVector,
    VectorQuery,
)


def _ranked(judgements: Judgements, *scored: tuple[str, float]) -> RankedDocs:
    """A retriever's list as the store's answer is numbered: by column in ``judgements``."""
    at = [judgements.doc_index[d] for d, _ in scored]
    return RankedDocs(np.array(at, dtype=np.int64), np.array([s for _, s in scored]))


QRELS = {"Q-self": {"A": 1, "B": 1}, "Q1": {"A": 2, "C": 1}, "Q2": {"C": 1}}
JUDGEMENTS = Judgements(QRELS, ["A", "B", "C", "D", "E"])
NEIGHBOURS = [("Q-self", 1.0), ("Q1", 0.8), ("Q2", 0.5)]
NO_CO = CoRelevance(Judgements({}, ["A", "B"])).scores({})


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
    cands, votes = candidates(evidence, corpus, KnnSettings(neighbours=3, power=1.0, vote_depth=10))
    assert cands.doc_ids == ["A", "D", "E", "B"]
    assert cands.located.at.tolist() == [0, 2, 3, 1] and cands.located.known.all()
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
        Candidates(Located.of(JUDGEMENTS.doc_index, ["A", "B"]), JUDGEMENTS.doc_ids),
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
    scores = co.scores({"A": 1.0})
    w1 = 1 / math.log1p(2)
    assert scores.score("B") == pytest.approx(w1) and scores.score("A") == pytest.approx(w1)
    assert scores.score("C") == 0.0 and scores.score("unknown") == 0.0
    assert scores.rank("A") in (1, 2) and scores.rank("E") > 2 and scores.rank("unknown") == 6
    via_b = co.scores({"B": 1.0})
    assert via_b.score("D") == pytest.approx(1 / math.log1p(3))
    # Leave-one-out: a training query's own judgements lend it nothing.
    assert co.scores({"A": 1.0}, exclude_query="Q1").score("B") == 0.0


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
    ranks = CoScores(index, values).columns([f"D{i}" for i in range(size)])[1]
    assert ranks.tolist() == expected.tolist()


def test_anchors_fuse_rankings_by_reciprocal_rank() -> None:
    a, b, c, d = 0, 1, 2, 3  # columns (in doc id order)
    best = anchors([np.array([a, b, c]), np.array([b, a, d])], n=3)
    # A and B tie (1/61 + 1/62): the lower column first.
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
        Candidates(Located.of(JUDGEMENTS.doc_index, ["A", "B"]), JUDGEMENTS.doc_ids),
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


def test_point_columns_map_numbered_documents_and_refuse_uuid_ones() -> None:
    names: dict[PointId, str] = {
        0: "C",
        3: "A",
        1: "Z",
    }  # a gap (2), and a document the matrix does not know
    table = point_columns(names, JUDGEMENTS.doc_index)
    assert table.tolist() == [2, -1, -1, 0]
    with pytest.raises(StoreError, match="older index schema"):
        point_columns({0: "A", "6f1d3c2e-8a4b-4e1f-9c7d-2b5a0e9f4c31": "B"}, JUDGEMENTS.doc_index)


def test_gather_numbers_documents_by_point_id_and_drops_unknown_ones() -> None:
    class TwoLists:
        """The two calls gather makes without a lexical side or voters: dense, nothing else."""

        def search(self, name: str, queries: list[VectorQuery]) -> list[Scored]:
            return [Scored([3, 7, 0, 1], [0.9, 0.8, 0.5, 0.4])]

    names: dict[PointId, str] = {
        0: "C",
        1: "Z",
        3: "A",
    }  # 7 is past the table, Z unknown to the matrix
    columns = point_columns(names, JUDGEMENTS.doc_index)
    q = EncodedQuery([1.0], SparseVector([], []), "the", ())
    depths = Depths(4, FeedbackSettings(docs=0), 0)
    evidence = gather(TwoLists(), "docs", None, q, depths, columns, {})  # type: ignore[arg-type]
    assert evidence.dense.at.tolist() == [0, 2]  # A, C
    assert evidence.dense.scores.tolist() == [0.9, 0.5]
