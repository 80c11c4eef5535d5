"""Settings of the retrieval core, shared by the indexer and the MCP server.

Grouped by concern: where the index lives (:class:`StoreSettings`), the hybrid first stage
(:class:`HybridSettings`), RM3 feedback (:class:`FeedbackSettings`), the kNN votes
(:class:`KnnSettings`), the learned ranker (:class:`RankerSettings`) and slicing for tests and
smoke runs (:class:`ExperimentSettings`). The algorithms take their group, not the whole object.

Every field is read from one environment variable. Top-level fields use the ``RETRIEVAL_`` prefix
(``RETRIEVAL_MODE``); grouped fields are read from flat names too, which each field declares
with :class:`Env` metadata (``RETRIEVAL_KNN_NEIGHBOURS`` -> ``knn.neighbours``,
``RETRIEVAL_STORE`` -> ``store.backend``). Services build one instance in ``__main__`` and pass
it down. The store's group lives in :mod:`.store` (with how the engine holds the index), the
groups' common base in :mod:`._base`; every name is imported from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from services.nfcorpus.dataset import BEIR_NFCORPUS_MD5, BEIR_NFCORPUS_URL, DEFAULT_DATA_DIR
from services.retrieval.settings._base import REPO_ROOT, Env, Group
from services.retrieval.settings.store import (
    QUANTIZATION_QUANTILE,
    DenseIndex,
    ServerLayout,
    StoreSettings,
)

__all__ = [
    "QUANTIZATION_QUANTILE",
    "REPO_ROOT",
    "DenseIndex",
    "Env",
    "ExperimentSettings",
    "FeedbackSettings",
    "HybridSettings",
    "KnnSettings",
    "RankerSettings",
    "RetrievalSettings",
    "ServerLayout",
    "StoreSettings",
]


class HybridSettings(Group):
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


class FeedbackSettings(Group):
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


class KnnSettings(Group):
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


class RankerSettings(Group):
    """The learned ranker."""

    enabled: Annotated[bool, Env("RETRIEVAL_USE_RANKER")] = Field(
        default=True,
        description="Rank with the learned model (else fuse hybrid and kNN votes: ablation).",
    )


class ExperimentSettings(Group):
    """Slices of the data for tests and smoke runs; unset in production."""

    max_train_queries: Annotated[int | None, Env("RETRIEVAL_MAX_TRAIN_QUERIES")] = Field(
        default=None, ge=10, description="Use only the first N training queries."
    )
    max_docs: Annotated[int | None, Env("RETRIEVAL_MAX_DOCS")] = Field(
        default=None, ge=1, description="Index only the first N documents."
    )


def _is_group(info: FieldInfo) -> bool:
    return isinstance(info.annotation, type) and issubclass(info.annotation, Group)


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
