"""The ``server`` store backend: qdrant-client against a Qdrant server or its local mode (tests).

The same class serves both: ``QdrantClient(url=...)`` talks to a server over HTTP (or gRPC, when
given its port), ``QdrantClient(path=...)`` or ``":memory:"`` runs qdrant-client's local engine,
which is how the test suite exercises every line of this backend without a server binary.

The server indexes by itself, in the background: a collection is created with the same dense
index settings as an embedded shard (an HNSW graph from the threshold on, in Qdrant's unit, KB of
vectors, per segment; the BM25 index on disk), and :meth:`ServerStore.optimize` waits until the
server reports it done. Local mode takes the settings and searches exactly whatever they say.

A server may hold the index over several nodes (:class:`~services.retrieval.settings.ServerLayout`):
the documents' collection sharded and replicated, its vectors and payloads on disk if asked; a
small collection (:attr:`~services.retrieval.types.CollectionSpec.small`) one shard with a copy
on every node. What is sent to the server is tested at qdrant-client's boundary
(``tests/integration/test_server_wire.py``), since local mode ignores it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from services.retrieval.settings import (
    QUANTIZATION_QUANTILE,
    DenseIndex,
    ServerLayout,
    StoreSettings,
)
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

# Local mode raises ValueError for a missing collection; the HTTP client raises the others.
_ERRORS = (ResponseHandlingException, UnexpectedResponse, ConnectionError, TimeoutError, ValueError)


def _vector(v: Sequence[float] | SparseVector) -> Any:
    if isinstance(v, SparseVector):
        return models.SparseVector(indices=v.indices, values=v.values)
    return [float(x) for x in v]


def search_params(index: DenseIndex, exact: bool) -> models.SearchParams:
    """A dense search's parameters: HNSW's ``ef`` and rescoring, or an exact scan."""
    if exact:
        return models.SearchParams(
            exact=True, quantization=models.QuantizationSearchParams(ignore=True)
        )
    # Without quantization in the settings, a shard's quantized vectors (if built) are ignored.
    rescore = (
        models.QuantizationSearchParams(rescore=True, oversampling=index.oversampling)
        if index.quantized
        else models.QuantizationSearchParams(ignore=True)
    )
    return models.SearchParams(hnsw_ef=index.ef, quantization=rescore)


class ServerStore:
    """The :class:`~services.retrieval.store.base.Store` on qdrant-client."""

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        path: str | None = None,
        timeout_s: int = 10,
        index: DenseIndex | None = None,
        optimize_timeout_s: float = 3600.0,
        layout: ServerLayout | None = None,
        grpc_port: int | None = None,
    ) -> None:
        """Connect to ``url`` or open local mode at ``path`` (``":memory:"`` for RAM only).

        ``index`` is how dense vectors are indexed and searched (the settings' defaults if
        None); :meth:`optimize` waits up to ``optimize_timeout_s`` for the server's indexing.
        ``layout`` is how new collections are spread and held (the server's defaults if None).
        With ``grpc_port`` the client speaks gRPC to the server at ``url``'s host: a batch of
        points travels as packed floats, where REST sends every number as JSON text.
        """
        self._index = index if index is not None else StoreSettings().dense_index
        self._layout = layout if layout is not None else ServerLayout()
        self._params = {exact: search_params(self._index, exact) for exact in (False, True)}
        self._optimize_timeout_s = optimize_timeout_s
        self._local = not url
        if url:
            grpc: dict[str, Any] = (
                {"prefer_grpc": True, "grpc_port": grpc_port} if grpc_port else {}
            )
            self._client = QdrantClient(url=url, api_key=api_key, timeout=timeout_s, **grpc)
        elif path == ":memory:":
            self._client = QdrantClient(location=":memory:")
        elif path:
            self._client = QdrantClient(path=path)
        else:
            raise StoreError("ServerStore needs a url or a path")

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except _ERRORS as e:
            raise StoreError(f"qdrant {what} failed: {e}") from e

    def collection_exists(self, name: str) -> bool:
        """Whether the collection exists on the server."""
        return bool(self._call("collection_exists", self._client.collection_exists, name))

    def create_collection(self, name: str, spec: CollectionSpec) -> None:
        """Cosine dense vector plus an optional plain (dot-product) sparse vector.

        Segments from the threshold's size on get an HNSW graph (and int8 copies of the vectors,
        if asked for); the BM25 index of those is kept on disk, memory-mapped. The layout's
        shards, copies and placement on disk apply to a collection that grows with the corpus;
        a small one is one shard copied to every node (:meth:`_placement`).
        """
        index, layout = self._index, self._layout
        threshold_kb = index.threshold_kb(spec.dense_size)
        # The small collections are read whole or by every search: their few vectors stay in
        # memory, whatever the documents' placement.
        on_disk = None if spec.small else layout.on_disk_vectors
        # Qdrant's placement flags as every 1.x server takes them (on_disk, always_ram,
        # on_disk_payload); servers from 1.19 also take a newer `memory` field, which an older
        # external Qdrant would refuse.
        quantization = (
            models.ScalarQuantization(
                scalar=models.ScalarQuantizationConfig(
                    type=models.ScalarType.INT8,
                    quantile=QUANTIZATION_QUANTILE,
                    always_ram=None if spec.small else layout.quantized_in_ram,
                )
            )
            if index.quantized
            else None
        )
        sparse = models.SparseVectorParams(index=models.SparseIndexParams(on_disk=True))
        dense = models.VectorParams(
            size=spec.dense_size, distance=models.Distance.COSINE, on_disk=on_disk
        )
        self._call(
            "create_collection",
            self._client.create_collection,
            name,
            vectors_config={DENSE: dense},
            sparse_vectors_config={SPARSE: sparse} if spec.sparse else None,
            hnsw_config=models.HnswConfigDiff(
                m=index.m, ef_construct=index.ef_construct, full_scan_threshold=threshold_kb
            ),
            optimizers_config=models.OptimizersConfigDiff(indexing_threshold=threshold_kb),
            quantization_config=quantization,
            on_disk_payload=None if spec.small else layout.on_disk_payload,
            **self._placement(spec),
        )

    def _placement(self, spec: CollectionSpec) -> dict[str, int | None]:
        """Shards and copies of a new collection (None: the server's default).

        A small collection is one shard with a copy on every node: any node answers its reads
        alone, where shards would make each read ask every node for its part of a few points.
        """
        layout = self._layout
        if spec.small:
            return {
                "shard_number": 1,
                "replication_factor": layout.small_replication_factor,
                "write_consistency_factor": layout.write_consistency_factor,
            }
        return {
            "shard_number": layout.shards,
            "replication_factor": layout.replication_factor,
            "write_consistency_factor": layout.write_consistency_factor,
        }

    def optimize(self, name: str) -> None:
        """Wait until the server has indexed the collection (its status is green).

        A grey collection has optimizations pending that no update has started (after a
        restart): an empty change of its optimizer settings starts them.
        """
        deadline = time.monotonic() + self._optimize_timeout_s
        while True:
            info = self._call("get_collection", self._client.get_collection, name)
            if info.status == models.CollectionStatus.GREEN:
                return
            if info.status == models.CollectionStatus.RED:
                raise StoreError(f"qdrant collection {name} failed to optimize")
            if info.status == models.CollectionStatus.GREY:
                self._call(
                    "update_collection",
                    self._client.update_collection,
                    name,
                    optimizers_config=models.OptimizersConfigDiff(),
                )
            if time.monotonic() > deadline:
                raise StoreError(f"qdrant collection {name} still indexing after the timeout")
            time.sleep(1.0)

    def delete_collection(self, name: str) -> None:
        """Drop the collection if it exists."""
        self._call("delete_collection", self._client.delete_collection, name)

    def list_collections(self) -> list[str]:
        """Names of all collections."""
        response = self._call("get_collections", self._client.get_collections)
        return sorted(c.name for c in response.collections)

    def upsert(self, name: str, points: Sequence[Point]) -> None:
        """Upsert and wait until the batch is applied: one request, the batch as given.

        The caller sizes the batches (the indexer by bytes, ``RETRIEVAL_UPSERT_BYTES``);
        qdrant-client's ``upsert`` neither splits nor joins them, on REST or gRPC.
        """
        structs = []
        for p in points:
            vectors: dict[str, Any] = {DENSE: _vector(p.dense)}
            if p.sparse is not None:
                vectors[SPARSE] = _vector(p.sparse)
            structs.append(models.PointStruct(id=p.id, vector=vectors, payload=p.payload))
        self._call("upsert", self._client.upsert, name, points=structs, wait=True)

    def count(self, name: str) -> int:
        """Exact number of points."""
        return int(self._call("count", self._client.count, name, exact=True).count)

    def _search_params(self, q: VectorQuery) -> models.SearchParams | None:
        # A sparse search scores every point holding a query term: exact either way. Local mode
        # scans every vector, so it is exact too (and warns of search parameters it ignores).
        if self._local or isinstance(q.vector, SparseVector):
            return None
        return self._params[q.exact]

    def search(self, name: str, queries: Sequence[VectorQuery]) -> list[Scored]:
        """One batched request for all queries."""
        requests = [
            models.QueryRequest(
                query=_vector(q.vector),
                using=q.using,
                limit=q.limit,
                params=self._search_params(q),
                with_payload=False,
                with_vector=[SPARSE] if q.with_sparse else False,
            )
            for q in queries
        ]
        responses = self._call(
            "query_batch_points", self._client.query_batch_points, name, requests=requests
        )
        return [
            scored_from_points(r.points, q.with_sparse)
            for q, r in zip(queries, responses, strict=True)
        ]

    def fused_search(
        self, name: str, prefetch: Sequence[VectorQuery], fusion: Fusion, limit: int
    ) -> list[Hit]:
        """Prefetch with every query, fuse with RRF or DBSF inside Qdrant."""
        method = models.Fusion.RRF if fusion == "rrf" else models.Fusion.DBSF
        response = self._call(
            "query_points",
            self._client.query_points,
            name,
            prefetch=[
                models.Prefetch(
                    query=_vector(q.vector),
                    using=q.using,
                    limit=q.limit,
                    params=self._search_params(q),
                )
                for q in prefetch
            ],
            query=models.FusionQuery(fusion=method),
            limit=limit,
            with_payload=True,
        )
        return [hit_from_point(p) for p in response.points]

    def score_points(
        self,
        name: str,
        vector: Sequence[float],
        ids: Sequence[PointId],
        payload: Sequence[str] | bool,
    ) -> list[Hit]:
        """A dense search restricted to ``ids`` (a filter on them), with their payload."""
        response = self._call(
            "query_points",
            self._client.query_points,
            name,
            query=_vector(vector),
            using=DENSE,
            query_filter=models.Filter(must=[models.HasIdCondition(has_id=list(ids))]),
            limit=max(len(ids), 1),
            with_payload=payload if isinstance(payload, bool) else list(payload),
            # Exact: a handful of points, and an HNSW graph may not reach every one of them.
            search_params=None if self._local else self._params[True],
        )
        return [hit_from_point(p) for p in response.points]

    def retrieve(
        self,
        name: str,
        ids: Sequence[PointId],
        payload: Sequence[str] | bool = True,
        vectors: bool = False,
    ) -> list[Hit]:
        """Points by id, in the order asked."""
        records = self._call(
            "retrieve",
            self._client.retrieve,
            name,
            ids=list(ids),
            with_payload=payload if isinstance(payload, bool) else list(payload),
            with_vectors=[DENSE] if vectors else False,
        )
        found = {id_key(r.id): r for r in records}
        return [hit_from_point(found[i]) for i in ids if i in found]

    def scroll(
        self, name: str, payload: Sequence[str] | bool, page: int = 1000, vectors: bool = False
    ) -> list[Hit]:
        """Every point, page by page."""
        selector = payload if isinstance(payload, bool) else list(payload)
        out: list[Hit] = []
        offset: Any = None
        while True:
            records, offset = self._call(
                "scroll",
                self._client.scroll,
                name,
                limit=page,
                offset=offset,
                with_payload=selector,
                with_vectors=[DENSE] if vectors else False,
            )
            out.extend(hit_from_point(r) for r in records)
            if offset is None:
                return out

    def set_alias(self, alias: str, name: str) -> None:
        """Create or move the alias in one atomic alias operation."""
        actions: list[Any] = []
        if self.resolve_alias(alias) is not None:
            actions.append(
                models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias))
            )
        actions.append(
            models.CreateAliasOperation(
                create_alias=models.CreateAlias(collection_name=name, alias_name=alias)
            )
        )
        self._call("update_collection_aliases", self._client.update_collection_aliases, actions)

    def resolve_alias(self, alias: str) -> str | None:
        """The collection the alias points at, if any."""
        response = self._call("get_aliases", self._client.get_aliases)
        for a in response.aliases:
            if a.alias_name == alias:
                return str(a.collection_name)
        return None

    def close(self) -> None:
        """Close the client (and the local-mode storage lock)."""
        self._client.close()
