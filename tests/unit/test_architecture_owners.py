"""Who talks to what: each SDK is imported only by the modules that own its protocol, and the
query-time code does no index-time work.

``test_architecture.py`` judges packages and layers by whom they import; these rules look at what
they import and do. The Qdrant clients live in ``retrieval/store/`` only: the store is the only
code that talks to Qdrant. The MCP SDK lives in the MCP server and in the purple agent's client
for servers of the handshake era; the A2A SDK in the agents' A2A adapters, the green agent's A2A
client and the A2A plumbing they share. In ``retrieval/query/`` nothing writes to the store or
trains a model: that is index time (``retrieval/indexing/``), which query time never imports.
"""

from __future__ import annotations

import ast
from pathlib import Path

from harness.processes import REPO
from tests.support.source import imports, parsed

MCP_OWNERS = ("services/mcp_server/", "services/purple_agent/search/sdk_fallback.py")
OWNERS: dict[str, tuple[str, ...]] = {
    "qdrant_client": ("services/retrieval/store/",),
    "qdrant_edge": ("services/retrieval/store/",),
    "mcp": MCP_OWNERS,
    "mcp_types": MCP_OWNERS,
    "a2a": (
        "services/common/a2a.py",
        "services/common/a2a_input.py",
        "services/common/task_store.py",
        "services/purple_agent/a2a/",
        "services/green_agent/assessment/",
        "services/green_agent/evaluation/client.py",
    ),
}
# The protocol SDKs are held to their owners in what ships: the harness's stand-ins, the
# benchmarks and the tests speak them as servers and clients of other makes. The Qdrant clients
# are held to the store in the tooling too.
HELD_IN = {"services": set(OWNERS), "harness": {"qdrant_client", "qdrant_edge"}}
HELD_IN["devtools"] = HELD_IN["harness"]

QUERY = "services/retrieval/query"
#: What writes to the store: index time's work, never a query's.
STORE_WRITES = {"upsert", "create_collection", "delete_collection", "set_alias"}


def _sdk_strays(root: Path) -> dict[str, list[str]]:
    """Modules under ``root`` importing an SDK they do not own, with the SDKs."""
    strays: dict[str, list[str]] = {}
    for folder, held in HELD_IN.items():
        for path in sorted((root / folder).rglob("*.py")):
            where = path.relative_to(root).as_posix()
            sdks = {name.split(".")[0] for name in imports(path)} & held
            wrong = sorted(s for s in sdks if not where.startswith(OWNERS[s]))
            if wrong:
                strays[where] = wrong
    return strays


def test_each_sdk_is_imported_only_by_the_modules_owning_its_protocol() -> None:
    assert _sdk_strays(REPO) == {}


def test_an_sdk_imported_outside_its_owners_is_caught(tmp_path: Path) -> None:
    files = {
        "services/purple_agent/agent.py": "from a2a.types import Message\n",
        "services/mcp_server/service.py": "import qdrant_client\n",
        "services/purple_agent/a2a/handler.py": "from a2a.server import tasks\n",  # an owner
        "harness/fakes/mcp_toy.py": "from mcp.server import MCPServer\n",  # a stand-in
        "devtools/bench/store.py": "def f():\n    from qdrant_edge import EdgeShard\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert _sdk_strays(tmp_path) == {
        "devtools/bench/store.py": ["qdrant_edge"],
        "services/mcp_server/service.py": ["qdrant_client"],
        "services/purple_agent/agent.py": ["a2a"],
    }


def _index_time_work(folder: Path) -> dict[str, list[str]]:
    """What the modules under ``folder`` do of index time: store writes, model training, and
    imports of the indexing package, each as ``name:line``."""
    found: dict[str, list[str]] = {}
    for path in sorted(folder.rglob("*.py")):
        work = [
            f"{node.func.attr}:{node.lineno}"
            for node in ast.walk(parsed(path))
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and (
                node.func.attr in STORE_WRITES
                or (node.func.attr == "train" and "lgb" in ast.unparse(node.func.value))
                or ast.unparse(node.func) == "lightgbm.train"
            )
        ]
        work += sorted(n for n in imports(path) if n.startswith("services.retrieval.indexing"))
        work += sorted(n for n in imports(path) if n == "lightgbm.train")
        if work:
            found[path.relative_to(folder).as_posix()] = work
    return found


def test_query_time_code_does_no_index_time_work() -> None:
    assert _index_time_work(REPO / QUERY) == {}


def test_index_time_work_in_query_is_caught(tmp_path: Path) -> None:
    (tmp_path / "writes.py").write_text(
        "def save(store, name, points):\n    store.upsert(name, points)\n"
    )
    (tmp_path / "fits.py").write_text(
        "import lightgbm as lgb\n\ndef fit(data):\n    return lgb.train({}, data)\n"
    )
    (tmp_path / "reads.py").write_text(
        "from services.retrieval.indexing.training import train\n\n"
        "def score(store, ranker, rows):\n    return store.retrieve('r', [1]), ranker.score(rows)\n"
    )
    assert _index_time_work(tmp_path) == {
        "fits.py": ["train:4"],
        "reads.py": [
            "services.retrieval.indexing.training",
            "services.retrieval.indexing.training.train",
        ],
        "writes.py": ["upsert:2"],
    }
