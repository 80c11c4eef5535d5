"""Writing a file whole or not at all: the old version stays until the new one is complete."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from services.common.files import atomic_write_text, leftover_temporaries


def test_a_write_replaces_the_file_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    target = tmp_path / "deeper" / "load.json"
    atomic_write_text(target, "first")
    atomic_write_text(target, "second, longer")
    assert target.read_text() == "second, longer"
    assert [p.name for p in target.parent.iterdir()] == ["load.json"]
    # The mode a plain open() gives, not the 0600 of a temporary file.
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


def test_a_failed_write_keeps_the_old_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "load.json"
    atomic_write_text(target, '{"whole": true}')
    with pytest.raises(UnicodeEncodeError):
        atomic_write_text(target, "ascii, then \u00e9", encoding="ascii")
    assert target.read_text() == '{"whole": true}'
    assert leftover_temporaries(target) == []


def test_leftovers_of_a_killed_writer_are_found_by_their_target(tmp_path: Path) -> None:
    target = tmp_path / "load.json"
    killed = tmp_path / ".load.json.abc123.tmp"
    killed.write_text('{"wh')
    (tmp_path / ".other.json.abc123.tmp").write_text("")
    assert leftover_temporaries(target) == [killed]
