"""What opening an embedded shard costs a process: its BM25 index built in RAM, or mapped.

``python -m devtools.bench.shard_memory --points 100000`` writes one shard of synthetic BM25
points (document-like: a few dozen terms each out of a large vocabulary; tiny dense vectors and
no graph, so that what differs is the sparse index) through :class:`~services.retrieval.store.edge.EdgeStore`, and copies it before its
:meth:`~services.retrieval.store.edge.EdgeStore.optimize`: the copy is a shard as the store wrote
them before (an appendable segment, whose sparse index the engine rebuilds in RAM at each open),
the original is one as it writes them now (memory-mapped). A fresh process opens each and runs
sparse searches; its RSS (anonymous and file-backed, from ``/proc/self/status``) is read before
the open and after the searches, and both answer the same queries with the same scores.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from services.retrieval.settings import StoreSettings
from services.retrieval.store import copies
from services.retrieval.store.edge import EdgeStore
from services.retrieval.types import CollectionSpec, Point, SparseVector, VectorQuery

_FIELDS = ("VmRSS", "RssAnon", "RssFile")
_DIM = 8


def _rss() -> dict[str, int]:
    """The resident set of the calling process, in KB, by kind."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in _FIELDS:
            found[name] = int(value.split()[0])
    return found


def _queries(vocabulary: int, n: int) -> list[VectorQuery]:
    rng = np.random.default_rng(1)
    return [
        VectorQuery(
            SparseVector(sorted(rng.choice(vocabulary, 4, replace=False).tolist()), [1.0] * 4), 100
        )
        for _ in range(n)
    ]


def open_and_search(root: Path, vocabulary: int) -> None:
    """In a fresh process: open the shard, search, print RSS before and after and the answers."""
    before = _rss()
    store = EdgeStore(root)
    try:
        found = store.search("c", _queries(vocabulary, 200))
    finally:
        after = _rss()
        store.close()
    answers = [[f.ids, f.scores] for f in found]
    print(json.dumps({"before_kb": before, "after_kb": after, "answers": answers}))


def _write(root: Path, points: int, vocabulary: int, terms: int) -> Path:
    """Write the shard; return a copy made before the engine's rebuild."""
    rng = np.random.default_rng(0)
    store = EdgeStore(root, index=replace(StoreSettings().dense_index, threshold=points + 1))
    try:
        store.create_collection("c", CollectionSpec(dense_size=_DIM))
        for start in range(0, points, 1000):
            batch = []
            for i in range(start, min(points, start + 1000)):
                # Zipf-like term ids: a few frequent terms, a long tail (as words are).
                ids = np.unique(np.minimum(rng.zipf(1.3, terms), vocabulary) - 1)
                values = (rng.random(len(ids)) * 4).astype(np.float32).tolist()
                dense = rng.standard_normal(_DIM).astype(np.float32)
                dense /= np.linalg.norm(dense)
                batch.append(Point(i, dense.tolist(), {}, SparseVector(ids.tolist(), values)))
            store.upsert("c", batch)
        before = root.parent / "appendable"
        copies.copy_tree_sparse(root, before)
        store.optimize("c")
        return before
    finally:
        store.close()


def _measure(root: Path, vocabulary: int) -> dict[str, object]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "devtools.bench.shard_memory",
            "--open",
            str(root),
            "--vocabulary",
            str(vocabulary),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, object] = json.loads(out)
    return result


def main(argv: Sequence[str] | None = None) -> None:
    """Write the two shards, open each in a fresh process, report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--terms", type=int, default=80, help="term draws per document")
    parser.add_argument("--vocabulary", type=int, default=200_000)
    parser.add_argument("--open", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.open:
        open_and_search(args.open, args.vocabulary)
        return
    with tempfile.TemporaryDirectory() as tmp:
        built = Path(tmp) / "built"
        appendable = _write(built, args.points, args.vocabulary, args.terms)
        old, new = _measure(appendable, args.vocabulary), _measure(built, args.vocabulary)
    report = {
        "points": args.points,
        "same_answers": old.pop("answers") == new.pop("answers"),
        "sparse_index_in_ram": old,
        "sparse_index_mapped": new,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
