"""Settings of the purple agent: where it listens, which MCP server it calls and its time budget.

Every field is read from the environment with the ``PURPLE_`` prefix (``PURPLE_MCP_URL``,
``PURPLE_DEADLINE_S``, ``PURPLE_CARD_URL``, ...); ``__main__`` overrides some of them from the
command line and passes the one instance down.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from services.common.auth import AuthFields
from services.common.guard.hosts import HostFields
from services.common.limits import HARD_DEADLINE_S, MAX_TOP_K
from services.common.tokens import ClientToken
from services.purple_agent.search import SearchProtocol


class PurpleSettings(BaseSettings, AuthFields, HostFields):
    """Configuration of one purple agent process.

    ``PURPLE_AUTH_TOKENS[_FILE]``: its callers; ``PURPLE_METRICS_TOKEN[_FILE]``: its scraper.
    """

    model_config = SettingsConfigDict(env_prefix="PURPLE_", extra="ignore")

    host: str = Field(default="127.0.0.1", description="Interface the server binds to.")
    port: int = Field(default=9010, ge=0, le=65535, description="Port the server binds to.")
    card_url: str | None = Field(
        default=None,
        description="Public URL announced in the agent card (default http://{host}:{port}/).",
    )
    mcp_url: str = Field(
        default="http://127.0.0.1:8000/mcp",
        description="The search server: its MCP endpoint, its base URL or its REST endpoint.",
    )
    search_protocol: SearchProtocol = Field(
        default="auto",
        description="How to call it: found out by asking the server (auto), or MCP / REST only.",
    )
    mcp_token: str | None = Field(
        default=None, description="Bearer token sent to the MCP server, if it requires one."
    )
    mcp_token_file: Path | None = Field(
        default=None, description="File holding the MCP server's token (a mounted Secret)."
    )
    deadline_s: float = Field(
        default=30.0, gt=0, description="Overall time budget of one request, in seconds (< 60)."
    )
    mcp_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Timeout of one MCP call attempt (capped by what is left of the deadline).",
    )
    mcp_retries: int = Field(
        default=6,
        ge=0,
        le=20,
        description="Retries of an MCP call the server refused or never got (not of timeouts); "
        "with the backoff they span a restart of the server behind its Service (about 4 s).",
    )
    mcp_backoff_s: float = Field(
        default=0.1, ge=0, le=5, description="First retry delay; doubles on each retry, up to 1 s."
    )
    mcp_max_connections: int = Field(
        default=100, ge=1, le=10_000, description="Size of the pooled HTTP connection set."
    )
    candidates: int = Field(
        default=20,
        ge=1,
        le=MAX_TOP_K,
        description="Candidates asked from the MCP server: max(top_k, candidates).",
    )
    max_tasks: int = Field(
        default=10_000, ge=1, description="Tasks kept in memory (oldest dropped first)."
    )
    max_task_bytes: int = Field(
        default=16 << 20, ge=1 << 16, description="Memory the kept tasks may take, in bytes."
    )
    max_tasks_per_caller: int = Field(
        default=2_500,
        ge=1,
        description="Tasks kept of one caller (its oldest dropped first: never another's).",
    )
    max_task_bytes_per_caller: int = Field(
        default=4 << 20, ge=1 << 16, description="Memory one caller's kept tasks may take."
    )
    task_ttl_s: float = Field(
        default=600.0, gt=0, description="How long a task is kept after its last update."
    )
    readiness_timeout_s: float = Field(
        default=2.0, gt=0, le=30, description="Timeout of the MCP probe behind /readyz."
    )

    @model_validator(mode="after")
    def _check_budget(self) -> PurpleSettings:
        if self.deadline_s >= HARD_DEADLINE_S:
            raise ValueError(
                f"deadline_s must stay below {HARD_DEADLINE_S:.0f} s (got {self.deadline_s})"
            )
        return self

    def mcp_authorization(self) -> ClientToken:
        """The ``Authorization`` of MCP calls (none without a token), its file read on change."""
        return ClientToken(self.mcp_token, self.mcp_token_file)

    def token_purposes(self) -> dict[str, Iterable[str]]:
        """Its callers', its scraper's and the one it sends to the MCP server."""
        sent = self.mcp_authorization().token
        return {**super().token_purposes(), "PURPLE_MCP_TOKEN[_FILE]": [sent] if sent else []}

    @property
    def public_url(self) -> str:
        """The URL the agent card announces."""
        return self.card_url or f"http://{self.host}:{self.port}/"
