"""Settings of the MCP server process (``MCP_`` environment prefix)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from services.common.auth import AuthFields
from services.common.guard.hosts import HostFields


class McpServerSettings(BaseSettings, AuthFields, HostFields):
    """Where the server listens and which requests it accepts.

    ``MCP_AUTH_TOKENS[_FILE]``: its callers; ``MCP_METRICS_TOKEN[_FILE]``: its scraper.
    """

    model_config = SettingsConfigDict(env_prefix="MCP_", extra="ignore")
    #: The server's callers are purple agents (the chart gives them one bare token); other
    #: callers' tokens are given a name. The server scopes nothing by caller.
    unnamed_caller: ClassVar[str | None] = "purple-agent"

    host: str = Field(default="127.0.0.1", description="Interface to bind.")
    port: int = Field(default=8000, ge=1, le=65535, description="TCP port.")
    search_threads: int = Field(
        default=2, ge=1, le=64, description="Searches run at once (each uses one core)."
    )
    encode_batch: int = Field(
        default=8,
        ge=1,
        le=64,
        description="Queries that share one model pass at most: those waiting at once are "
        "encoded together, to the same bits as alone; 1 encodes each query alone.",
    )
    rank_batch: int = Field(
        default=8,
        ge=1,
        le=64,
        description="Searches that share one ranking pass at most: those waiting for a thread "
        "at once go to the store in the same calls and through one model pass, each to the same "
        "answer as alone; 1 ranks each alone.",
    )
    encode_wait_ms: float = Field(
        default=0.0,
        ge=0.0,
        le=50.0,
        description="How long the first query of a model pass waits for others to share it; "
        "0: never (passes take the queries already waiting).",
    )
    result_cache_entries: int = Field(
        default=4096,
        ge=0,
        description="Answers kept per process, keyed by index version, query, top_k and "
        "include_text, so a query asked again costs no search (an evaluation run repeats the "
        "same 323); 0 switches the cache off (benchmarks).",
    )
    result_cache_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=0,
        description="Estimated memory the cached answers may hold together (what an answer "
        "takes: docs/performance.md, Result cache).",
    )
    ready_cache_s: float = Field(
        default=2.0, ge=0.0, description="How long a readiness answer is reused."
    )
