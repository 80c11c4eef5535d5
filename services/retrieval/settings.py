"""Settings of the retrieval core, shared by the indexer and the MCP server.

Grouped by concern: where the index lives (:class:`StoreSettings`), the hybrid first stage
(:class:`HybridSettings`), RM3 feedback (:class:`FeedbackSettings`), the kNN votes
(:class:`KnnSettings`), the learned ranker (:class:`RankerSettings`) and slicing for tests and
smoke runs (:class:`ExperimentSettings`). The algorithms take their group, not the whole object.

Every field is read from one environment variable. Top-level fields use the ``RETRIEVAL_`` prefix
(``RETRIEVAL_MODE``); grouped fields are read from flat names too, which each field declares
with :class:`Env` metadata (``RETRIEVAL_KNN_NEIGHBOURS`` -> ``knn.neighbours``,
``RETRIEVAL_STORE`` -> ``store.backend``). Services build one instance in ``__main__`` and pass
it down.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from services.nfcorpus.dataset import BEIR_NFCORPUS_MD5, BEIR_NFCORPUS_URL, DEFAULT_DATA_DIR

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class Env:
    """Field metadata: the environment variable a grouped setting is read from."""

    name: str


class _Group(BaseModel):
    """A group of settings; each field names its variable with :class:`Env` metadata."""

    model_config = ConfigDict(frozen=True, extra="forbid")


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


#: The quantile of the values int8 quantization covers (Qdrant's usual choice: a few outliers
#: are clipped rather than widening every step).
QUANTIZATION_QUANTILE = 0.99

#: Spellings of the store backend that were renamed, and their names now: ``edge`` was the code's
#: name of the embedded backend, ``qdrant`` the chart's name of the server one.
_RENAMED_BACKENDS = {
    "edge": ("embedded", "the in-process qdrant-edge shard"),
    "qdrant": ("server", "a Qdrant server through qdrant-client"),
}


class StoreSettings(_Group):
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
    def _server_needs_a_location(self) -> StoreSettings:
        if self.backend == "server" and not (self.qdrant_url or self.qdrant_path):
            raise ValueError("RETRIEVAL_STORE=server needs RETRIEVAL_QDRANT_URL or _QDRANT_PATH")
        return self


class HybridSettings(_Group):
    """The first stage: dense and BM25 candidates and how they are fused."""

    candidates: Annotated[int, Env("RETRIEVAL_CANDIDATES")] = Field(
        default=100, ge=1, le=1000, description="Candidates each retriever contributes to fusion."
    )
    fusion: Annotated[Literal["zscore", "minmax", "rrf", "dbsf"], Env("RETRIEVAL_FUSION")] = Field(
        default="dbsf",
        description="How dense and sparse candidates are fused (rrf/dbsf: inside Qdrant).",
    )
    dense_weight: Annotated[float, Env("RETRIEVAL_DENSE_WEIGHT")] = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Weight of the dense side in zscore/minmax fusion (ablations).",
    )


class FeedbackSettings(_Group):
    """RM3 pseudo-relevance feedback on the BM25 side (chosen on dev queries)."""

    docs: Annotated[int, Env("RETRIEVAL_FEEDBACK_DOCS")] = Field(
        default=5, ge=0, le=100, description="Feedback documents (0 switches feedback off)."
    )
    terms: Annotated[int, Env("RETRIEVAL_FEEDBACK_TERMS")] = Field(
        default=20, ge=1, le=200, description="Expansion terms."
    )
    weight: Annotated[float, Env("RETRIEVAL_FEEDBACK_WEIGHT")] = Field(
        default=0.5, ge=0.0, le=1.0, description="Weight of the expansion in the RM3 query."
    )


class KnnSettings(_Group):
    """Votes of the nearest training queries."""

    neighbours: Annotated[int, Env("RETRIEVAL_KNN_NEIGHBOURS")] = Field(
        default=20, ge=1, le=200, description="Training queries that vote."
    )
    power: Annotated[float, Env("RETRIEVAL_KNN_POWER")] = Field(
        default=5.0, ge=0.0, le=20.0, description="Vote weight = similarity ** power."
    )
    weight: Annotated[float, Env("RETRIEVAL_KNN_WEIGHT")] = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Weight of votes when fused without the ranker (ablation).",
    )
    vote_depth: Annotated[int, Env("RETRIEVAL_VOTE_DEPTH")] = Field(
        default=100,
        ge=0,
        le=1000,
        description="Most-voted documents added to the ranker's candidates.",
    )


class RankerSettings(_Group):
    """The learned ranker."""

    enabled: Annotated[bool, Env("RETRIEVAL_USE_RANKER")] = Field(
        default=True,
        description="Rank with the learned model (else fuse hybrid and kNN votes: ablation).",
    )


class ExperimentSettings(_Group):
    """Slices of the data for tests and smoke runs; unset in production."""

    max_train_queries: Annotated[int | None, Env("RETRIEVAL_MAX_TRAIN_QUERIES")] = Field(
        default=None, ge=10, description="Use only the first N training queries."
    )
    max_docs: Annotated[int | None, Env("RETRIEVAL_MAX_DOCS")] = Field(
        default=None, ge=1, description="Index only the first N documents."
    )


def _is_group(info: FieldInfo) -> bool:
    return isinstance(info.annotation, type) and issubclass(info.annotation, _Group)


class _Environment(EnvSettingsSource):
    """``RETRIEVAL_<name>`` for top-level fields; each grouped field from its :class:`Env`."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        """Top-level fields as pydantic-settings reads them; groups are read in ``__call__``."""
        if _is_group(field):
            return None, field_name, False
        return super().get_field_value(field, field_name)

    def __call__(self) -> dict[str, Any]:
        """Top-level values, plus ``{group: {field: raw value}}`` for each variable set."""
        found = super().__call__()
        for group, info in self.settings_cls.model_fields.items():
            if not _is_group(info):
                continue
            assert isinstance(info.annotation, type)
            for name, field in info.annotation.model_fields.items():
                for env in (m for m in field.metadata if isinstance(m, Env)):
                    value = self.env_vars.get(env.name.lower())
                    if value is not None:
                        found.setdefault(group, {})[name] = value
        return found


class RetrievalSettings(BaseSettings):
    """Where the data lives, which store to use and how to rank."""

    model_config = SettingsConfigDict(env_prefix="RETRIEVAL_", extra="ignore")

    data_dir: Path = Field(
        default=DEFAULT_DATA_DIR,
        description="BEIR NFCorpus folder (corpus.jsonl[.gz], queries.jsonl[.gz], qrels/).",
    )
    download_url: str = Field(
        default=BEIR_NFCORPUS_URL,
        description="Archive fetched when data_dir lacks a file of the data set.",
    )
    download_md5: str = Field(default=BEIR_NFCORPUS_MD5, description="md5 the archive must have.")
    cache_dir: Path = Field(
        default=Path.home() / ".cache" / "nfcorpus-retrieval",
        description="Cache of computed document vectors, keyed by model and corpus hash.",
    )
    encode_threads: int = Field(default=1, ge=1, le=64, description="onnxruntime intra-op threads.")
    encode_batch_size: int = Field(
        default=32, ge=1, le=1024, description="Texts per encoder call when the indexer encodes."
    )
    index_chunk: int = Field(
        default=256,
        ge=1,
        le=65_536,
        description=(
            "Documents per chunk of a build: encoded and checkpointed together (a build "
            "started again encodes at most the chunk it was on)."
        ),
    )
    index_slices: int = Field(
        default=1,
        ge=1,
        le=1024,
        description=(
            "Slices a build's encoding is dealt into, each a process (make index: one per "
            "core) or an Indexed Job's pod; a finishing step writes the collection."
        ),
    )
    index_wait_seconds: float = Field(
        default=0.0,
        ge=0.0,
        le=7 * 24 * 3600.0,
        description=(
            "Seconds a build's finishing step waits for the slices' checkpoints before it "
            "names the slices that did not finish (pods of a Job running beside it)."
        ),
    )
    upsert_bytes: int = Field(
        default=4 * 1024 * 1024,
        ge=64 * 1024,
        le=256 * 1024 * 1024,
        description="Bytes of points (vectors and payloads) per write to the store.",
    )
    mode: Literal["full", "zero-shot"] = Field(
        default="full",
        description="full: kNN votes of training queries + learned ranker; zero-shot: hybrid only.",
    )
    supervision: Literal["train+dev", "train"] = Field(
        default="train+dev",
        description="Queries that vote and teach the ranker; 'train' keeps dev for measuring.",
    )
    store: StoreSettings = StoreSettings()
    hybrid: HybridSettings = HybridSettings()
    feedback: FeedbackSettings = FeedbackSettings()
    knn: KnnSettings = KnnSettings()
    ranker: RankerSettings = RankerSettings()
    experiment: ExperimentSettings = ExperimentSettings()

    def updated(self, **changes: Any) -> RetrievalSettings:
        """A validated copy with ``changes``; a group takes a dict of just its fields to change.

        ``settings.updated(mode="zero-shot", store={"edge_private_copy": True})``
        """
        data = self.model_dump()
        for key, value in changes.items():
            data[key] = {**data[key], **value} if isinstance(value, dict) else value
        return type(self).model_validate(data)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments first, then the environment."""
        return init_settings, _Environment(settings_cls)
