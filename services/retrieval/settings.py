"""Settings of the retrieval core, shared by the indexer, the MCP server and the evaluators.

Every field is read from the environment with the ``RETRIEVAL_`` prefix (for example
``RETRIEVAL_STORE=server``); services build one instance in ``__main__`` and pass it down.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parents[2]
BEIR_NFCORPUS_URL = (
    "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/nfcorpus.zip"
)
BEIR_NFCORPUS_MD5 = "a89dba18a62ef92f7d323ec890a0d38d"


class RetrievalSettings(BaseSettings):
    """Where the data lives, which store to use and how to rank."""

    model_config = SettingsConfigDict(env_prefix="RETRIEVAL_", extra="ignore")

    data_dir: Path = Field(
        default=REPO_ROOT.parent / "shared" / "data" / "nfcorpus",
        description="BEIR NFCorpus folder (corpus.jsonl[.gz], queries.jsonl[.gz], qrels/).",
    )
    download_url: str = Field(
        default=BEIR_NFCORPUS_URL, description="Archive fetched when data_dir holds no corpus."
    )
    download_md5: str = Field(default=BEIR_NFCORPUS_MD5, description="md5 the archive must have.")
    store: Literal["edge", "server"] = Field(
        default="edge",
        description="edge: embedded qdrant-edge shard; server: Qdrant at qdrant_url.",
    )
    edge_path: Path = Field(
        default=REPO_ROOT / "var" / "qdrant-edge", description="Folder of the embedded shards."
    )
    edge_private_copy: bool = Field(
        default=False,
        description="Open a private copy of the shard (needed when several worker processes serve).",
    )
    qdrant_url: str | None = Field(default=None, description="Qdrant server URL (store=server).")
    qdrant_api_key: str | None = Field(default=None, description="Qdrant API key, if any.")
    qdrant_path: str | None = Field(
        default=None,
        description="qdrant-client local mode path or ':memory:' (store=server without a URL).",
    )
    collection: str = Field(default="nfcorpus", description="Alias the service reads.")
    cache_dir: Path = Field(
        default=Path.home() / ".cache" / "nfcorpus-retrieval",
        description="Cache of computed document vectors, keyed by model and corpus hash.",
    )
    encode_threads: int = Field(default=1, ge=1, le=64, description="onnxruntime intra-op threads.")
    encode_batch_size: int = Field(default=32, ge=1, le=1024)
    candidates: int = Field(
        default=100, ge=1, le=1000, description="Candidates each retriever contributes to fusion."
    )
    dense_weight: float = Field(
        default=0.5, ge=0.0, le=1.0, description="Weight of the dense side in score fusion."
    )
    fusion: Literal["zscore", "minmax", "rrf", "dbsf"] = Field(
        default="dbsf",
        description="How dense and sparse candidates are fused (rrf/dbsf: inside Qdrant).",
    )
    feedback_docs: int = Field(
        default=5, ge=0, le=100, description="RM3 feedback documents (0 switches feedback off)."
    )
    feedback_terms: int = Field(default=20, ge=1, le=200, description="RM3 expansion terms.")
    feedback_weight: float = Field(
        default=0.5, ge=0.0, le=1.0, description="Weight of the expansion in the RM3 query."
    )
    mode: Literal["full", "zero-shot"] = Field(
        default="full",
        description="full: kNN votes of training queries + learned ranker; zero-shot: hybrid only.",
    )
    supervision: Literal["train+dev", "train"] = Field(
        default="train+dev",
        description="Queries that vote and teach the ranker; 'train' keeps dev for measuring.",
    )
    use_ranker: bool = Field(
        default=True, description="Rank with the learned model (else fuse hybrid and kNN votes)."
    )
    knn_neighbours: int = Field(default=20, ge=1, le=200, description="Training queries that vote.")
    knn_power: float = Field(
        default=5.0, ge=0.0, le=20.0, description="Vote weight = similarity ** power."
    )
    knn_weight: float = Field(
        default=0.5, ge=0.0, le=1.0, description="Weight of votes when fused without the ranker."
    )
    vote_depth: int = Field(
        default=100, ge=0, le=1000, description="Most-voted documents added to the candidates."
    )
    max_train_queries: int | None = Field(
        default=None,
        ge=10,
        description="Use only the first N training queries (tests, smoke runs).",
    )
    max_docs: int | None = Field(
        default=None, ge=1, description="Index only the first N documents (tests, smoke runs)."
    )

    @model_validator(mode="after")
    def _server_needs_a_location(self) -> RetrievalSettings:
        if self.store == "server" and not (self.qdrant_url or self.qdrant_path):
            raise ValueError("RETRIEVAL_STORE=server needs RETRIEVAL_QDRANT_URL or _QDRANT_PATH")
        return self
