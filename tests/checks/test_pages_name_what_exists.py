"""Every ``python -m`` module, ``make`` target and repository path a page or a script's comment
names exists."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.processes import REPO
from tests.checks.makefile import make_graph

PAGES = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    REPO / "helm" / "nfcorpus-retrieval" / "README.md",
    REPO / "k8s" / "README.md",
]
#: Files whose comments name repository paths, make targets and modules too.
COMMENTED = [
    REPO / "Makefile",
    *sorted((REPO / "scripts").rglob("*.sh")),
    *sorted((REPO / ".github" / "workflows").glob("*.yml")),
    *sorted((REPO / "agentbeats").glob("*.yml")),
    REPO / "Dockerfile",
    REPO / "agentbeats/compose.yaml",
]


def _named(pattern: str) -> Iterator[tuple[Path, str]]:
    for page in PAGES:
        for match in re.finditer(pattern, page.read_text(), re.MULTILINE):
            yield page, match.group(1)
    for path in COMMENTED:
        for line in path.read_text().splitlines():
            if line.lstrip().startswith("#"):
                for match in re.finditer(pattern, line):
                    yield path, match.group(1)


def _where(path: Path) -> str:
    return str(path.relative_to(REPO))


def test_every_python_module_a_page_names_exists() -> None:
    missing = {
        f"{_where(page)}: python -m {module}"
        for page, module in _named(r"python3? -m ([A-Za-z_][\w.]*[A-Za-z_])")
        if module != "module" and importlib.util.find_spec(module) is None
    }
    assert not missing, sorted(missing)


def test_every_make_target_a_page_names_exists() -> None:
    targets = set(make_graph())
    missing = {
        f"{_where(page)}: make {target}"
        for page, target in _named(r"(?:`|^[ \t#]*)make ([a-z][a-z0-9-]*[a-z0-9])\b")
        if target not in targets
    }
    assert not missing, sorted(missing)


@pytest.mark.parametrize(
    "top", ["services", "harness", "devtools", "agentbeats", "tests", "scripts", "docs", "helm"]
)
def test_every_repository_path_a_page_names_exists(top: str) -> None:
    pattern = rf"(?<![\w./-])({top}/[\w./-]*\w)"
    missing = {
        f"{_where(page)}: {path}"
        for page, path in _named(pattern)
        if not any(c in path for c in "*{") and not (REPO / path).exists()
    }
    assert not missing, sorted(missing)


#: Where the README's tree starts its descriptions: the entries are the columns before it.
TREE_COLUMN = 29
#: A file a description names: a name with one of the repository's extensions, maybe a path.
_FILE = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w.-]+\.(?:py|sh|json5?|ya?ml|md|txt|toml))\b")


def tree_names(readme: str) -> Iterator[tuple[str, str]]:
    """(folder, name) for every entry of the README's tree and every file its lines name.

    An entry is a name of the first columns, in the folder its indentation puts it in; a file a
    description names (``card.py``, ``common/http_pool.py``) is in the folder of its entry or
    one above it.
    """
    block = readme.split("The tree is the architecture", 1)[1].split("```", 2)[1]
    folders: list[tuple[int, str]] = []  # the open folders, by indentation
    here = ""
    for line in block.splitlines():
        names, text = line[:TREE_COLUMN], line[TREE_COLUMN:]
        if names.strip():
            indent = len(names) - len(names.lstrip())
            while folders and folders[-1][0] >= indent:
                folders.pop()
            parent = folders[-1][1] if folders else ""
            here = parent
            for name in names.split():
                if name == "...":
                    continue
                yield parent, name.rstrip("/")
                if name.endswith("/"):
                    folders.append((indent, parent + name))
                    here = parent + name
        for named in _FILE.findall(text):
            yield here, named


def _resolves(folder: str, name: str) -> bool:
    """Whether ``name`` is in ``folder`` or in a folder above it."""
    where = Path(folder)
    return any((REPO / up / name).exists() for up in (where, *where.parents))


def test_every_file_the_readme_tree_names_is_where_it_says() -> None:
    missing = [
        f"{folder or '.'}: {name}"
        for folder, name in tree_names((REPO / "README.md").read_text())
        if not _resolves(folder, name)
    ]
    assert not missing, missing


def test_a_tree_name_resolves_in_its_folder_or_above() -> None:
    readme = (
        "The tree is the architecture:\n\n```\n"
        "services/                    servers\n"
        "  purple_agent/              the agent: agent.py, common/http_pool.py\n"
        "    a2a/                     card.py and handler.py, task_store.py\n"
        "  mcp_server/                search\n```\n"
    )
    assert list(tree_names(readme)) == [
        ("", "services"),
        ("services/", "purple_agent"),
        ("services/purple_agent/", "agent.py"),
        ("services/purple_agent/", "common/http_pool.py"),
        ("services/purple_agent/", "a2a"),
        ("services/purple_agent/a2a/", "card.py"),
        ("services/purple_agent/a2a/", "handler.py"),
        ("services/purple_agent/a2a/", "task_store.py"),
        ("services/", "mcp_server"),
    ]
    assert _resolves("services/purple_agent/", "common/http_pool.py")  # services/common/
    assert not _resolves("services/purple_agent/a2a/", "task_store.py")  # moved to common/
