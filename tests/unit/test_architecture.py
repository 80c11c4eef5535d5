"""The folder tree is the architecture: each room one purpose, imports flow one way, modules
sized by cohesion.

agent -> MCP server -> store: the purple agent reaches retrieval only over MCP; the evaluator
(green agent) depends on the benchmark (``services.nfcorpus``), never on the system it evaluates;
the shared frame and the benchmark depend on no server. Between the rooms of Python code: what
ships (``services``) imports none of the others, the test harness only what ships, the
development tooling the harness too, and only the tests import the tests. Inside the green agent,
the assessment server and the load generator build on the evaluation, never on each other, and
the locustfile builds on the load generator.
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from harness.processes import REPO
from tests.support.source import imports, parsed

# What each package may import from the others (telemetry is shared by all).
ALLOWED = {
    "common": {"telemetry"},
    "nfcorpus": set(),
    "retrieval": {"nfcorpus", "telemetry"},
    "mcp_server": {"common", "retrieval", "telemetry"},
    "purple_agent": {"common", "nfcorpus", "telemetry"},
    "all_in_one": {"telemetry"},
    "green_agent": {"common", "nfcorpus", "telemetry"},
    "telemetry": set(),
}
# Modules are sized by cohesion: one that grows past this is doing several things (sprawl), not
# one thing thoroughly.
MAX_LINES = 400
# The rooms of Python code and the ones each may import besides itself.
ROOMS: dict[str, set[str]] = {
    "services": set(),
    "harness": {"services"},
    "devtools": {"services", "harness"},
    "tests": {"services", "harness", "devtools"},
}
PYTHON_FOLDERS = tuple(ROOMS)
# Tracked top-level entries the README's tree does not list: the page itself and two dotfiles.
UNLISTED = {"README.md", ".gitignore", ".dockerignore"}
# The tree's first column is this wide; a top-level entry starts at its first character.
TREE_COLUMN = 29

# Inside retrieval/, what each layer may import besides itself: the shared vocabulary at the
# bottom, then the store (talks to Qdrant, knows nothing of ranking) and the encoders, then
# query-time ranking, then index-time building, which reuses the query code to train on.
RETRIEVAL = REPO / "services" / "retrieval"
BOTTOM = {"types", "settings", "text"}
LAYERS: dict[str, set[str]] = {
    **{name: set() for name in BOTTOM},
    "store": {"types", "settings"},
    "encoders": BOTTOM,
    "query": BOTTOM | {"store", "encoders"},
    "indexing": BOTTOM | {"store", "encoders", "query"},
}

# Inside green_agent/, the rooms and what each may import of the others besides itself: the
# evaluation at the bottom (the client, the contract, the report: it imports none of the others,
# not even the settings), the AgentBeats assessment server and the load generator on it, neither
# importing the other; the locustfile, Locust's way into the load generator, on top of it; the
# commands (one module per subcommand: options, checks, and what reads the settings to run them)
# over the first three. The settings and the command line stay at the top.
GREEN = REPO / "services" / "green_agent"
GREEN_ROOMS: dict[str, set[str]] = {
    "evaluation": set(),
    "assessment": {"evaluation", "settings"},
    "load": {"evaluation"},
    "locust": {"evaluation", "load", "settings"},
    "commands": {"evaluation", "assessment", "load", "settings"},
}
GREEN_TOP = {"__init__", "__main__", "cli", "settings"}


# The SDKs we build on, and the modules of theirs that their versioning policy does not cover:
# any with a leading underscore, and these internals without one.
SDKS = ("mcp", "mcp_types", "a2a")
SDK_INTERNALS = {"mcp.shared.inbound", "mcp.server.request_state"}


def _imported_packages(path: Path) -> set[str]:
    names = imports(path)
    return {n.split(".")[1] for n in names if n.startswith("services.") and n.count(".") >= 1}


def test_every_service_package_is_in_the_map() -> None:
    # A package missing from ALLOWED would never be checked.
    packages = {p.parent.name for p in (REPO / "services").glob("*/__init__.py")}
    assert packages == set(ALLOWED)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_flow_one_way(package: str) -> None:
    crossing = {}
    for path in sorted((REPO / "services" / package).rglob("*.py")):
        wrong = _imported_packages(path) - ALLOWED[package] - {package}
        if wrong:
            crossing[str(path.relative_to(REPO))] = sorted(wrong)
    assert crossing == {}


def _layer(module: str) -> str | None:
    """The retrieval layer of ``services.retrieval.<layer>[...]``, else None."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["services", "retrieval"] and len(parts) > 2 else None


def test_every_retrieval_module_sits_in_a_layer() -> None:
    layers = {
        p: p.relative_to(RETRIEVAL).parts[0].removesuffix(".py") for p in RETRIEVAL.rglob("*.py")
    }
    strays = sorted(
        str(p.relative_to(RETRIEVAL)) for p, layer in layers.items() if layer not in LAYERS
    )
    assert strays == ["__init__.py"]


def test_imports_inside_retrieval_run_downward_only() -> None:
    upward = {}
    for path in sorted(RETRIEVAL.rglob("*.py")):
        rel = path.relative_to(RETRIEVAL)
        own = rel.parts[0].removesuffix(".py")
        if own == "__init__":
            continue
        reached = {layer for n in imports(path) if (layer := _layer(n)) and layer != own}
        if wrong := reached - LAYERS[own]:
            upward[str(rel)] = sorted(wrong)
    assert upward == {}


def _green_part(module: str) -> str | None:
    """The room or top-level module of ``services.green_agent.<it>[...]``, else None."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["services", "green_agent"] and len(parts) > 2 else None


def _green_crossings(green: Path) -> dict[str, list[str]]:
    """The modules of the green agent's rooms under ``green`` importing what their room may not,
    with what they reach."""
    crossing = {}
    for room, allowed in GREEN_ROOMS.items():
        for path in sorted((green / room).rglob("*.py")):
            reached = {part for n in imports(path) if (part := _green_part(n))}
            if wrong := reached - allowed - {room}:
                crossing[str(path.relative_to(green))] = sorted(wrong)
    return crossing


def test_every_green_agent_module_sits_in_a_room_or_at_the_top() -> None:
    folders = {p.parent.relative_to(GREEN).parts[0] for p in GREEN.glob("*/**/*.py")}
    assert folders == set(GREEN_ROOMS)
    assert {p.stem for p in GREEN.glob("*.py")} == GREEN_TOP


def test_the_green_agents_rooms_depend_one_way() -> None:
    assert _green_crossings(GREEN) == {}


def test_an_evaluation_importing_the_load_generator_is_caught(tmp_path: Path) -> None:
    for room in GREEN_ROOMS:
        (tmp_path / room).mkdir()
    (tmp_path / "evaluation" / "client.py").write_text(
        "from services.green_agent.load.report import LoadReport\n"
    )
    (tmp_path / "evaluation" / "dataset.py").write_text(
        "from services.green_agent import settings\n"
    )
    (tmp_path / "load" / "run.py").write_text("import services.green_agent.assessment.request\n")
    (tmp_path / "assessment" / "app.py").write_text(
        "from services.green_agent.evaluation import egress\n"
        "from services.green_agent.settings import GreenSettings\n"
    )
    assert _green_crossings(tmp_path) == {
        "evaluation/client.py": ["load"],
        "evaluation/dataset.py": ["settings"],
        "load/run.py": ["assessment"],
    }


def _module_of(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _dependencies(path: Path, modules: set[str]) -> set[str]:
    """The modules ``path`` imports: ``from package import module`` is an edge to the module
    only (a package's ``__init__`` runs before any of its modules, which is no dependency)."""
    found: set[str] = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.ImportFrom) and node.module:
            subs = {f"{node.module}.{alias.name}" for alias in node.names} & modules
            found |= subs or {node.module} & modules
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names} & modules
    return found


def test_no_import_cycles_between_service_modules() -> None:
    modules = {_module_of(p): p for p in (REPO / "services").rglob("*.py")}
    graph = {name: _dependencies(path, set(modules)) - {name} for name, path in modules.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for nxt in sorted(graph[name]):
            if state.get(nxt) == 1:
                cycles.append([*trail[trail.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_no_module_sprawls() -> None:
    long = {
        str(path.relative_to(REPO)): n
        for folder in PYTHON_FOLDERS
        for path in (REPO / folder).rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_no_module_reaches_into_an_sdk_private_module() -> None:
    reached = {}
    for folder in PYTHON_FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            private = sorted(
                name
                for name in imports(path)
                if name.split(".")[0] in SDKS
                and (name in SDK_INTERNALS or any(p.startswith("_") for p in name.split(".")))
            )
            if private:
                reached[str(path.relative_to(REPO))] = private
    assert reached == {}


def _room_crossings(root: Path, room: str) -> dict[str, list[str]]:
    """The modules of ``root/room`` importing a room they may not, with the rooms reached."""
    reaching = {}
    for path in sorted((root / room).rglob("*.py")):
        wrong = {n.split(".")[0] for n in imports(path)} & set(ROOMS) - ROOMS[room] - {room}
        if wrong:
            reaching[str(path.relative_to(root))] = sorted(wrong)
    return reaching


@pytest.mark.parametrize("room", sorted(ROOMS))
def test_rooms_depend_one_way(room: str) -> None:
    assert _room_crossings(REPO, room) == {}


def test_a_harness_importing_the_tests_is_caught(tmp_path: Path) -> None:
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "helper.py").write_text("from tests.support import ports\n")
    assert _room_crossings(tmp_path, "harness") == {"harness/helper.py": ["tests"]}


def test_tests_share_helpers_through_modules_not_conftest_or_test_files() -> None:
    # pytest loads conftest.py and test files itself; importing one runs it a second time under
    # another name, and hides from a reader where a helper lives.
    reaching = {
        str(path.relative_to(REPO)): sorted(
            n
            for n in imports(path)
            if n.startswith("tests.")
            and any(p == "conftest" or p.startswith("test_") for p in n.split("."))
        )
        for path in sorted((REPO / "tests").rglob("*.py"))
    }
    assert {k: v for k, v in reaching.items() if v} == {}


def _tree_entries(readme: str) -> set[str]:
    """The top-level entries the README's tree names (its unindented first column)."""
    block = readme.split("The tree is the architecture", 1)[1].split("```", 2)[1]
    return {
        name.rstrip("/")
        for line in block.splitlines()
        if line and not line[0].isspace()
        for name in line[:TREE_COLUMN].split()
        if name != "..."
    }


def test_the_readme_tree_names_every_top_level_entry() -> None:
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    top = {path.split("/", 1)[0] for path in tracked} - UNLISTED
    assert _tree_entries((REPO / "README.md").read_text()) == top


def test_a_tree_line_is_read_as_its_entries() -> None:
    readme = (
        "The tree is the architecture:\n\n```\n"
        "helm/ k8s/                   the chart; its render\n"
        "  sub/                       not top level\n"
        "stack.py ...                 more\n```\n"
    )
    assert _tree_entries(readme) == {"helm", "k8s", "stack.py"}


def test_tooling_is_packaged_not_scripted() -> None:
    # scripts/ keeps thin shell entry points only; Python tooling lives in packages run with
    # ``python -m``, which import one another by name: nothing edits sys.path to find a module.
    assert sorted(p.name for p in (REPO / "scripts").rglob("*.py")) == []
    embedded = sorted(  # the Python that shell scripts run inline, too
        str(p.relative_to(REPO))
        for p in (REPO / "scripts").rglob("*.sh")
        if "sys.path" in p.read_text()
    )
    assert embedded == []
    editing = sorted(
        str(path.relative_to(REPO))
        for folder in PYTHON_FOLDERS
        for path in (REPO / folder).rglob("*.py")
        if any(
            isinstance(node, ast.Attribute)
            and node.attr == "path"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
            for node in ast.walk(parsed(path))
        )
    )
    assert editing == []


def test_tooling_reads_no_private_attribute_of_the_services() -> None:
    # Benchmarks and deployment code use what the services offer; a private attribute read from
    # outside breaks silently when the service changes (``self``/``cls`` are a class's own).
    reads = sorted(
        f"{path.relative_to(REPO)}:{node.lineno}"
        for folder in ("devtools", "harness")
        for path in (REPO / folder).rglob("*.py")
        for node in ast.walk(parsed(path))
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
    )
    assert reads == []
