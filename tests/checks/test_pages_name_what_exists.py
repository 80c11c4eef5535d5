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
