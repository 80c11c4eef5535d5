"""The streaming build's parts: the first pass's statistics, chunks, slices, byte-sized writes
and the chunks' checkpoints."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from services.nfcorpus.dataset import Document
from services.retrieval.encoders.dense import Matrix
from services.retrieval.encoders.sparse import Bm25Params, encode_documents
from services.retrieval.indexing.chunks import Checkpoints, Chunk, Slice, chunked
from services.retrieval.indexing.points import by_bytes, document_points, point_bytes
from services.retrieval.indexing.scan import ordinals, scan_corpus
from services.retrieval.query.bm25_table import FieldStats
from services.retrieval.text import analyze, document_text
from services.retrieval.types import Point

CORPUS = [
    Document("MED-10", "Vitamin D and bone", "Vitamin D supplements and bone density in adults."),
    Document("MED-1", "Statins", "Statins lower cholesterol; cholesterol and the heart."),
    Document("MED-2", "", "A document without a title about fibre."),
    Document("MED-100", "Fibre and the gut", "Dietary fibre feeds gut bacteria."),
    Document("MED-3", "Vitamin D", "Sunlight and vitamin D."),
]


class CountingEncoder:
    """A deterministic stand-in for the model that counts the texts it encodes."""

    model_id = "counting"
    dimension = 4

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, texts: list[str], batch_size: int = 32) -> Matrix:
        self.encoded.extend(texts)
        rows = [[len(t), t.count(" "), t.count("e"), 1.0] for t in texts]
        return np.array(rows, dtype=np.float32)


def test_documents_ordinals_are_their_places_in_doc_id_order() -> None:
    ids = ["MED-10", "MED-1", "MED-2", "MED-100"]
    assert ordinals(ids).tolist() == [1, 0, 3, 2]  # MED-1 < MED-10 < MED-100 < MED-2
    assert ordinals([]).tolist() == []


def test_the_first_pass_gathers_what_the_whole_corpus_gives() -> None:
    scan = scan_corpus(iter(CORPUS), judged={"MED-2", "MED-404"})
    assert scan.documents == len(CORPUS)
    assert scan.titles == FieldStats.of(analyze(d.title) for d in CORPUS)
    assert scan.ordinals.tolist() == ordinals([d.doc_id for d in CORPUS]).tolist()
    assert scan.numbers == {"MED-2": 2}  # only judged documents the corpus holds
    # Written chunk by chunk, the BM25 vectors are those of the whole corpus encoded at once.
    whole = encode_documents([document_text(d) for d in CORPUS], Bm25Params())
    dense = np.zeros((2, 4), dtype=np.float32)
    written = [
        p
        for chunk in chunked(iter(CORPUS), 2)
        for p in document_points(chunk, dense[: len(chunk.documents)], scan, {}, Bm25Params())
    ]
    assert [p.id for p in written] == list(range(len(CORPUS)))
    assert [p.sparse for p in written] == whole
    assert [p.payload["ordinal"] for p in written] == scan.ordinals.tolist()


def test_chunks_cover_the_corpus_in_order_and_slices_deal_them_round_robin() -> None:
    chunks = list(chunked(iter(CORPUS), 2))
    assert [(c.number, c.start, len(c.documents)) for c in chunks] == [
        (0, 0, 2),
        (1, 2, 2),
        (2, 4, 1),
    ]
    assert [d for c in chunks for d in c.documents] == CORPUS
    slices = [Slice(i, 2) for i in range(2)]
    assert [[c.number for c in chunks if s.holds(c)] for s in slices] == [[0, 2], [1]]
    for bad in ((2, 2), (-1, 2), (0, 0)):
        with pytest.raises(ValueError, match="no slice"):
            Slice(*bad)
    with pytest.raises(ValueError, match="at least 1"):
        list(chunked(iter(CORPUS), 0))


def test_writes_are_cut_by_bytes_keeping_the_order() -> None:
    points = [Point(i, [0.0] * 4, payload={"t": "x" * (10 * i)}) for i in range(10)]
    limit = point_bytes(points[5]) * 2
    batches = list(by_bytes(points, limit))
    assert [p for b in batches for p in b] == points
    assert all(sum(point_bytes(p) for p in b) <= limit or len(b) == 1 for b in batches)
    assert len(batches) > 2
    assert list(by_bytes(points, 1)) == [[p] for p in points]  # a point above the limit goes alone
    assert list(by_bytes([], 100)) == []


def test_a_checkpoint_is_read_back_and_a_damaged_one_encoded_again(tmp_path: Path) -> None:
    encoder = CountingEncoder()
    kept = Checkpoints(tmp_path, encoder, 32)  # type: ignore[arg-type]
    chunk = Chunk(0, 0, CORPUS[:3])
    first = kept.vectors(chunk)
    assert len(encoder.encoded) == 3
    assert np.array_equal(kept.vectors(chunk), first) and len(encoder.encoded) == 3
    assert [p.name for p in tmp_path.iterdir()] == [kept.path(chunk).name]  # no temporary left
    # The key is the chunk's content: another chunk (or another model) has its own file.
    assert kept.path(Chunk(0, 0, CORPUS[1:4])) != kept.path(chunk)
    kept.path(chunk).write_bytes(b"cut short")
    assert np.array_equal(kept.vectors(chunk), first) and len(encoder.encoded) == 6
    np.save(kept.path(chunk), np.zeros((2, 4), dtype=np.float32))  # another shape
    assert kept.load(chunk) is None


def test_the_sparse_statistics_are_those_of_the_words_counted() -> None:
    scan = scan_corpus(iter(CORPUS))
    bags = [Counter(analyze(document_text(d))) for d in CORPUS]
    assert scan.terms.documents == len(CORPUS)
    assert scan.terms.length == sum(sum(b.values()) for b in bags)
    assert scan.terms.df["vitamin"] == 2
