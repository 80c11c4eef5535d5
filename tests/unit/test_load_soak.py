"""The soak benchmark's reading of a generator's memory: after its first minute, and at its end."""

from __future__ import annotations

import os

import pytest

from devtools.bench.load_soak import rss_mb, summary

REPORT = {
    "requests": 1000,
    "throughput_rps": 100.0,
    "workers": [{"cpu_ms_per_request": 0.3}],
}
MERGED = {"requests": 1000, "complete": True}


def test_the_first_minute_and_the_end_are_read_from_the_samples() -> None:
    samples = [(float(t), 50.0 + t / 10) for t in range(0, 121)]
    figures = summary(samples, REPORT, MERGED, seconds=120.0, first_s=60.0)
    assert figures["rss_mb_first_minute"] == 56.0 and figures["rss_mb_end"] == 62.0
    assert figures["rss_end_over_first_minute"] == pytest.approx(62 / 56)
    assert figures["rss_mb_max_after_first_minute"] == 62.0
    assert figures["requests"] == 1000 and figures["collector_complete"] is True


def test_a_run_that_ended_before_its_first_minute_says_so() -> None:
    with pytest.raises(RuntimeError, match="no RSS sample after the first 60 s"):
        summary([(1.0, 50.0)], REPORT, MERGED, seconds=120.0, first_s=60.0)


def test_rss_is_read_from_proc_and_none_for_a_process_gone() -> None:
    mine = rss_mb(os.getpid())
    assert mine is not None and mine > 0
    assert rss_mb(2**22 + 12345) is None
