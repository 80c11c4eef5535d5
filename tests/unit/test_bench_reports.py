"""What the benchmarks report is computed from what they measured: the servers' CPU per answered
query as a multiple of the encoder's, and a pair's medians, each side from its own turns."""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from devtools.bench.a2a_report import a2a_tables
from devtools.bench.frame_cost import summary as frame_summary
from devtools.bench.pair import SAT, summary

#: The made-up turns' latency and memory (no figure of any machine: the test checks arithmetic).
P50_S, RSS_MB = 0.01, 250.0


def _phase(mcp_ms: float, agent_ms: float, qps: float, p50_s: float = P50_S) -> dict[str, Any]:
    latency = {"count": 10, "mean_s": p50_s, "p50_s": p50_s, "p95_s": p50_s, "p99_s": 2 * p50_s}
    return {
        "latency": {**latency, "max_s": 2 * p50_s},
        "answered": 10,
        "failed": 0,
        "throughput_qps": qps,
        "mcp_cpu_ms_per_query": mcp_ms,
        "agent_cpu_ms_per_query": agent_ms,
    }


def _turn(
    mcp_ms: float, qps: float, rss: float = RSS_MB, encoder_ms: float = 2.0
) -> dict[str, Any]:
    return {
        "encoder_cpu_ms_per_query": encoder_ms,
        "concurrency_1": _phase(mcp_ms, 2.0, qps / 2),
        SAT: _phase(mcp_ms - 1.0, 2.0, qps),
        "rss_after_start": {"mcp_rss_mb": rss, "agent_rss_mb": 70.0},
        "rss_after_load": {"mcp_rss_mb": rss + 30, "agent_rss_mb": 71.0},
    }


def test_a_pair_side_is_the_median_of_its_turns_over_the_encoder() -> None:
    side = summary([_turn(10.0, 100.0), _turn(12.0, 120.0, RSS_MB + 10), _turn(14.0, 90.0)])
    assert side["concurrency_1"]["server_cpu_ms_per_query"] == 14.0  # 12 + 2, the median
    assert side["concurrency_1"]["cpu_over_encoder"] == 7.0
    assert side[SAT]["server_cpu_ms_per_query"] == 13.0 and side[SAT]["throughput_qps"] == 100.0
    assert side[SAT]["p99_ms"] == pytest.approx(2 * P50_S * 1000) and side[SAT]["failed"] == 0
    assert side["mcp_rss_after_start_mb"] == RSS_MB  # the median of the three turns


def test_each_turn_is_stated_in_the_encoder_measured_with_it() -> None:
    # Each turn's CPU over the encoder measured right before it: 10/2, 12/3 and 20/3.5, whose
    # median is 5. The median CPU over the median encoder (12/3) would be 4: it divides figures
    # taken in different minutes, and the machine's speed drifts between them.
    turns = [_turn(8.0, 100.0, encoder_ms=2.0), _turn(10.0, 100.0, encoder_ms=3.0)]
    turns.append(_turn(18.0, 100.0, encoder_ms=3.5))
    side = summary(turns)
    assert side["concurrency_1"]["cpu_over_encoder"] == pytest.approx(5.0)
    assert side["concurrency_1"]["server_cpu_ms_per_query"] == 12.0  # 10 + 2, the median


def test_the_bench_table_states_the_servers_cpu_in_encoders() -> None:
    ours = _turn(10.0, 120.0)
    minimal = _turn(11.0, 110.0)
    cached = {"first_pass": _phase(9.0, 2.0, 50), "second_pass": _phase(1.0, 1.0, 300)}
    a2a = {
        "ours": ours,
        "minimal": minimal,
        "cached": {**cached, "cache_setting_known": True},
        "encoder_cpu_ms_per_query": 3.0,
    }
    results = {
        "query_encode": {"p50_ms": 3.0, "mean_ms": 3.0},
        "full_retrieve_and_rank": {"p50_ms": 4.0, "mean_ms": 4.0},
    }
    text = "\n".join(a2a_tables(results, a2a))
    assert (
        "| CPU of encoding one query alone (the served model, one thread, this run) | 3.00 ms |"
        in text
    )
    assert "10.00 + 2.00 = 12.00 ms (**4.00x the encoder**" in text  # concurrency 1
    assert "9.00 + 2.00 = 11.00 ms (**3.67x the encoder**)" in text  # concurrency 16


def test_what_is_ours_is_the_median_of_each_round_s_difference() -> None:
    # The test's own rounds, no measurement: whose median difference is not the difference of
    # the medians (the drift of one round, the second, moves both of its figures, and pairing
    # them cancels it). Every expected figure is derived from them, to float tolerance.
    rounds = {
        "bare": [10.0, 30.0, 11.0],
        "framed": [90.0, 100.0, 95.0],
        "pipeline": [5.0, 9.0, 7.0],
        "service": [5.5, 9.1, 8.0],
    }
    (figures,) = frame_summary({"unexported": rounds}).values()
    frame_diffs = [f - b for f, b in zip(rounds["framed"], rounds["bare"], strict=True)]
    service_diffs = [s - p for s, p in zip(rounds["service"], rounds["pipeline"], strict=True)]
    assert figures["frame_us"] == pytest.approx(statistics.median(frame_diffs))
    assert figures["frame_us"] != pytest.approx(
        statistics.median(rounds["framed"]) - statistics.median(rounds["bare"])
    )
    assert figures["service_over_pipeline_ms"] == pytest.approx(statistics.median(service_diffs))
    assert figures["service_over_pipeline_ms"] != pytest.approx(
        statistics.median(rounds["service"]) - statistics.median(rounds["pipeline"])
    )
    assert figures["ours_ms"] == pytest.approx(
        figures["frame_us"] / 1000 + figures["service_over_pipeline_ms"]
    )
    assert figures["bare_route_us"] == pytest.approx(statistics.median(rounds["bare"]))
    assert figures["pipeline_ms"] == pytest.approx(statistics.median(rounds["pipeline"]))
    assert figures["rounds"] == rounds
