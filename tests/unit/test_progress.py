"""Off a terminal (a Job's log), long steps log their progress with rate and time left."""

from __future__ import annotations

import logging

import pytest

from services.telemetry.progress import progress


def test_progress_is_logged_off_a_terminal(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="nfcorpus.progress")
    with progress("encoding documents", 300, every_s=0) as advance:
        for _ in range(3):
            advance(100)
    records = [r for r in caplog.records if r.name == "nfcorpus.progress"]
    assert len(records) == 4  # one per advance (every_s=0), and the last at the end
    final = records[-1]
    assert final.getMessage().startswith("encoding documents: 300/300 (100%), ")
    assert final.getMessage().endswith(" 0 s left")
    assert (final.done, final.total) == (300, 300)  # type: ignore[attr-defined]
