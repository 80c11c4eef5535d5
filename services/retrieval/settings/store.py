"""Where the index lives and how the engine holds it: the store's settings.

:class:`StoreSettings` picks the backend and its location; :class:`DenseIndex` is how either
backend indexes dense vectors, :class:`ServerLayout` how a Qdrant server lays out a version's
collections over its nodes, in memory and on disk.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from services.retrieval.settings._base import REPO_ROOT, Env, Group


@dataclass(frozen=True, slots=True)
class DenseIndex:
    """How the engine indexes a collection's dense vectors (:attr:`StoreSettings.dense_index`).

    Below ``threshold`` points a collection has no graph and every search is exact; from it on,
    an HNSW graph of ``m`` edges per node built with ``ef_construct`` candidates, searched with
    ``ef``, and with ``quantized`` int8 copies of the vectors searched first, ``oversampling``
    times the results asked, then rescored with the original vectors.
    """

    threshold: int
    m: int
    ef_construct: int
    ef: int
    quantized: bool
    oversampling: float

    def threshold_kb(self, dense_size: int) -> int:
        """The threshold in Qdrant's unit: KB of float32 vectors of ``dense_size`` dimensions.

        Qdrant scans a segment's vectors exactly below its ``full_scan_threshold`` (even with a
        graph) and builds no graph below its ``indexing_threshold``, both in this unit.
        """
        return max(1, self.threshold * dense_size * 4 // 1024)


@dataclass(frozen=True, slots=True)
class ServerLayout:
    """How a Qdrant server lays out a version's collections (:attr:`StoreSettings.server_layout`).

    The documents' collection, which grows with the corpus, is cut into ``shards`` spread over
    the server's nodes, each shard in ``replication_factor`` copies, a write acknowledged once
    ``write_consistency_factor`` copies applied it; its original vectors and its payloads may
    stay on disk (``on_disk_vectors``, ``on_disk_payload``) with the int8 copies kept in memory
    (``quantized_in_ram``). The small collections (the training queries, the ranker, the
    corpus's statistics: one point or a few thousand, read by every search or at load) are one
    shard with a copy on each of ``nodes``, so any node answers them alone. None leaves the
    choice to the server's own defaults (its configuration's ``storage`` section), which is
    what a single node and local mode (which ignores all of it) did before these settings.
    """

    shards: int | None = None
    replication_factor: int | None = None
    write_consistency_factor: int | None = None
    nodes: int | None = None
    on_disk_vectors: bool | None = None
    on_disk_payload: bool | None = None
    quantized_in_ram: bool | None = None

    @property
    def small_replication_factor(self) -> int | None:
        """Copies of a small collection: one per node, else as many as the documents'."""
        return self.nodes if self.nodes is not None else self.replication_factor

    def chosen(self) -> str:
        """The settings given (not None), as ``name=value`` pairs: part of a version's name.

        Only those: a version built with the server's defaults keeps the name it had before
        these settings existed, and a setting added later changes no existing name.
        """
        return ",".join(f"{k}={v}" for k, v in asdict(self).items() if v is not None)


#: The quantile of the values int8 quantization covers (Qdrant's usual choice: a few outliers
#: are clipped rather than widening every step).
QUANTIZATION_QUANTILE = 0.99

#: Spellings of the store backend that were renamed, and their names now: ``edge`` was the code's
#: name of the embedded backend, ``qdrant`` the chart's name of the server one.
_RENAMED_BACKENDS = {
    "edge": ("embedded", "the in-process qdrant-edge shard"),
    "qdrant": ("server", "a Qdrant server through qdrant-client"),
}


class StoreSettings(Group):
    """Which Qdrant holds the index, how it indexes the dense vectors, and the alias read.

    Two backends: ``embedded``, Qdrant's engine in-process through qdrant-edge (a shard under
    ``edge_path``), and ``server``, qdrant-client against a Qdrant server (``qdrant_url``) or its
    local mode (``qdrant_path``, tests). The chart's ``store.backend`` uses the same two names.
    """

    backend: Annotated[Literal["embedded", "server"], Env("RETRIEVAL_STORE")] = Field(
        default="embedded",
        description=(
            "embedded: the in-process qdrant-edge shard under edge_path; "
            "server: a Qdrant server at qdrant_url (or qdrant-client's local mode at qdrant_path)."
        ),
    )
    edge_path: Annotated[Path, Env("RETRIEVAL_EDGE_PATH")] = Field(
        default=REPO_ROOT / "var" / "qdrant-edge",
        description="Folder of the qdrant-edge shards (backend=embedded).",
    )
    edge_private_copy: Annotated[bool, Env("RETRIEVAL_EDGE_PRIVATE_COPY")] = Field(
        default=False,
        description=(
            "Open a private copy of the qdrant-edge shard (backend=embedded; needed when several "
            "worker processes serve)."
        ),
    )
    edge_segment_points: Annotated[int, Env("RETRIEVAL_EDGE_SEGMENT_POINTS")] = Field(
        default=65_536,
        ge=1,
        description=(
            "Points of a qdrant-edge segment at most (backend=embedded): a build seals and "
            "indexes each segment as it fills, so its memory is one segment's, whatever the "
            "corpus; a search visits every segment."
        ),
    )
    qdrant_url: Annotated[str | None, Env("RETRIEVAL_QDRANT_URL")] = Field(
        default=None, description="Qdrant server URL (backend=server)."
    )
    qdrant_api_key: Annotated[str | None, Env("RETRIEVAL_QDRANT_API_KEY")] = Field(
        default=None, description="Qdrant API key."
    )
    qdrant_path: Annotated[str | None, Env("RETRIEVAL_QDRANT_PATH")] = Field(
        default=None,
        description="qdrant-client local mode path or ':memory:' (backend=server without a URL).",
    )
    collection: Annotated[str, Env("RETRIEVAL_COLLECTION")] = Field(
        default="nfcorpus", description="Alias the service reads; versions are '<alias>-<hash>'."
    )
    hnsw_threshold: Annotated[int, Env("RETRIEVAL_HNSW_THRESHOLD")] = Field(
        default=10_000,
        ge=0,
        description=(
            "Points from which a collection's dense vectors get an HNSW graph; smaller ones are "
            "searched exactly (NFCorpus's 3,633 documents and its training queries)."
        ),
    )
    hnsw_m: Annotated[int, Env("RETRIEVAL_HNSW_M")] = Field(
        default=32, ge=4, le=128, description="Edges per node of the HNSW graph."
    )
    hnsw_ef_construct: Annotated[int, Env("RETRIEVAL_HNSW_EF_CONSTRUCT")] = Field(
        default=256, ge=4, le=4096, description="Candidates per insertion while the graph is built."
    )
    hnsw_ef: Annotated[int, Env("RETRIEVAL_HNSW_EF")] = Field(
        default=1024,
        ge=1,
        le=4096,
        description="Candidates an HNSW search keeps (at least the number of results asked).",
    )
    quantization: Annotated[Literal["none", "int8"], Env("RETRIEVAL_QUANTIZATION")] = Field(
        default="int8",
        description=(
            "int8: scalar-quantized copies of the dense vectors of HNSW collections, searched "
            "first and rescored with the originals."
        ),
    )
    quantization_oversampling: Annotated[float, Env("RETRIEVAL_QUANTIZATION_OVERSAMPLING")] = Field(
        default=2.0,
        ge=1.0,
        le=16.0,
        description="Quantized candidates per result asked, rescored with the original vectors.",
    )
    qdrant_grpc_port: Annotated[int | None, Env("RETRIEVAL_QDRANT_GRPC_PORT")] = Field(
        default=None,
        ge=1,
        le=65535,
        description=(
            "gRPC port of the Qdrant server at qdrant_url: set, qdrant-client speaks gRPC to it "
            "(the indexer's bulk writes: vectors as packed floats, not JSON text); unset, REST."
        ),
    )
    qdrant_shards: Annotated[int | None, Env("RETRIEVAL_QDRANT_SHARDS")] = Field(
        default=None,
        ge=1,
        description="Shards of the documents' collection on a Qdrant server (unset: its default).",
    )
    qdrant_replication_factor: Annotated[int | None, Env("RETRIEVAL_QDRANT_REPLICATION_FACTOR")] = (
        Field(
            default=None,
            ge=1,
            description="Copies of each shard of the documents' collection (unset: the server's).",
        )
    )
    qdrant_write_consistency_factor: Annotated[
        int | None, Env("RETRIEVAL_QDRANT_WRITE_CONSISTENCY_FACTOR")
    ] = Field(
        default=None,
        ge=1,
        description="Copies that must apply a write before it succeeds (unset: the server's).",
    )
    qdrant_nodes: Annotated[int | None, Env("RETRIEVAL_QDRANT_NODES")] = Field(
        default=None,
        ge=1,
        description=(
            "Nodes of the Qdrant server: the small collections (training queries, ranker, corpus "
            "statistics) are one shard with a copy on each (unset: as many as the documents')."
        ),
    )
    qdrant_on_disk_vectors: Annotated[bool | None, Env("RETRIEVAL_QDRANT_ON_DISK_VECTORS")] = Field(
        default=None,
        description="The documents' original dense vectors stay on disk (unset: the server's).",
    )
    qdrant_on_disk_payload: Annotated[bool | None, Env("RETRIEVAL_QDRANT_ON_DISK_PAYLOAD")] = Field(
        default=None,
        description="The documents' payloads stay on disk (unset: the server's).",
    )
    quantization_always_ram: Annotated[bool | None, Env("RETRIEVAL_QUANTIZATION_ALWAYS_RAM")] = (
        Field(
            default=None,
            description=(
                "The documents' int8 copies stay in memory even when their originals are on disk "
                "(a Qdrant server; unset: the server's)."
            ),
        )
    )

    @property
    def server_layout(self) -> ServerLayout:
        """How a Qdrant server lays out the collections, as the server backend takes it."""
        return ServerLayout(
            shards=self.qdrant_shards,
            replication_factor=self.qdrant_replication_factor,
            write_consistency_factor=self.qdrant_write_consistency_factor,
            nodes=self.qdrant_nodes,
            on_disk_vectors=self.qdrant_on_disk_vectors,
            on_disk_payload=self.qdrant_on_disk_payload,
            quantized_in_ram=self.quantization_always_ram,
        )

    @property
    def dense_index(self) -> DenseIndex:
        """The dense index's parameters, as the store backends take them."""
        return DenseIndex(
            threshold=self.hnsw_threshold,
            m=self.hnsw_m,
            ef_construct=self.hnsw_ef_construct,
            ef=self.hnsw_ef,
            quantized=self.quantization == "int8",
            oversampling=self.quantization_oversampling,
        )

    @field_validator("backend", mode="before")
    @classmethod
    def _refuse_renamed_backends(cls, value: object) -> object:
        renamed = _RENAMED_BACKENDS.get(value.strip().lower()) if isinstance(value, str) else None
        if renamed:
            name, what = renamed
            raise ValueError(
                f"RETRIEVAL_STORE={value} is an old name: use RETRIEVAL_STORE={name} ({what})"
            )
        return value

    @model_validator(mode="after")
    def _segments_take_the_graph(self) -> StoreSettings:
        # A sealed segment is indexed once, as it fills: below the graph's threshold it would be
        # left exact and rebuilt, whole, once the collection outgrew it. Only the embedded store
        # has such segments: a Qdrant server's threshold is no concern of this bound.
        if self.backend == "embedded" and self.edge_segment_points < self.hnsw_threshold:
            raise ValueError(
                f"RETRIEVAL_EDGE_SEGMENT_POINTS ({self.edge_segment_points}) must be at least "
                f"RETRIEVAL_HNSW_THRESHOLD ({self.hnsw_threshold})"
            )
        return self

    @model_validator(mode="after")
    def _server_needs_a_location(self) -> StoreSettings:
        if self.backend == "server" and not (self.qdrant_url or self.qdrant_path):
            raise ValueError("RETRIEVAL_STORE=server needs RETRIEVAL_QDRANT_URL or _QDRANT_PATH")
        return self

    @model_validator(mode="after")
    def _copies_that_exist(self) -> StoreSettings:
        # A server would accept these and then fail every write (more acknowledgements asked
        # than copies exist) or leave copies unplaced: refuse them where they are set.
        rf, wcf, nodes = (
            self.qdrant_replication_factor,
            self.qdrant_write_consistency_factor,
            self.qdrant_nodes,
        )
        if wcf is not None and rf is not None and wcf > rf:
            raise ValueError(
                f"RETRIEVAL_QDRANT_WRITE_CONSISTENCY_FACTOR={wcf} asks more copies than "
                f"RETRIEVAL_QDRANT_REPLICATION_FACTOR={rf} makes"
            )
        if rf is not None and nodes is not None and rf > nodes:
            raise ValueError(
                f"RETRIEVAL_QDRANT_REPLICATION_FACTOR={rf} needs as many nodes, "
                f"RETRIEVAL_QDRANT_NODES={nodes}"
            )
        return self
