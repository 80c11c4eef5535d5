"""Every server listens on loopback unless told otherwise: a container or a chart says 0.0.0.0."""

from __future__ import annotations

import pytest

from services.all_in_one.__main__ import argument_parser
from services.green_agent.settings import GreenSettings
from services.mcp_server.settings import McpServerSettings
from services.purple_agent.settings import PurpleSettings


def test_the_whole_agent_listens_on_loopback_by_default() -> None:
    args, _ = argument_parser().parse_known_args([])
    assert args.host == "127.0.0.1"


@pytest.mark.parametrize("settings", [GreenSettings, McpServerSettings, PurpleSettings])
def test_each_server_listens_on_loopback_by_default(
    settings: type[GreenSettings | McpServerSettings | PurpleSettings],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for prefix in ("GREEN", "MCP", "PURPLE"):
        monkeypatch.delenv(f"{prefix}_HOST", raising=False)
    assert settings().host == "127.0.0.1"
