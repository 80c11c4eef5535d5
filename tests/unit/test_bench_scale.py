"""The scale benchmark's distractors, composition and judged-only measure, without a model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from devtools.bench.scale.corpus import (
    ID_PATTERN,
    Params,
    Pool,
    distractor_documents,
    is_distractor,
    recipes,
    sentences,
    write_folder,
)
from devtools.bench.scale.quality import condensed
from devtools.bench.scale.vectors import compose, used_parts
from services.nfcorpus.dataset import DEFAULT_DATA_DIR, Document, corpus_fingerprint, load_corpus

DOCS = [
    Document("MED-1", "Fish oil and the heart", "Omega-3 fats lower triglycerides in adults. "
             "They were given daily for a year. Results were mixed across the trials."),
    Document("MED-2", "Soy and bone density", "Isoflavones did not change bone loss at all. "
             "Women took soy protein for two years. The effect on the hip was small."),
]  # fmt: skip


def test_sentences_split_at_stops_and_drop_fragments() -> None:
    assert sentences("Results: Big effect here now. Ok. Then more words came after.") == [
        "Results: Big effect here now.",
        "Then more words came after.",
    ]


def test_the_draw_is_seeded_and_a_smaller_size_is_a_prefix_of_a_larger() -> None:
    pool = Pool.of(DOCS)
    small, large = recipes(pool, 5, 7, (1, 3)), recipes(pool, 20, 7, (1, 3))
    assert large[:5] == small and recipes(pool, 20, 7, (1, 3)) == large
    assert recipes(pool, 20, 8, (1, 3)) != large
    for r in large:
        assert pool.texts[r.title] in {d.title for d in DOCS} | set(pool.texts)
        assert 1 <= len(r.body) <= 3 and all(i in pool.sentences for i in r.body)


def test_distractor_ids_cannot_collide_with_nfcorpus_ids() -> None:
    pool = Pool.of(DOCS)
    docs = list(distractor_documents(pool, recipes(pool, 12, 1, (2, 2))))
    assert [d.doc_id for d in docs][:2] == ["DIST-0000001", "DIST-0000002"]
    assert all(ID_PATTERN.fullmatch(d.doc_id) and is_distractor(d.doc_id) for d in docs)
    assert not any(is_distractor(d.doc_id) for d in load_corpus(DEFAULT_DATA_DIR, limit=50))


def test_the_folder_is_written_whole_then_reused(tmp_path: Path) -> None:
    pool = Pool.of(DOCS)
    drawn = recipes(pool, 3, 1, (1, 2))
    params = Params(2, 3, 1, 1, 2, corpus_fingerprint(DOCS))
    target = tmp_path / "n5" / "data"
    folder = write_folder(target, DEFAULT_DATA_DIR, DOCS, pool, drawn, params)
    written = load_corpus(target)
    assert [d.doc_id for d in written[:2]] == ["MED-1", "MED-2"] and len(written) == 5
    assert folder.fingerprint == corpus_fingerprint(written) and folder.documents == 5
    assert (target / "qrels" / "test.tsv").is_symlink()
    assert [p.name for p in target.parent.iterdir()] == ["data"]  # no staging folder left
    manifest = json.loads((target / "manifest.json").read_text())
    (target / "corpus.jsonl").write_text("")  # a reuse must not rewrite it
    assert write_folder(target, DEFAULT_DATA_DIR, DOCS, pool, drawn, params) == folder
    assert (target / "corpus.jsonl").read_text() == ""
    other = Params(2, 3, 2, 1, 2, manifest["source_fingerprint"])  # another seed: rewritten
    write_folder(target, DEFAULT_DATA_DIR, DOCS, pool, recipes(pool, 3, 2, (1, 2)), other)
    assert len(load_corpus(target)) == 5


def test_a_composed_vector_is_the_normalised_word_weighted_mean_of_its_parts() -> None:
    pool = Pool.of(DOCS)
    drawn = recipes(pool, 4, 3, (1, 2))
    parts = used_parts(drawn)
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(parts), 8)).astype(np.float32)
    composed = compose(drawn, pool, parts, vectors)
    column = {p: j for j, p in enumerate(parts)}
    r = drawn[0]
    expected = sum(len(pool.texts[i].split()) * vectors[column[i]] for i in (r.title, *r.body))
    assert np.allclose(composed[0], expected / np.linalg.norm(expected), atol=1e-5)
    assert np.allclose(np.linalg.norm(composed, axis=1), 1.0, atol=1e-5)


def test_the_condensed_list_keeps_judged_documents_in_order() -> None:
    judged = frozenset({"MED-1", "MED-3"})
    assert condensed(["DIST-0000001", "MED-3", "MED-2", "MED-1"], judged) == ["MED-3", "MED-1"]
