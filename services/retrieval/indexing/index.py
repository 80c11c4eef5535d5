"""The indexer: NFCorpus -> dense + BM25 vectors -> a versioned Qdrant collection -> alias.

``python -m services.retrieval.indexing.index`` (or ``make index``). The collection name carries
a version hash of everything that shapes what it serves (:mod:`.versions`), and the service
reads an alias. A build fills a fresh versioned collection and moves the alias only once every
point is in, so a re-index never serves a half-built collection.

The corpus is streamed, never held: a first pass gathers the statistics every document's
points need (:mod:`.scan`), a second writes it chunk by chunk, each chunk's vectors
checkpointed first (:mod:`.chunks`), so a build's memory does not grow with the corpus and a
build started again encodes at most the chunk it was on. The encoding spreads over slices,
processes on one machine (``RETRIEVAL_INDEX_SLICES``) or the pods of an Indexed Job
(``--slice``), and one finishing step (``--finish``) writes the collection once all are in.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from services.nfcorpus.dataset import Document, Fingerprint, iter_corpus
from services.nfcorpus.download import ensure_dataset
from services.retrieval.encoders.dense import DenseEncoder, OnnxMiniLM
from services.retrieval.encoders.sparse import Bm25Params
from services.retrieval.indexing.chunks import Checkpoints, Slice, checkpoint_folder, chunked
from services.retrieval.indexing.points import by_bytes, document_points, save_corpus_stats
from services.retrieval.indexing.scan import scan_corpus
from services.retrieval.indexing.training import (
    TrainingData,
    build_supervised,
    load_training_data,
    train_votes,
)
from services.retrieval.indexing.versions import (
    collection_version,
    dense_index_config,
    drop_old_versions,
    supervised_config,
)
from services.retrieval.query.documents import CorpusStats
from services.retrieval.query.index_version import (
    corpus_collection,
    ranker_collection,
    versioned_collection,
)
from services.retrieval.settings import RetrievalSettings
from services.retrieval.store import open_store
from services.retrieval.store.base import Store
from services.retrieval.types import CollectionSpec
from services.telemetry.logging import setup_logging
from services.telemetry.progress import progress

log = logging.getLogger(__name__)
#: Seconds between two looks for the slices' checkpoints while a finishing step waits.
WAIT_POLL_S = 10.0


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What a run did."""

    collection: str
    documents: int
    built: bool


@dataclass(frozen=True, slots=True)
class IndexPlan:
    """The version the current inputs call for: its name, its corpus and training data.

    The corpus stays in its file: :meth:`corpus` reads it again for each pass.
    """

    name: str
    folder: Path
    limit: int | None
    documents: int
    fingerprint: str
    data: TrainingData | None
    bm25: Bm25Params

    def corpus(self) -> Iterator[Document]:
        """The planned documents, streamed from the corpus file."""
        return iter_corpus(self.folder, self.limit)


def plan_index(settings: RetrievalSettings, encoder: DenseEncoder) -> IndexPlan:
    """Read the inputs (downloading the dataset if needed) and name the version they make."""
    folder = ensure_dataset(settings.data_dir, settings.download_url, settings.download_md5)
    limit = settings.experiment.max_docs
    fingerprint, documents = Fingerprint(), 0
    for doc in iter_corpus(folder, limit):
        fingerprint.add(doc)
        documents += 1
    data = (
        load_training_data(folder, settings.supervision, settings.experiment.max_train_queries)
        if settings.mode == "full"
        else None
    )
    bm25 = Bm25Params()
    training = data.fingerprint() if data is not None else None
    version = collection_version(
        fingerprint.hex(),
        encoder.model_id,
        bm25.k1,
        bm25.b,
        dense_index_config(settings, documents),
        supervised_config(settings, training),
    )
    name = versioned_collection(settings.store.collection, version)
    return IndexPlan(name, folder, limit, documents, fingerprint.hex(), data, bm25)


def is_current(store: Store, alias: str, plan: IndexPlan) -> bool:
    """Whether ``alias`` already points at the planned version, complete."""
    name = plan.name
    if store.resolve_alias(alias) != name or not store.collection_exists(name):
        return False
    if store.count(name) != plan.documents:
        return False
    return plan.data is None or store.collection_exists(ranker_collection(name))


def checkpoints(settings: RetrievalSettings, encoder: DenseEncoder) -> Checkpoints:
    """Where the builds with these settings keep their encoded chunks."""
    return Checkpoints(checkpoint_folder(settings.cache_dir), encoder, settings.encode_batch_size)


def encode_slice(
    settings: RetrievalSettings, encoder: DenseEncoder, plan: IndexPlan, part: Slice
) -> int:
    """Encode the chunks of slice ``part`` that no checkpoint holds yet; how many it encoded.

    A slice writes checkpoints only, never the store: the finishing step (:func:`build` with
    ``encode=False``) writes every chunk once all slices are in.
    """
    kept = checkpoints(settings, encoder)
    encoded = 0
    with phase("encode"):
        for chunk in chunked(plan.corpus(), settings.index_chunk):
            if part.holds(chunk) and kept.load(chunk) is None:
                kept.vectors(chunk)
                encoded += 1
    log.info("slice %d of %d: %d chunks encoded", part.index + 1, part.count, encoded)
    return encoded


def fresh_collection(store: Store, name: str, alias: str, dimension: int) -> None:
    """An empty collection ``name``: what an interrupted build left of it is dropped.

    Points re-upserted over a half-built shard would be numbered apart from a clean build's,
    and that numbering breaks ties; the encoded chunks survive in their checkpoints. The
    version the alias serves is written in place (``--force``), never dropped under readers.
    """
    if store.collection_exists(name) and store.resolve_alias(alias) != name:
        log.info("dropping %s, left by an interrupted build", name)
        store.delete_collection(name)
    if not store.collection_exists(name):
        store.create_collection(name, CollectionSpec(dense_size=dimension))


def build(
    settings: RetrievalSettings,
    store: Store,
    encoder: DenseEncoder,
    plan: IndexPlan,
    encode: bool = True,
) -> None:
    """Fill the planned version's collections (documents, then the supervised side).

    Two passes over the corpus file: its statistics (:mod:`.scan`), then chunk by chunk, its
    vectors (checkpointed) written to the store. Without ``encode`` a chunk that no slice
    checkpointed is an error naming its slice, and nothing is encoded here.
    """
    name = plan.name
    judged = {d for qrels in plan.data.voters.values() for d in qrels} if plan.data else set()
    with phase("scan"):
        scan = scan_corpus(plan.corpus(), judged)
    if scan.documents != plan.documents:
        raise RuntimeError(f"the corpus changed while it was read: {scan.documents} documents")
    if not encode:
        with phase("wait"):
            require_checkpoints(settings, encoder, plan)
    fresh_collection(store, name, settings.store.collection, encoder.dimension)
    votes = train_votes(plan.data.learners) if plan.data is not None else {}
    kept = checkpoints(settings, encoder)
    with phase("write"), progress(f"indexing into {name}", plan.documents) as advance:
        for chunk in chunked(plan.corpus(), settings.index_chunk):
            points = document_points(chunk, kept.vectors(chunk), scan, votes, plan.bm25)
            for batch in by_bytes(points, settings.upsert_bytes):
                store.upsert(name, batch)
            advance(len(points))
    stored = store.count(name)
    if stored != plan.documents:
        raise RuntimeError(
            f"{name} holds {stored} points after upserting {plan.documents} documents"
        )
    log.info("indexing %s (an HNSW graph from %d points on)", name, settings.store.hnsw_threshold)
    with phase("optimize"):
        store.optimize(name)
    if plan.data is not None:
        with phase("supervised"):
            save_corpus_stats(store, corpus_collection(name), CorpusStats(scan.titles))
            build_supervised(store, name, encoder, plan.data, settings, scan.numbers)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Log how long the build's phase ``name`` took and the memory after it.

    ``make bench-scale-build`` reads these lines. The memory is the process's resident set, its
    own share of it (the rest is mapped files: the store's, shared with the page cache) and its
    peak so far, from ``/proc`` where there is one.
    """
    started = time.monotonic()
    yield
    took = time.monotonic() - started
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        log.info("build phase %s: %.1f s", name, took)
        return
    mb = {
        key: int(value.split()[0]) // 1024
        for key, _, value in (line.partition(":") for line in status.splitlines())
        if key in ("VmRSS", "RssAnon", "VmHWM")
    }
    log.info(
        "build phase %s: %.1f s, rss %d MB, anon %d MB, peak %d MB",
        name, took, mb.get("VmRSS", 0), mb.get("RssAnon", 0), mb.get("VmHWM", 0),
    )  # fmt: skip


def require_checkpoints(
    settings: RetrievalSettings, encoder: DenseEncoder, plan: IndexPlan
) -> None:
    """Wait for every chunk's checkpoint (``index_wait_seconds`` at most).

    Raises naming the slices still without theirs: a slice failed, or never ran.
    """
    kept = checkpoints(settings, encoder)
    missing = {c.number: kept.path(c) for c in chunked(plan.corpus(), settings.index_chunk)}
    deadline = time.monotonic() + settings.index_wait_seconds
    while True:
        missing = {n: path for n, path in missing.items() if not path.is_file()}
        left = deadline - time.monotonic()
        if not missing or left <= 0:
            break
        log.info("waiting for %d chunks of slice(s) %s", len(missing), _slices(missing, settings))
        time.sleep(min(WAIT_POLL_S, left))
    if missing:
        raise MissingSlices(
            f"{len(missing)} chunks have no vectors (first: {sorted(missing)[:5]}): slice(s) "
            f"{_slices(missing, settings)} of {settings.index_slices} did not finish; run them again"
        )


def _slices(chunks: Iterable[int], settings: RetrievalSettings) -> list[int]:
    """The slices (counted from 1) that hold ``chunks``."""
    return sorted({n % settings.index_slices + 1 for n in chunks})


class MissingSlices(RuntimeError):
    """The finishing step found chunks no slice encoded."""


def build_index(
    settings: RetrievalSettings,
    store: Store,
    encoder: DenseEncoder,
    force: bool = False,
    encode: bool = True,
) -> IndexReport:
    """Make the alias point at a complete, current version: build it unless it is there.

    Without ``encode`` this is a parallel build's finishing step: the slices encoded every
    chunk, and the alias moves only if each one is in.
    """
    with phase("plan"):
        plan = plan_index(settings, encoder)
    alias = settings.store.collection
    if not force and is_current(store, alias, plan):
        log.info("alias %s already points at complete collection %s", alias, plan.name)
        return IndexReport(plan.name, plan.documents, built=False)
    previous = store.resolve_alias(alias)
    build(settings, store, encoder, plan, encode)
    with phase("alias"):
        store.set_alias(alias, plan.name)
        drop_old_versions(store, alias, keep={plan.name, previous})
    log.info("alias %s -> %s (%d documents)", alias, plan.name, plan.documents)
    return IndexReport(plan.name, plan.documents, built=True)


def run_slices(settings: RetrievalSettings, argv: Sequence[str]) -> None:
    """Encode every slice in a process of its own (one model thread each), at once.

    A slice that fails is run once more; one that fails again is named in the error, and the
    finishing step never runs without it.
    """
    count = settings.index_slices
    command = [sys.executable, "-m", "services.retrieval.indexing.index", *argv]
    env = {**os.environ, "RETRIEVAL_INDEX_SLICES": str(count), "RETRIEVAL_ENCODE_THREADS": "1"}
    pending = list(range(count))
    for attempt in (1, 2):
        running = {i: subprocess.Popen([*command, "--slice", str(i)], env=env) for i in pending}
        pending = [i for i, process in running.items() if process.wait() != 0]
        if pending:
            log.warning("slice(s) %s failed (attempt %d)", [i + 1 for i in pending], attempt)
    if pending:
        raise MissingSlices(f"slice(s) {[i + 1 for i in pending]} of {count} failed twice")


def slice_index(given: int | None) -> int | None:
    """The slice to encode: ``--slice``, or the index Kubernetes gives an Indexed Job's pod."""
    if given is not None:
        return given
    found = os.environ.get("JOB_COMPLETION_INDEX")
    return int(found) if found is not None else None


def build_or_finish(
    settings: RetrievalSettings, force: bool, finish: bool, argv: Sequence[str] | None
) -> IndexReport:
    """A serial build, a parallel one (slices in processes, then finishing), or the last step."""
    if settings.index_slices > 1 and not finish:
        run_slices(settings, list(argv if argv is not None else sys.argv[1:]))
        finish = True
    store = open_store(settings.store)
    try:
        # Indexing is a batch job: give the model every core. It also prepares the served model.
        encoder = OnnxMiniLM(threads=max(settings.encode_threads, 2), cache_dir=settings.cache_dir)
        return build_index(settings, store, encoder, force=force, encode=not finish)
    finally:
        store.close()


def main(argv: Sequence[str] | None = None) -> None:
    """CLI entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    parser.add_argument("--max-docs", type=int, help="index only the first N documents")
    step = parser.add_mutually_exclusive_group()
    step.add_argument(
        "--slice", type=int, metavar="I",
        help="only encode slice I (from 0) of RETRIEVAL_INDEX_SLICES into the checkpoints; "
        "an Indexed Job's pod takes I from JOB_COMPLETION_INDEX",
    )  # fmt: skip
    step.add_argument(
        "--finish", action="store_true",
        help="only write the collection from the slices' checkpoints, train, move the alias",
    )  # fmt: skip
    args = parser.parse_args(argv)
    setup_logging()
    settings = RetrievalSettings()
    if args.max_docs:
        settings = settings.updated(experiment={"max_docs": args.max_docs})
    part = slice_index(args.slice)
    if part is not None:
        # A slice is one of several processes on the machine: one model thread each.
        encoder = OnnxMiniLM(threads=settings.encode_threads, cache_dir=settings.cache_dir)
        plan = plan_index(settings, encoder)
        encode_slice(settings, encoder, plan, Slice(part, settings.index_slices))
        return
    try:
        report = build_or_finish(settings, args.force, args.finish, argv)
    except MissingSlices as e:
        parser.exit(1, f"error: {e}\n")
    state = "built" if report.built else "already up to date"
    print(f"{report.collection}: {report.documents} documents, {state}")


if __name__ == "__main__":
    main()
