"""Load shapes: their text form, the pace at a time, a ramp's schedule, and a worker's share."""

from __future__ import annotations

import itertools
import math

import pytest

from services.green_agent.load.shape import (
    Shape,
    ShapeError,
    Stage,
    parse_duration,
    parse_shape,
    parse_stages,
    with_warmup,
)
from services.green_agent.load.workers import Share


def test_stages_read_steps_ramps_and_units() -> None:
    loop, stages = parse_stages("10s:20/s, ramp:1.5m:100/s ,step:30:100/s,ramp:1h:0/s")
    assert loop == "open"
    assert stages == (
        Stage(10, 20),
        Stage(90, 100, ramp=True),
        Stage(30, 100),
        Stage(3600, 0, ramp=True),
    )
    loop, stages = parse_stages("5:2,ramp:5s:8")
    assert loop == "closed" and stages == (Stage(5, 2), Stage(5, 8, ramp=True))
    assert parse_duration(".5m") == 30


@pytest.mark.parametrize(
    "text",
    ["10s:20/s,ramp:20s:100/s,30s:100/s", "5s:2,ramp:2.5s:8,10s:0", "0.25s:7.5/s"],
)
def test_the_text_form_reads_back_as_the_same_shape(text: str) -> None:
    shape = parse_shape(text, "3s")
    assert parse_shape(shape.text(), shape.warmup_text()) == shape


@pytest.mark.parametrize(
    ("stages", "why"),
    [
        ("", "none empty"),
        ("10s:20/s,", "none empty"),
        ("10s", r"a stage is \[ramp:\]DURATION:TARGET"),
        ("ramp:10s:20/s:3", r"a stage is \[ramp:\]DURATION:TARGET"),
        ("ten:20/s", "stage 1: 'ten' is no duration"),
        ("10s:20/s,10s:fast", "stage 2: 'fast' is no target"),
        ("10s:20/s,10s:4", "stage 2 is a concurrency, stage 1 a rate"),
        ("0s:20/s", "stage 1: its duration must be above 0"),
        ("10s:0/s,ramp:5s:0/s", "asks for no load"),
        ("10s:2.5", "a whole number of requests in flight"),
        ("10s:-3/s", "is no target"),
    ],
)
def test_a_bad_shape_says_which_part_and_why(stages: str, why: str) -> None:
    with pytest.raises(ShapeError, match=why):
        parse_shape(stages)


def test_the_warm_up_holds_the_first_target_or_its_own() -> None:
    shape = parse_shape("ramp:10s:40/s,5s:40/s", "5")
    assert shape.warmup == Stage(5, 40) and shape.warmup_s == 5
    assert (shape.duration_s, shape.total_s) == (15, 20)
    shape = parse_shape("ramp:10s:40/s", "5s:10/s")
    assert shape.warmup == Stage(5, 10)
    # The first ramp starts from the warm-up's pace; without a warm-up, from 0.
    assert [p.begin for p in shape.phases] == [10, 10]
    assert parse_shape("ramp:10s:40/s").phases[0].begin == 0
    assert parse_shape("10s:40/s", "0").warmup is None
    with pytest.raises(ShapeError, match="the warm-up's target is a concurrency"):
        parse_shape("10s:40/s", "5s:4")
    with pytest.raises(ShapeError, match="needs a pace above 0"):
        with_warmup(parse_shape("10s:0/s,10s:5/s"), "5s")


def test_the_pace_steps_and_ramps_linearly() -> None:
    shape = parse_shape("10s:20/s,ramp:20s:100/s,10s:0/s,ramp:10s:40/s", "5")
    assert [p.index for p in shape.phases] == [-1, 0, 1, 2, 3]
    assert [p.start_s for p in shape.phases] == [0, 5, 15, 35, 45]
    assert shape.pace(0) == shape.pace(4.9) == shape.pace(5) == 20
    assert shape.pace(15) == 20 and shape.pace(25) == pytest.approx(60)
    assert shape.pace(34.999) == pytest.approx(100, abs=0.01)
    assert shape.pace(35) == 0 and shape.pace(50) == pytest.approx(20)
    assert shape.pace(55) == 0 and shape.phase_at(55) is None
    # The stages' mean rate: what they ask in all over their duration.
    assert shape.mean == pytest.approx((200 + 1200 + 0 + 200) / 50)


def _integral(shape: Shape, t: float, steps: int = 20_000) -> float:
    """The rate's integral from 0 to t, numerically (midpoints)."""
    dt = t / steps
    return math.fsum(shape.pace((i + 0.5) * dt) * dt for i in range(steps))


def test_an_open_loop_starts_each_request_where_the_rate_integrates_to_it() -> None:
    shape = parse_shape("2s:10/s,ramp:4s:30/s,ramp:2s:0/s,1s:0/s,2s:15/s", "1")
    starts = list(shape.starts())
    times = [t for t, _ in starts]
    assert times == sorted(times) and times[0] == 0
    # Each stage starts exactly the requests its rate asks (areas that are whole numbers).
    by_stage = {p.index: sum(1 for _, q in starts if q is p) for p in shape.phases}
    assert by_stage == {-1: 10, 0: 20, 1: 80, 2: 30, 3: 0, 4: 30}
    # Request n starts where the integral of the rate reaches n: closer as the ramp climbs.
    for n in (0, 10, 25, 64, 105, 125, 139, 140, 155):
        assert _integral(shape, times[n]) == pytest.approx(n, abs=0.01), n
    ramp = [t for t, p in starts if p.index == 1]
    gaps = [b - a for a, b in itertools.pairwise(ramp)]
    assert gaps == sorted(gaps, reverse=True) and gaps[0] > 2 * gaps[-1]


def test_a_fraction_of_a_request_carries_into_the_next_stage() -> None:
    shape = parse_shape("1.5s:7/s,1.5s:7/s")  # 10.5 requests each: 21 in all
    starts = list(shape.starts())
    assert len(starts) == 21
    assert [sum(1 for _, p in starts if p.index == i) for i in (0, 1)] == [11, 10]
    assert all(t == pytest.approx(n / 7) for n, (t, _) in enumerate(starts))


def test_a_closed_loop_rounds_the_ramp_to_whole_workers() -> None:
    shape = parse_shape("ramp:3s:3,2s:1,ramp:2s:4,1s:0")
    assert [shape.workers_at(t / 10) for t in range(0, 80, 5)] == [
        0, 1, 1, 2, 2, 3, 1, 1, 1, 1, 1, 2, 3, 3, 0, 0,
    ]  # fmt: skip
    assert shape.peak == 4
    # A worker asleep wakes when the shape first wants it: what workers_at says, on a fine grid.
    for k in (1, 2, 3, 4, 5):
        for t in (0.0, 0.7, 2.2, 3.0, 5.1, 6.9):
            wake = shape.next_active(k, t)
            grid = [t + i / 1000 for i in range(int((shape.total_s - t) * 1000))]
            first = next((u for u in grid if shape.workers_at(u) >= k), None)
            if first is None:
                assert wake is None, (k, t)
            else:
                assert wake is not None and abs(wake - first) <= 0.0011, (k, t, wake, first)
                assert shape.workers_at(wake) >= k


def test_a_worker_takes_its_share_of_every_stage() -> None:
    rates = parse_shape("10s:30/s,ramp:10s:90/s", "5s:15/s")
    share = Share(1, 3).shape(rates)
    assert [s.target for s in share.stages] == [10, 30] and share.warmup == Stage(5, 5)
    assert [s.ramp for s in share.stages] == [False, True]
    concurrencies = parse_shape("10s:4,ramp:10s:7,5s:0", "2s")
    shares = [Share(i, 3).shape(concurrencies) for i in range(3)]
    assert [[s.target for s in w.stages] for w in shares] == [[2, 3, 0], [1, 2, 0], [1, 2, 0]]
    assert sum(w.warmup.target for w in shares if w.warmup) == 4
    with pytest.raises(ValueError, match="concurrency 2 cannot be split across 3 workers"):
        Share(0, 3).shape(parse_shape("10s:2"))
