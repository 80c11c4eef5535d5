"""The folder tree is the architecture: imports flow one way, and modules stay small.

agent -> MCP server -> store: the purple agent reaches retrieval only over MCP; the evaluator
(green agent) depends on the benchmark (``services.nfcorpus``), never on the system it evaluates;
the shared frame and the benchmark depend on no server.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from devtools.processes import REPO

# What each package may import from the others (telemetry is shared by all).
ALLOWED = {
    "common": {"telemetry"},
    "nfcorpus": set(),
    "retrieval": {"nfcorpus", "telemetry"},
    "mcp_server": {"common", "retrieval", "telemetry"},
    "purple_agent": {"common", "telemetry"},
    "green_agent": {"common", "nfcorpus", "telemetry"},
    "telemetry": set(),
}
MAX_LINES = 250


# The SDKs we build on, and the modules of theirs that their versioning policy does not cover:
# any with a leading underscore, and these internals without one.
SDKS = ("mcp", "mcp_types", "a2a")
SDK_INTERNALS = {"mcp.shared.inbound", "mcp.server.request_state"}


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, and every ``module.name`` it imports from one."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def _imported_packages(path: Path) -> set[str]:
    names = _imports(path)
    return {n.split(".")[1] for n in names if n.startswith("services.") and n.count(".") >= 1}


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_flow_one_way(package: str) -> None:
    crossing = {}
    for path in sorted((REPO / "services" / package).rglob("*.py")):
        wrong = _imported_packages(path) - ALLOWED[package] - {package}
        if wrong:
            crossing[str(path.relative_to(REPO))] = sorted(wrong)
    assert crossing == {}


def test_no_module_is_over_250_lines() -> None:
    long = {
        str(path.relative_to(REPO)): n
        for folder in ("services", "tests", "scripts", "deploy", "devtools")
        for path in (REPO / folder).rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_no_module_reaches_into_an_sdk_private_module() -> None:
    reached = {}
    for folder in ("services", "scripts", "deploy", "devtools", "tests"):
        for path in sorted((REPO / folder).rglob("*.py")):
            private = sorted(
                name
                for name in _imports(path)
                if name.split(".")[0] in SDKS
                and (name in SDK_INTERNALS or any(p.startswith("_") for p in name.split(".")))
            )
            if private:
                reached[str(path.relative_to(REPO))] = private
    assert reached == {}


def test_no_server_imports_development_or_deployment_tooling() -> None:
    tooling = ("devtools", "deploy", "tests", "scripts")
    reaching = {
        str(path.relative_to(REPO)): sorted(n for n in _imports(path) if n.split(".")[0] in tooling)
        for path in sorted((REPO / "services").rglob("*.py"))
    }
    assert {k: v for k, v in reaching.items() if v} == {}
