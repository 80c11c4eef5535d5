"""CI's own checks, fed broken input: each must fail, or it guards nothing (``repo_copy.py``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.processes import REPO
from tests.checks.repo_copy import TOOLS, VENV, RepoCopy, tracked_files


@pytest.fixture
def repo_copy(tmp_path: Path) -> RepoCopy:
    for tool in (TOOLS / "bin" / "helm", VENV / "bin" / "ruff"):
        if not tool.exists():
            pytest.fail(f"{tool} is missing: run 'make install tools-k8s'", pytrace=False)
    root = tmp_path / "repo"
    for name in tracked_files():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    return RepoCopy(root)
