"""The NFCorpus test split as the evaluator needs it, and reproducible query sampling."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from services.nfcorpus.dataset import Qrels, load_corpus, load_qrels, load_queries
from services.nfcorpus.download import ensure_dataset


@dataclass(frozen=True)
class TestSet:
    """Test queries that have judgements, their judgements, and every valid document id."""

    __test__ = False  # not a pytest test class, despite the name

    queries: dict[str, str]
    qrels: Qrels
    doc_ids: frozenset[str]

    @property
    def query_ids(self) -> list[str]:
        """Judged test query ids, sorted (the population samples are drawn from)."""
        return sorted(self.qrels)


def load_test_set(data_dir: Path) -> TestSet:
    """Read queries, test qrels and corpus ids from a BEIR NFCorpus folder."""
    queries = load_queries(data_dir)
    qrels = {q: judged for q, judged in load_qrels(data_dir, "test").items() if q in queries}
    doc_ids = frozenset(doc.doc_id for doc in load_corpus(data_dir))
    return TestSet({q: queries[q] for q in qrels}, qrels, doc_ids)


def fetch_test_set(data_dir: Path, url: str, md5: str) -> TestSet:
    """:func:`load_test_set`, fetching the BEIR archive into ``data_dir`` unless it is whole.

    A connected machine needs no data set prepared by hand (the evaluator, the conformance
    suite); the archive's md5 is checked before anything is unpacked.
    """
    return load_test_set(ensure_dataset(data_dir, url, md5))


def sample_query_ids(population: list[str], n: int | None, seed: int) -> list[str]:
    """``n`` distinct ids drawn with ``seed`` (all of them, shuffled, when ``n`` is None).

    The draw depends only on the sorted population, ``n`` and ``seed``, so a run is reproducible
    across machines and Python versions (``random.Random`` with an int seed is stable).

    Raises:
        ValueError: ``n`` is not within 1..len(population).

    """
    ordered = sorted(population)
    size = len(ordered) if n is None else n
    if not 1 <= size <= len(ordered):
        raise ValueError(f"num_queries must be within 1..{len(ordered)}, got {size}")
    return random.Random(seed).sample(ordered, size)
