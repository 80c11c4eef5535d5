"""HNSW against exact search: recall@k and search CPU per query, on the embedded store.

:func:`dense_recall` measures an index as served (the settings' ``ef`` and quantization) against
an exact scan of the same collection; ``make bench-scale`` reads it for its ``recall_at_100``.

``python -m devtools.bench.hnsw_recall`` builds one shard of synthetic vectors through
:class:`~services.retrieval.store.edge.EdgeStore` (the indexer's calls: create, upsert,
optimize), with int8 quantized copies, then searches it one query at a time, as the MCP server
does, with each ``ef`` given, without and with the quantized vectors (rescored with the
originals), and exactly; it prints and writes recall@k and the CPU per query of each
(``reports/hnsw_recall.json``). Vectors (``--kind``):

- ``mix``: each a normalized weighted sum of 2 or 3 vectors of ``--base`` (a ``.npy`` of real
  document vectors, e.g. the indexer's cache) plus a little noise, queries drawn from
  ``--queries-from`` (real query vectors); the closest to what the scale benchmark serves.
- ``gaussian``: normalized Gaussian vectors and queries, the hardest case for a graph (no
  structure at all).

With ``--served EDGE --data FOLDER`` it builds nothing: it measures the version an embedded
store at ``EDGE`` serves (its alias), with the test queries of the BEIR folder ``FOLDER``
encoded by the project's MiniLM, at each ``ef``, as served (int8 and rescoring) and exactly;
``make bench-scale``'s indexes are such stores (``var/bench-scale/n<N>/full/edge``).

docs/retrieval.md records a run and its command.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from services.nfcorpus.dataset import load_qrels, load_queries
from services.retrieval.encoders.dense import OnnxMiniLM
from services.retrieval.settings import DenseIndex, RetrievalSettings, StoreSettings
from services.retrieval.store.base import Store
from services.retrieval.store.edge import EdgeStore
from services.retrieval.types import CollectionSpec, Point, VectorQuery

Matrix = npt.NDArray[np.float32]
#: Queries per store call when measuring recall (one call per query when timing).
_BATCH = 32
#: Scores within this of the k-th exact score count as found: the exact scan orders tied points
#: (duplicate documents) arbitrarily, and either of two tied points is a right answer.
_TIE = 1e-6


def dense_recall(
    store: Store, collection: str, vectors: Sequence[Sequence[float]], k: int = 100
) -> float:
    """Mean recall@k of the store's default dense search against its exact search.

    A result counts as found when its score reaches the k-th exact score (ties at the cut are
    equally right). 1.0 for a collection searched exactly anyway (below the HNSW threshold).
    """
    found: list[float] = []
    for start in range(0, len(vectors), _BATCH):
        chunk = [list(map(float, v)) for v in vectors[start : start + _BATCH]]
        approximate = store.search(collection, [VectorQuery(v, k) for v in chunk])
        exact = store.search(collection, [VectorQuery(v, k, exact=True) for v in chunk])
        for a, e in zip(approximate, exact, strict=True):
            if not e.scores:
                continue
            cut = e.scores[-1] - _TIE
            found.append(min(sum(s >= cut for s in a.scores), len(e.ids)) / len(e.ids))
    return statistics.fmean(found) if found else 1.0


def _normalized(x: Matrix) -> Matrix:
    out: Matrix = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    return out


def synthetic(
    kind: str, points: int, dim: int, queries: int, seed: int, base: Path | None, real: Path | None
) -> tuple[Matrix, Matrix]:
    """``points`` document vectors and ``queries`` query vectors (see the module's doc)."""
    rng = np.random.default_rng(seed)
    if kind == "gaussian":
        docs = rng.standard_normal((points, dim), dtype=np.float32)
        return _normalized(docs), _normalized(rng.standard_normal((queries, dim), np.float32))
    if base is None:
        raise SystemExit("--kind mix needs --base (a .npy of real document vectors)")
    source = np.load(base).astype(np.float32)
    out = np.empty((points, source.shape[1]), np.float32)
    for start in range(0, points, 50_000):
        n = min(50_000, points - start)
        picks = rng.integers(0, len(source), size=(n, 3))
        weights = rng.dirichlet((1.0, 1.0, 1.0), size=n).astype(np.float32)
        weights[rng.random(n) < 0.5, 2] = 0.0  # half of them mix two vectors
        mixed = np.einsum("nk,nkd->nd", weights, source[picks])
        noise = rng.standard_normal(mixed.shape, np.float32) * (0.02 / np.sqrt(mixed.shape[1]))
        out[start : start + n] = _normalized(mixed + noise)
    asked = np.load(real).astype(np.float32) if real is not None else out
    return out, _normalized(asked[rng.choice(len(asked), size=queries, replace=False)])


def _build(root: Path, docs: Matrix, index: DenseIndex, segment_points: int | None) -> float:
    """Write the shard as the indexer does; seconds the engine took to build its index."""
    store = EdgeStore(root, index=index, segment_points=segment_points)
    try:
        store.create_collection("c", CollectionSpec(dense_size=docs.shape[1], sparse=False))
        # Segments are sealed (indexed) as they fill, during the writes: all of it counts.
        started = time.perf_counter()
        for start in range(0, len(docs), 1000):
            rows = docs[start : start + 1000].tolist()
            store.upsert("c", [Point(start + i, row, {}) for i, row in enumerate(rows)])
        store.optimize("c")
        return time.perf_counter() - started
    finally:
        store.close()


def _cpu_ms(store: Store, name: str, queries: Matrix, k: int, exact: bool) -> float:
    """CPU ms per query, one query per search (every thread of the process counts)."""
    rows = queries.tolist()
    started = time.process_time()
    for row in rows:
        store.search(name, [VectorQuery(row, k, exact=exact)])
    return (time.process_time() - started) * 1000 / len(rows)


def measure(
    root: Path,
    queries: Matrix,
    index: DenseIndex,
    efs: Sequence[int],
    k: int,
    alias: str | None = None,
) -> list[dict[str, object]]:
    """Recall@k and CPU per query at each ``ef``, without and with quantization, and exact.

    ``alias``: measure the collection it names under ``root`` (a served index, as served: with
    its int8 copies only) instead of the synthetic shard ``c``.
    """
    served = alias is not None
    name = (EdgeStore(root).resolve_alias(alias) or alias) if alias else "c"
    rows: list[dict[str, object]] = []
    for quantized in (True,) if served else (False, True):
        for ef in efs:
            variant = replace(index, ef=ef, quantized=quantized)
            store = EdgeStore(root, private_copy=served, index=variant)
            try:
                for row in queries.tolist()[:20]:  # open, warm
                    store.search(name, [VectorQuery(row, k)])
                rows.append(
                    {
                        "search": "hnsw",
                        "ef": ef,
                        "quantization": "int8" if quantized else "none",
                        "oversampling": index.oversampling if quantized else None,
                        f"recall_at_{k}": round(dense_recall(store, name, queries.tolist(), k), 4),
                        "cpu_ms_per_query": round(_cpu_ms(store, name, queries, k, exact=False), 3),
                    }
                )
            finally:
                store.close()
            print(json.dumps(rows[-1]), flush=True)
    store = EdgeStore(root, private_copy=served, index=index)
    try:
        rows.append(
            {
                "search": "exact",
                f"recall_at_{k}": 1.0,
                "cpu_ms_per_query": round(_cpu_ms(store, name, queries, k, exact=True), 3),
            }
        )
    finally:
        store.close()
    print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    """Build a synthetic shard, measure it, write the report."""
    defaults = StoreSettings()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--points", type=int, default=360_000)
    parser.add_argument("--dim", type=int, default=384, help="gaussian only (mix: --base's)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--kind", choices=("mix", "gaussian"), default="mix")
    parser.add_argument("--base", type=Path, help="mix: .npy of real document vectors")
    parser.add_argument("--queries-from", type=Path, help="mix: .npy of real query vectors")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--m", type=int, default=defaults.hnsw_m)
    parser.add_argument("--ef-construct", type=int, default=defaults.hnsw_ef_construct)
    parser.add_argument("--ef", default=f"{defaults.hnsw_ef}", help="comma-separated ef values")
    parser.add_argument("--oversampling", type=float, default=defaults.quantization_oversampling)
    parser.add_argument("--dir", type=Path, help="where the shard is built (default: a temp dir)")
    parser.add_argument(
        "--segment-points",
        type=int,
        default=defaults.edge_segment_points,
        help="points of a segment at most (0: one segment of every point)",
    )
    parser.add_argument("--served", type=Path, help="an embedded store to measure as it serves")
    parser.add_argument("--data", type=Path, help="--served: the BEIR folder of its test queries")
    parser.add_argument("--out", type=Path, default=Path("reports/hnsw_recall.json"))
    args = parser.parse_args(argv)
    efs = [int(e) for e in args.ef.split(",")]
    if args.served is not None:
        if args.data is None:
            parser.error("--served needs --data, the BEIR folder of its test queries")
        _measure_served(args.served, args.data, efs, args.k, args.out)
        return
    docs, queries = synthetic(
        args.kind, args.points, args.dim, args.queries, args.seed, args.base, args.queries_from
    )
    index = DenseIndex(
        threshold=0,
        m=args.m,
        ef_construct=args.ef_construct,
        ef=defaults.hnsw_ef,
        quantized=True,  # built once with int8 copies; searches choose to use them or not
        oversampling=args.oversampling,
    )
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        build_s = _build(Path(tmp), docs, index, args.segment_points or None)
        print(f"built {len(docs)} x {docs.shape[1]} in {build_s:.0f} s", flush=True)
        rows = measure(Path(tmp), queries, index, efs, args.k)
    report = {
        "points": len(docs),
        "dim": int(docs.shape[1]),
        "kind": args.kind,
        "queries": len(queries),
        "m": args.m,
        "ef_construct": args.ef_construct,
        "segment_points": args.segment_points or None,
        "build_s": round(build_s, 1),
        "results": rows,
    }
    _write(args.out, report)


def _measure_served(edge: Path, data: Path, efs: Sequence[int], k: int, out: Path) -> None:
    """Measure the version the embedded store at ``edge`` serves, with ``data``'s test queries."""
    settings = RetrievalSettings()
    texts, judged = load_queries(data), sorted(load_qrels(data, "test"))
    queries = OnnxMiniLM(threads=1, cache_dir=settings.cache_dir).encode([texts[q] for q in judged])
    alias = settings.store.collection
    rows = measure(edge, queries, settings.store.dense_index, efs, k, alias=alias)
    _write(out, {"served": str(edge), "queries": len(judged), "results": rows})


def _write(out: Path, report: dict[str, object]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"-> {out}")


if __name__ == "__main__":
    main()
