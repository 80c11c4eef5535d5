"""The ``embedded`` store backend: Qdrant's engine in-process through qdrant-edge.

Each collection is a shard directory under ``root``; an alias is a small file naming the shard,
replaced atomically (``os.replace``) so a reader sees the old or the new version, never a mix.
qdrant-edge lets one process open a shard directory: with ``private_copy`` each process opens a
copy of its own (:mod:`.copies`), so several server workers can read one index.

A shard is written, then :meth:`EdgeStore.optimize` has the engine rebuild its points into
immutable segments (beside an empty appendable one it keeps): an HNSW graph for the dense vectors
from the settings' threshold on (none below it, so every search there is exact), the BM25
inverted index memory-mapped from its files instead of rebuilt in RAM at each open. A written
shard is cut into segments of at most ``segment_points`` points, each sealed (optimized) as it
fills, so building one holds one segment's indexes in memory, not the corpus's (NFCorpus fits
in one). A served shard only reads what the build wrote: the engine runs no optimizer by itself
(optimizations are explicit calls), so opening one builds nothing.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from services.retrieval.settings import QUANTIZATION_QUANTILE, DenseIndex, StoreSettings
from services.retrieval.store import compact, copies
from services.retrieval.store.base import Fusion, StoreError, hit_from_point, scored_from_points
from services.retrieval.types import (
    DENSE,
    SPARSE,
    CollectionSpec,
    Hit,
    Point,
    PointId,
    Scored,
    SparseVector,
    VectorQuery,
    id_key,
)

_ALIASES = "aliases"
_CONFIG = "edge_config.json"
#: The engine's indexing threshold, in KB of vectors: it rebuilds any written segment into an
#: immutable one (the only kind whose sparse index can be memory-mapped). Whether the dense
#: vectors get a graph is decided apart, by the number of points (:meth:`EdgeStore.optimize`).
_REBUILD_FROM_KB = 1


def shard_config(
    dense_size: int, sparse: bool, index: DenseIndex, graph: bool, segment_points: int | None
) -> qe.EdgeConfig:
    """A shard's configuration: cosine dense vectors, dot-product sparse ones, no WAL.

    ``graph`` gives the dense vectors an HNSW graph (and the quantized copies, if asked for);
    without it ``m`` is 0, which Qdrant reads as "no graph": an exact scan of the vectors.
    ``segment_points`` bounds a segment in Qdrant's unit (KB of vectors), so the engine's merge
    optimizer never joins two sealed segments into one bigger than that; and any segment whose
    points were rewritten (``--force`` writes the served version in place) is vacuumed at the
    next optimization, however small, rather than kept beside the segments of the new copies.
    """
    quantization = (
        qe.ScalarQuantizationConfig(qe.ScalarType.Int8, quantile=QUANTIZATION_QUANTILE)
        if graph and index.quantized
        else None
    )
    dense = qe.EdgeVectorParams(
        dense_size, qe.Distance.Cosine, memory=qe.Memory.Cold, quantization_config=quantization
    )
    hnsw = qe.HnswIndexConfig(
        m=index.m if graph else 0,
        ef_construct=index.ef_construct,
        full_scan_threshold=index.threshold_kb(dense_size),
    )
    bm25 = qe.EdgeSparseVectorParams(memory=qe.Memory.Cold)
    vector_kb = dense_size * 4 / 1024  # a float32 vector
    segment_kb = None if segment_points is None else math.ceil(segment_points * vector_kb)
    return qe.EdgeConfig(
        vectors={DENSE: dense},
        sparse_vectors={SPARSE: bm25} if sparse else None,
        hnsw_config=hnsw,
        optimizers=qe.EdgeOptimizersConfig(
            indexing_threshold=_REBUILD_FROM_KB,
            max_segment_size=segment_kb,
            vacuum_min_vector_number=1,
        ),
        wal_enabled=False,
        max_search_threads=1,
    )


def _vector(v: Sequence[float] | SparseVector) -> Any:
    if isinstance(v, SparseVector):
        return qe.SparseVector(indices=v.indices, values=v.values)
    # A query's vector is already a list of floats (EncodedQuery.dense): no copy per search.
    return v if isinstance(v, list) else [float(x) for x in v]


def _query(q: VectorQuery) -> qe.Query:
    return qe.Query.Nearest(_vector(q.vector), using=q.using)


def search_params(index: DenseIndex, exact: bool) -> qe.SearchParams:
    """A dense search's parameters: HNSW's ``ef`` and rescoring, or an exact scan.

    Both are no-ops on a shard without a graph or quantized vectors (what it answers is the
    same, bit for bit).
    """
    if exact:
        return qe.SearchParams(exact=True, quantization=qe.QuantizationSearchParams(ignore=True))
    # Without quantization in the settings, a shard's quantized vectors (if built) are ignored.
    rescore = (
        qe.QuantizationSearchParams(rescore=True, oversampling=index.oversampling)
        if index.quantized
        else qe.QuantizationSearchParams(ignore=True)
    )
    return qe.SearchParams(hnsw_ef=index.ef, quantization=rescore)


def _payload_selector(payload: Sequence[str] | bool) -> Any:
    return payload if isinstance(payload, bool) else qe.PayloadSelector.Include(list(payload))


class EdgeStore:
    """The :class:`~services.retrieval.store.base.Store` on qdrant-edge shards."""

    def __init__(
        self,
        root: Path,
        private_copy: bool = False,
        copies_root: Path = copies.COPIES_ROOT,
        index: DenseIndex | None = None,
        segment_points: int | None = None,
    ) -> None:
        """Use shard directories under ``root`` (created if missing).

        With ``private_copy``, copies go to a folder of this store's own under
        ``copies_root/<this process>/``, and the copies of processes that have exited are
        removed first. ``index`` is how dense vectors are indexed and searched (the settings'
        defaults if None). ``segment_points`` bounds the segments a build writes (None: one
        segment, however large).
        """
        self._root = root
        self._index = index if index is not None else StoreSettings().dense_index
        if segment_points is not None and segment_points < self._index.threshold:
            raise StoreError(
                f"segments of {segment_points} points would stay below the graph's threshold "
                f"({self._index.threshold}): each is indexed once, as it fills"
            )
        self._segment = segment_points
        # Points written into each shard's appendable segment since it was last sealed.
        self._unsealed: dict[str, int] = {}
        self._params = {exact: search_params(self._index, exact) for exact in (False, True)}
        self._shards: dict[str, qe.EdgeShard] = {}
        self._copies: Path | None = None
        if private_copy:
            copies.sweep(copies_root)
            self._copies = copies.private_folder(copies_root)
        self._lock = threading.Lock()
        (root / _ALIASES).mkdir(parents=True, exist_ok=True)

    def _path(self, name: str) -> Path:
        if not name or "/" in name or name.startswith(".") or name == _ALIASES:
            raise StoreError(f"invalid collection name {name!r}")
        return self._root / name

    def _shard(self, name: str) -> qe.EdgeShard:
        with self._lock:
            shard = self._shards.get(name)
            if shard is not None:
                return shard
            path = self._path(name)
            if not path.is_dir():
                raise StoreError(f"collection {name!r} does not exist under {self._root}")
            if self._copies is not None:
                copy = self._copies / name
                shutil.rmtree(copy, ignore_errors=True)  # a half-made copy of a failed open
                copies.copy_tree_sparse(path, copy)
                path = copy
            elif compact.is_compacted(path):
                raise StoreError(
                    f"shard {path} is compacted (an image's index): it opens only through a "
                    "private copy (RETRIEVAL_EDGE_PRIVATE_COPY=true)"
                )
            try:
                shard = qe.EdgeShard.load(str(path))
            except Exception as e:  # the binding raises plain exceptions
                raise StoreError(f"cannot open shard {path}: {e}") from e
            self._shards[name] = shard
            return shard

    def collection_exists(self, name: str) -> bool:
        """Whether the shard directory exists."""
        return self._path(name).is_dir()

    def create_collection(self, name: str, spec: CollectionSpec) -> None:
        """Create the shard (:func:`shard_config`), without a graph until :meth:`optimize`.

        Dense vectors are ``Cold``: memory-mapped, only the pages a search reads are resident
        (not whole chunks: docs/performance.md, Memory). Served shards are read-only;
        :meth:`upsert` flushes. A search runs on the calling thread (a search pool of one): a
        shard holds one segment, so a pool has nothing to run in parallel and only hands each
        search to another thread and back, which costs CPU on every call; concurrent requests
        search on their own threads.
        """
        config = shard_config(spec.dense_size, spec.sparse, self._index, False, self._segment)
        with self._lock:
            self._shards[name] = qe.EdgeShard.create(str(self._path(name)), config)
            self._unsealed[name] = 0  # a collection dropped and made again starts empty

    def optimize(self, name: str) -> None:
        """Rebuild the written shard as the engine serves it best; blocks until done.

        From the threshold's number of points on, the shard is first given its graph's
        configuration (a shard takes index settings when opened with them), so the engine
        builds the HNSW graph, and the quantized vectors if asked for. Below it, the dense
        vectors stay without a graph: searched exactly, the same answers as before the rebuild
        (the documents are numbered in the order they are written), and a shard without BM25
        vectors is left as written. The BM25 index becomes memory-mapped. Run where the shard
        is built, not on a private copy.
        """
        if self._copies is not None:
            raise StoreError("optimize a shard where it is built, not through private copies")
        shard = self._shard(name)
        path = self._path(name)
        stored = json.loads((path / _CONFIG).read_text())
        sparse = SPARSE in (stored.get("sparse_vectors") or {})
        graph = self.count(name) >= self._index.threshold
        if not graph and not sparse:
            # Nothing to gain, and the rebuild orders the points by id, which changes how equal
            # scores tie among points inserted in another order (the training queries' uuids).
            return
        if graph:
            size = stored["vectors"][DENSE]["size"]
            config = shard_config(size, sparse, self._index, graph, self._segment)
            with self._lock:
                shard.close()
                shard = self._shards[name] = qe.EdgeShard.load(str(path), config)
        shard.optimize()
        self._unsealed[name] = 0

    def delete_collection(self, name: str) -> None:
        """Close and remove the shard directory."""
        with self._lock:
            shard = self._shards.pop(name, None)
            if shard is not None:
                shard.close()
        shutil.rmtree(self._path(name), ignore_errors=True)

    def list_collections(self) -> list[str]:
        """Shard directories under the root."""
        return sorted(p.name for p in self._root.iterdir() if p.is_dir() and p.name != _ALIASES)

    def upsert(self, name: str, points: Sequence[Point]) -> None:
        """Upsert in the order given, then flush, so a crash never leaves the batch half-written.

        One operation per point: inside a multi-point operation the engine numbers the points
        in an order that changes from process to process, and that internal order breaks ties
        between equal scores (NFCorpus holds duplicate documents), so two builds of the same
        data would train different rankers and serve different rankings. A point that fills the
        appendable segment seals it (:meth:`optimize`) before the next one is written: each
        segment is indexed alone, so a build holds one segment's indexes in memory, never the
        corpus's. The points are counted as this process writes them (a build writes each once).
        """
        shard = self._shard(name)
        for p in points:
            vectors: dict[str, Any] = {DENSE: _vector(p.dense)}
            if p.sparse is not None:
                vectors[SPARSE] = _vector(p.sparse)
            point = qe.Point(id=p.id, vector=vectors, payload=p.payload)
            shard.update(qe.UpdateOperation.upsert_points([point]))
            self._unsealed[name] = self._unsealed.get(name, 0) + 1
            if self._unsealed[name] == self._segment:
                shard.flush()
                self.optimize(name)
                shard = self._shard(name)
        shard.flush()

    def count(self, name: str) -> int:
        """Exact number of points."""
        return int(self._shard(name).count(qe.CountRequest(exact=True)))

    def _search_params(self, q: VectorQuery) -> qe.SearchParams | None:
        # A sparse search scores every point holding a query term: exact either way.
        return None if isinstance(q.vector, SparseVector) else self._params[q.exact]

    def search(self, name: str, queries: Sequence[VectorQuery]) -> list[Scored]:
        """One batched request for all queries."""
        requests = [
            qe.QueryRequest(
                limit=q.limit,
                query=_query(q),
                params=self._search_params(q),
                with_payload=False,
                with_vector=[SPARSE] if q.with_sparse else False,
            )
            for q in queries
        ]
        results = self._shard(name).query_batch(qe.QueryBatchRequest(requests))
        return [
            scored_from_points(points, q.with_sparse)
            for q, points in zip(queries, results, strict=True)
        ]

    def fused_search(
        self, name: str, prefetch: Sequence[VectorQuery], fusion: Fusion, limit: int
    ) -> list[Hit]:
        """Prefetch with every query, fuse with RRF or DBSF inside the engine."""
        # The stub types the nested fusion classes loosely; the engine accepts them as queries.
        fuse: Any = qe.Fusion.Rrf(k=60) if fusion == "rrf" else qe.Fusion.Dbsf()
        request = qe.QueryRequest(
            limit=limit,
            prefetches=[
                qe.Prefetch(limit=q.limit, query=_query(q), params=self._search_params(q))
                for q in prefetch
            ],
            query=fuse,
            with_payload=True,
        )
        return [hit_from_point(p) for p in self._shard(name).query(request)]

    def score_points(
        self,
        name: str,
        vector: Sequence[float],
        ids: Sequence[PointId],
        payload: Sequence[str] | bool,
    ) -> list[Hit]:
        """A dense search restricted to ``ids`` (a filter on them), with their payload."""
        request = qe.QueryRequest(
            limit=max(len(ids), 1),
            query=qe.Query.Nearest(_vector(vector), using=DENSE),
            filter=qe.Filter(must=[qe.HasIdCondition(set(ids))]),
            with_payload=_payload_selector(payload),
            with_vector=False,
            # Exact: a handful of points, and an HNSW graph may not reach every one of them.
            params=self._params[True],
        )
        return [hit_from_point(p) for p in self._shard(name).query(request)]

    def retrieve(
        self,
        name: str,
        ids: Sequence[PointId],
        payload: Sequence[str] | bool = True,
        vectors: bool = False,
    ) -> list[Hit]:
        """Points by id, in the order asked."""
        shard = self._shard(name)
        records = shard.retrieve(list(ids), _payload_selector(payload), vectors and [DENSE])
        found = {id_key(r.id): r for r in records}
        return [hit_from_point(found[i]) for i in ids if i in found]

    def scroll(
        self, name: str, payload: Sequence[str] | bool, page: int = 1000, vectors: bool = False
    ) -> list[Hit]:
        """Every point, page by page."""
        shard = self._shard(name)
        asked = {"with_payload": _payload_selector(payload), "with_vector": vectors and [DENSE]}
        out: list[Hit] = []
        offset: Any = None
        while True:
            records, offset = shard.scroll(qe.ScrollRequest(offset=offset, limit=page, **asked))
            out.extend(hit_from_point(r) for r in records)
            if offset is None:
                return out

    def set_alias(self, alias: str, name: str) -> None:
        """Write the alias file next to the shards and swap it in atomically."""
        target = self._path(alias)  # same naming rules as collections
        aliases = self._root / _ALIASES
        with tempfile.NamedTemporaryFile("w", dir=aliases, delete=False) as tmp:
            tmp.write(name)
        os.replace(tmp.name, aliases / target.name)

    def resolve_alias(self, alias: str) -> str | None:
        """The collection named in the alias file."""
        path = self._root / _ALIASES / self._path(alias).name
        return path.read_text().strip() if path.exists() else None

    def close(self) -> None:
        """Close every open shard and remove this process's private copies."""
        with self._lock:
            for shard in self._shards.values():
                shard.close()
            self._shards.clear()
            if self._copies is not None:
                copies.remove(self._copies)
