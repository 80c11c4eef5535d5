"""Settings of the green agent (env prefix ``GREEN_``)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from services.common.auth import AuthFields
from services.common.guard.hosts import HostFields
from services.common.tokens import ClientToken, TokenSet, authorization
from services.green_agent.evaluation.bounds import AnswerBounds
from services.green_agent.evaluation.egress import LOOPBACK, AllowedOrigins
from services.nfcorpus.dataset import BEIR_NFCORPUS_MD5, BEIR_NFCORPUS_URL, DEFAULT_DATA_DIR


class GreenSettings(BaseSettings, AuthFields, HostFields):
    """Configuration of the evaluator, as a CLI or as an A2A server.

    ``GREEN_AUTH_TOKENS[_FILE]`` are the callers the A2A server accepts,
    ``GREEN_METRICS_TOKEN[_FILE]`` its scraper (and the load collector's);
    ``GREEN_ALLOWED_ORIGINS`` where the URLs of their requests may point
    (:mod:`services.green_agent.evaluation.egress`).
    """

    model_config = SettingsConfigDict(env_prefix="GREEN_", extra="ignore")

    host: str = Field(default="127.0.0.1", description="Interface the A2A server binds to.")
    port: int = Field(default=9009, ge=0, le=65535, description="Port the A2A server binds to.")
    card_url: str | None = Field(
        default=None, description="URL in the agent card (default http://{host}:{port}/)."
    )
    timeout_s: float = Field(
        default=60.0, gt=0, description="Per-request timeout towards the evaluated agent."
    )
    max_answer_bytes: int = Field(
        default=4 << 20,
        ge=1 << 10,
        description="Largest answer (card or reply) read from the evaluated agent, in bytes; "
        "a larger one is stopped there and its query fails as too_large.",
    )
    query_deadline_s: float = Field(
        default=120.0,
        gt=0,
        description="Longest one query may take in all (card, request, whole answer); "
        "a slower one fails as timeout, however steadily its bytes come.",
    )
    assessment_deadline_s: float = Field(
        default=3600.0,
        gt=0,
        description="Longest one assessment of the A2A server may run; then it is stopped "
        "and its task fails.",
    )
    concurrency: int = Field(default=4, ge=1, le=256, description="Queries in flight at once.")
    protocol: Literal["1.0", "0.3"] = Field(
        default="1.0", description="A2A protocol the evaluator speaks to the agent."
    )
    data_dir: Path = Field(
        default=DEFAULT_DATA_DIR,
        description="BEIR NFCorpus folder the test queries and judgements are read from.",
    )
    download_url: str = Field(
        default=BEIR_NFCORPUS_URL,
        description="Archive fetched when data_dir lacks a file of the data set.",
    )
    download_md5: str = Field(default=BEIR_NFCORPUS_MD5, description="md5 the archive must have.")
    agent_token: str | None = Field(
        default=None, description="Bearer token sent to the evaluated agent, if it requires one."
    )
    agent_token_file: Path | None = Field(
        default=None, description="File holding the evaluated agent's token (a mounted Secret)."
    )
    mcp_metrics_token: str | None = Field(
        default=None,
        description="The MCP server's scrape token, sent on GET /metrics to read its counters.",
    )
    mcp_metrics_token_file: Path | None = Field(
        default=None, description="File holding the MCP server's scrape token (a mounted Secret)."
    )
    load_collector_token: str | None = Field(
        default=None,
        description="Token a load collector requires on POST /reports, and workers send it.",
    )
    load_collector_token_file: Path | None = Field(
        default=None, description="File holding the load collector's token (a mounted Secret)."
    )
    max_running: int = Field(
        default=4,
        ge=1,
        le=64,
        description="Assessments the A2A server runs at once; one more is refused until one ends.",
    )
    max_tasks: int = Field(
        default=1000, ge=1, description="Tasks the A2A server keeps (oldest dropped first)."
    )
    max_task_bytes: int = Field(
        default=16 << 20, ge=1 << 16, description="Memory the kept tasks may take, in bytes."
    )
    max_tasks_per_caller: int = Field(
        default=250,
        ge=1,
        description="Tasks kept of one caller (its oldest dropped first: never another's).",
    )
    max_task_bytes_per_caller: int = Field(
        default=4 << 20, ge=1 << 16, description="Memory one caller's kept tasks may take."
    )
    task_ttl_s: float = Field(
        default=3600.0, gt=0, description="How long a task is kept after its last update."
    )
    allowed_origins: Annotated[list[str], NoDecode] = Field(
        default=list(LOOPBACK),
        description="Origins the URLs of an assessment request may point to (comma list: "
        "http://host:port, host:port, host:* for any port, '*' for any origin).",
    )

    @field_validator("allowed_origins", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list | tuple):
            AllowedOrigins(str(v) for v in value)  # a bad entry stops the start, with its reason
            return [str(v).strip() for v in value if str(v).strip()]
        return value

    def open_serving_problem(self, *, authenticated: bool) -> str | None:
        """Why ``serve`` may not start as set, or None.

        On a non-loopback address anyone who reaches the server may send it assessments, which
        name the URLs it then calls: that takes callers' tokens (``authenticated``), or an allow
        -list given explicitly with no wildcard (no ``*``, no ``:*`` port), so that the default
        (loopback on any port) never becomes the reach of whoever finds the port.
        """
        if authenticated or _loopback(self.host):
            return None
        explicit = "allowed_origins" in self.model_fields_set
        wildcards = [e for e in self.allowed_origins if e == "*" or e.endswith(":*")]
        if explicit and not wildcards:
            return None
        listed = f"lists {', '.join(wildcards)}" if explicit else "is not set (loopback, any port)"
        return (
            f"serving on {self.host}, not a loopback address, lets whoever reaches it send "
            f"assessments, and GREEN_ALLOWED_ORIGINS {listed}: set GREEN_AUTH_TOKENS (the "
            "callers' tokens), or list in GREEN_ALLOWED_ORIGINS the exact origins an assessment "
            "may name (host:port, no '*' nor ':*'), or serve on 127.0.0.1"
        )

    def origins(self) -> AllowedOrigins:
        """The parsed allow-list of the A2A server."""
        return AllowedOrigins(self.allowed_origins)

    def answer_bounds(self) -> AnswerBounds:
        """What one answer of the evaluated agent may weigh, and one query take."""
        return AnswerBounds(self.max_answer_bytes, self.query_deadline_s)

    def agent_authorization(self) -> str | None:
        """The ``Authorization`` header value for the evaluated agent, if a token is set."""
        return authorization(self.agent_token, self.agent_token_file)

    def agent_token_source(self) -> ClientToken:
        """The evaluated agent's ``Authorization``, for a server: its file read on change."""
        return ClientToken(self.agent_token, self.agent_token_file)

    def mcp_metrics_authorization(self) -> str | None:
        """The ``Authorization`` header value for the MCP server's ``/metrics``, if a token is set."""
        return authorization(self.mcp_metrics_token, self.mcp_metrics_token_file)

    def load_collector_tokens(self) -> TokenSet:
        """The token a load collector requires (token -> caller name); empty: none required."""
        return TokenSet(self.load_collector_token, self.load_collector_token_file)

    def token_purposes(self) -> dict[str, Iterable[str]]:
        """Its callers', its scraper's, the evaluated agent's and the load collector's."""
        sent = self.agent_token_source().token
        return {
            **super().token_purposes(),
            "GREEN_AGENT_TOKEN[_FILE]": [sent] if sent else [],
            "GREEN_LOAD_COLLECTOR_TOKEN[_FILE]": self.load_collector_tokens(),
        }

    def load_collector_authorization(self) -> str | None:
        """The ``Authorization`` header value a worker hands its report in with, if any."""
        return authorization(self.load_collector_token, self.load_collector_token_file)

    @property
    def public_url(self) -> str:
        """The URL the agent card announces."""
        return self.card_url or f"http://{self.host}:{self.port}/"


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: whatever it resolves to, not known to be loopback


def load_settings(**overrides: Any) -> GreenSettings:
    """The environment's settings with ``overrides`` (flags); ``ValueError`` names the bad one."""
    try:
        return GreenSettings(**overrides)
    except ValidationError as e:
        problems = [
            f"GREEN_{'_'.join(map(str, err['loc'])).upper()}: "
            + err["msg"].removeprefix("Value error, ")
            for err in e.errors(include_url=False)
        ]
        raise ValueError("; ".join(problems)) from None
