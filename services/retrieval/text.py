"""Text as the retrievers read it: a document's text, and the lexical (BM25) analyzer.

The analyzer tokenizes, drops stopwords and stems. The same analyzer runs at index time and at query time, so a term always maps to the same
sparse-vector index. Stemming is Snowball English (Porter2) via PyStemmer; the stopword list is
Lucene's English default, which Anserini's BM25 baselines for BEIR use too.
"""

from __future__ import annotations

import re
import zlib
from functools import lru_cache

import Stemmer

from services.nfcorpus.dataset import Document

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

# fmt: off
STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
))
# fmt: on


def document_text(doc: Document) -> str:
    """What the dense model and BM25 read of a document: title, then abstract."""
    return f"{doc.title} {doc.text}".strip()


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def analyze(text: str) -> list[str]:
    """Lowercased, stopword-free, stemmed tokens of ``text`` in order."""
    tokens = [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]
    return list(_stemmer().stemWords(tokens))


def term_index(term: str) -> int:
    """Stable sparse-vector index of a term (CRC32: no vocabulary to ship or keep in sync)."""
    return zlib.crc32(term.encode("utf-8"))
