"""The Makefile as a graph of targets: what each target runs, and what a target reaches."""

from __future__ import annotations

import re
from pathlib import Path

from harness.processes import REPO

RULE = re.compile(r"^([A-Za-z0-9_.-]+(?: [A-Za-z0-9_.-]+)*)\s*:(?![=:])([^#]*)")


def make_graph(root: Path = REPO) -> dict[str, set[str]]:
    """Target -> the targets it runs: its prerequisites and the ``$(MAKE)`` calls of its recipe."""
    graph: dict[str, set[str]] = {}
    current: list[str] = []
    for line in (root / "Makefile").read_text().splitlines():
        if line.startswith("\t"):
            if "$(MAKE)" in line:
                called = line.split("$(MAKE)", 1)[1].split()
                for target in current:
                    graph[target] |= {w for w in called if not w.startswith(("-", "$"))}
            continue
        match = RULE.match(line)
        if match is None or line.startswith((".", "export")):
            current = [] if line.strip() and not line.startswith("#") else current
            continue
        current = match.group(1).split()
        needs = {w for w in match.group(2).split() if not w.startswith("$")}
        for target in current:
            graph.setdefault(target, set()).update(needs)
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every target ``start`` runs, itself included."""
    seen, todo = set(), [start]
    while todo:
        target = todo.pop()
        if target not in seen:
            seen.add(target)
            todo.extend(graph.get(target, ()))
    return seen
