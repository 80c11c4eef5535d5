"""Limits: the answer contract's, and each server process's (bodies, nesting, load, timeouts)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

#: Longest query accepted, in characters.
MAX_QUERY_CHARS = 2000
#: Largest top_k accepted.
MAX_TOP_K = 100
#: A green agent gives up after 60 s; every answer must come well before that.
HARD_DEADLINE_S = 60.0


class ServerLimits(BaseSettings):
    """What one server process accepts before it refuses (``SERVER_*`` environment variables).

    The same variables for every server; a Deployment tunes its own pods through its env.
    """

    model_config = SettingsConfigDict(env_prefix="SERVER_", extra="ignore", frozen=True)

    max_body_bytes: int = Field(
        default=64 * 1024,
        ge=1024,
        description="Largest request body, many times what a query of the longest allowed text "
        "needs. Else 413.",
    )
    max_json_depth: int = Field(
        default=32, ge=4, le=256, description="Deepest JSON nesting a body may have."
    )
    max_in_flight: int = Field(
        default=64,
        ge=1,
        description="Requests one process works on at once (probes and metrics excepted); "
        "more are refused at once with 503 and Retry-After.",
    )
    max_connections: int = Field(
        default=1024, ge=8, description="Open connections one process holds; more get 503."
    )
    header_timeout_s: float = Field(
        default=10.0, gt=0, description="Time a client has to send a whole request head."
    )
    body_timeout_s: float = Field(
        default=10.0, gt=0, description="Time a client has to send a whole request body."
    )
    # Longer than the idle expiry of clients and proxies (httpx and HAProxy's pool: 5 s), so
    # they close an idle connection first: a server closing one just as a client reuses it
    # loses that request ("disconnected without sending a response").
    keep_alive_s: float = Field(
        default=75.0, gt=0, description="Idle time after which a keep-alive connection is closed."
    )
    drain_s: float = Field(
        default=0.0,
        ge=0,
        le=60,
        description="On SIGTERM, time the server still serves, with /readyz answering 503 and "
        "every answer closing its connection, so load balancers stop sending and keep-alive "
        "clients move away before it stops (the chart sets it; see services.common.server).",
    )
    retry_after_s: int = Field(
        default=1, ge=1, description="Retry-After a refused (overloaded) request is given."
    )
    # A NetworkPolicy opens ports, not paths: while /metrics shares the API port, letting
    # Prometheus scrape it lets Prometheus call every route (services.common.metrics_port).
    metrics_port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        description="A second port the server listens on, for /metrics alone (anything else "
        "there is 404, and /metrics on the API port is 404); unset: /metrics on the API port.",
    )
