"""Distractor documents made of NFCorpus's own sentences, written as a BEIR folder.

A larger corpus must look like NFCorpus to the ranking (its vocabulary, sentence lengths, the
shape of its titles and abstracts) without adding anything relevant to a test query: nobody judged
a distractor, so any distractor in a top 10 is a document the ranking chose over a real one. Each
distractor takes a title (another document's title, or now and then a short sentence) and ``k``
sentences drawn from random NFCorpus documents, all with one seeded generator, so a size always
holds the same distractors and a larger size starts with the smaller one's.

The folder holds ``corpus.jsonl`` (the real documents first, in their original order, then the
distractors ``DIST-0000001``...), and links to the real ``queries.jsonl`` and ``qrels/*.tsv``: the
ordinary indexer and servers read it as they read NFCorpus. It is built in a temporary folder
beside its place and renamed there whole, with a ``manifest.json`` of the parameters that made
it; a folder whose manifest matches is reused as it is.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import random
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from services.nfcorpus.dataset import Document, corpus_fingerprint, load_corpus

log = logging.getLogger(__name__)

#: Bumped whenever the generator would make other documents from the same parameters.
GENERATOR_VERSION = 1
#: Distractor ids: a prefix no NFCorpus id has (theirs are ``MED-*``), and seven digits.
ID_PREFIX = "DIST-"
ID_PATTERN = re.compile(r"DIST-\d{7}")
#: Sentence ends: a stop, then space, then what starts a sentence in these abstracts.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")
#: A fragment shorter than this many words ("Results:", "95% CI.") is no sentence to reuse.
MIN_SENTENCE_WORDS = 4
#: Titles taken from a short sentence (instead of another document's title) at most this long.
SHORT_SENTENCE_WORDS = 15
#: Share of distractors whose title is another document's title (the rest: a short sentence).
TITLE_FROM_TITLES = 0.7


def distractor_id(number: int) -> str:
    """The id of the ``number``-th distractor (from 1): never an NFCorpus id."""
    return f"{ID_PREFIX}{number:07d}"


def is_distractor(doc_id: str) -> bool:
    """Whether ``doc_id`` names a distractor."""
    return doc_id.startswith(ID_PREFIX)


def sentences(text: str) -> list[str]:
    """The sentences of an abstract long enough to stand alone in another document."""
    parts = (s.strip() for s in _SENTENCE_END.split(text))
    return [s for s in parts if len(s.split()) >= MIN_SENTENCE_WORDS]


@dataclass(frozen=True, slots=True)
class Pool:
    """Every text a distractor may take: titles, then sentences, each once.

    A distractor is a list of indices into ``texts``, so its vector can be composed from the
    vectors of these texts, each encoded once however many distractors reuse it.
    """

    texts: tuple[str, ...]
    titles: tuple[int, ...]
    sentences: tuple[int, ...]
    short: tuple[int, ...]

    @classmethod
    def of(cls, documents: Sequence[Document]) -> Pool:
        """The pool of ``documents``' titles and sentences, in the documents' order."""
        index: dict[str, int] = {}

        def add(text: str) -> int:
            return index.setdefault(text, len(index))

        titles = sorted({add(d.title) for d in documents if d.title.strip()})
        said = sorted({add(s) for d in documents for s in sentences(d.text)})
        texts = tuple(index)
        short = tuple(i for i in said if len(texts[i].split()) <= SHORT_SENTENCE_WORDS)
        return cls(texts, tuple(titles), tuple(said), short)


@dataclass(frozen=True, slots=True)
class Recipe:
    """One distractor: its title and its sentences, as indices into :attr:`Pool.texts`."""

    title: int
    body: tuple[int, ...]

    def document(self, number: int, pool: Pool) -> Document:
        """The distractor as a corpus document."""
        text = " ".join(pool.texts[i] for i in self.body)
        return Document(distractor_id(number), pool.texts[self.title], text)


@dataclass(frozen=True, slots=True)
class Params:
    """What decides a folder's content; its manifest holds them."""

    base_documents: int
    distractors: int
    seed: int
    min_sentences: int
    max_sentences: int
    source_fingerprint: str
    version: int = GENERATOR_VERSION


def recipes(pool: Pool, count: int, seed: int, k: tuple[int, int]) -> list[Recipe]:
    """``count`` distractors drawn with ``seed``; a smaller count is a prefix of a larger one."""
    if not pool.sentences or not pool.titles:
        raise ValueError("the documents hold no sentence or no title to draw from")
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        from_titles = rng.random() < TITLE_FROM_TITLES or not pool.short
        title = rng.choice(pool.titles if from_titles else pool.short)
        body = tuple(rng.choice(pool.sentences) for _ in range(rng.randint(*k)))
        out.append(Recipe(title, body))
    return out


def distractor_documents(pool: Pool, drawn: Sequence[Recipe]) -> Iterator[Document]:
    """The documents of ``drawn``, numbered from 1."""
    for number, recipe in enumerate(drawn, start=1):
        yield recipe.document(number, pool)


@dataclass(frozen=True, slots=True)
class Folder:
    """A written BEIR folder and what its indexer will key its vector cache with."""

    path: Path
    documents: int
    fingerprint: str


def _link_dataset_files(source: Path, target: Path) -> None:
    """Links to the real queries and judgements: the benchmark asks what NFCorpus asks."""
    for name in ("queries.jsonl", "queries.jsonl.gz"):
        if (source / name).exists():
            (target / name).symlink_to((source / name).resolve())
    (target / "qrels").mkdir()
    for tsv in sorted((source / "qrels").glob("*.tsv")):
        (target / "qrels" / tsv.name).symlink_to(tsv.resolve())


def _write_corpus(path: Path, documents: Iterator[Document]) -> int:
    count = 0
    with open(path, "w", encoding="utf-8") as out:
        for d in documents:
            out.write(json.dumps({"_id": d.doc_id, "title": d.title, "text": d.text}) + "\n")
            count += 1
    return count


def _manifest(folder: Path) -> dict[str, object] | None:
    try:
        return dict(json.loads((folder / "manifest.json").read_text()))
    except (OSError, ValueError):
        return None


def source_fingerprint(base: Sequence[Document]) -> str:
    """What a folder's content depends on in the real documents."""
    return corpus_fingerprint(list(base))


def write_folder(
    target: Path,
    source: Path,
    base: Sequence[Document],
    pool: Pool,
    drawn: Sequence[Recipe],
    params: Params,
) -> Folder:
    """``target`` as a BEIR folder of ``base`` then ``drawn``; reused when its manifest matches.

    Built under a temporary name beside ``target`` and renamed into place whole, so a run
    killed halfway leaves no folder an indexer could mistake for a finished one. The corpus's
    fingerprint is computed as the indexer computes it (loading the written file), so the
    vector cache written for it is the one the indexer reads.
    """
    wanted = asdict(params)
    found = _manifest(target)
    if found is not None and {k: found.get(k) for k in wanted} == wanted:
        log.info("corpus %s already written with these parameters: reused", target)
        return Folder(target, int(str(found["documents"])), str(found["fingerprint"]))
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        documents = itertools.chain(base, distractor_documents(pool, drawn))
        count = _write_corpus(staging / "corpus.jsonl", documents)
        _link_dataset_files(source, staging)
        fingerprint = corpus_fingerprint(load_corpus(staging))
        manifest = {**wanted, "documents": count, "fingerprint": fingerprint}
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        if target.exists():  # another generator's folder: set aside, then removed
            stale = Path(tempfile.mkdtemp(prefix=f".{target.name}.stale-", dir=target.parent))
            os.replace(target, stale / target.name)
            shutil.rmtree(stale, ignore_errors=True)
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    log.info("corpus %s: %d documents written (%s)", target, count, fingerprint)
    return Folder(target, count, fingerprint)


def digest(texts: Sequence[str]) -> str:
    """A short hash of ``texts`` in order: the cache key of anything encoded from them."""
    h = hashlib.sha256()
    for text in texts:
        h.update(text.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]
