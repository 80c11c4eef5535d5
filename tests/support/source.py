"""Python source read as the architecture tests read it: parsed once, and what it imports."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path


@cache
def parsed(path: Path) -> ast.Module:
    """``path`` parsed once for every test that reads it."""
    return ast.parse(path.read_text(), filename=str(path))


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports, and every ``module.name`` it imports from one.

    Imports inside functions count too: a module that loads an SDK lazily still depends on it.
    """
    names: set[str] = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names
