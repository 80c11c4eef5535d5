"""A shaped load run's figures by stage, and its warm-up's, which no other figure of the run counts.

Each stage of the shape (:mod:`services.green_agent.load.shape`) reports the pace it asked (its
targets; for a rate, the requests per second it asked on average) and what it achieved: an open
loop's requests started per second within the stage, a closed loop's requests completed per
second within it and the mean number in flight (the time average, from every request's start and
end). Its outcomes (answered, failed, latency) are those of the requests it started. The
warm-up's outcomes are only counted: none of them is in the run's latencies, throughput,
timeline or any stage. A generator records them as its requests end
(:class:`~services.green_agent.load.recorder.Recorder`).

Figures of several workers merge by adding (targets, counts, rates, requests in flight) and by
merging histograms; a stage's duration is the longest any worker ran it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel
from rich.table import Table

from services.green_agent.evaluation.report import LatencyStats
from services.green_agent.load.histogram import LatencyHistogram, merge_all
from services.green_agent.load.shape import Kind
from services.green_agent.load.timeline import histogram_stats


class StageFigures(BaseModel):
    """One stage: what it asked and what it achieved.

    ``start_target`` is the pace at its start (a ramp's previous target), ``asked_rate`` the
    requests per second an open loop's stage asked on average and ``asked_concurrency`` a closed
    loop's mean requests in flight asked (None for the other kind). ``achieved_rate`` is what
    the stage is held to: requests started per second (open loop) or completed per second
    (closed loop) over ``ran_s``, the seconds it ran (less than ``duration_s`` when the run was
    stopped early).
    """

    stage: int
    kind: Literal["step", "ramp"]
    pace: Kind
    duration_s: float
    ran_s: float
    start_target: float
    target: float
    asked_rate: float | None
    asked_concurrency: float | None
    started: int
    dropped: int
    completed: int
    started_rate: float
    completed_rate: float
    achieved_rate: float
    mean_concurrency: float
    ok: int
    errors: int
    latency: LatencyStats
    latencies: LatencyHistogram


class WarmupFigures(BaseModel):
    """The warm-up: how long, at what pace, and its outcomes (in no other figure of the run)."""

    duration_s: float
    ran_s: float
    target: float
    requests: int
    ok: int
    errors: int
    dropped: int


#: What several workers' stages add up to: their counts, and their rates (each its own share).
_ADDED = (
    *("started", "dropped", "completed", "ok", "errors"),
    *("started_rate", "completed_rate", "achieved_rate", "mean_concurrency"),
)


def merge_stages(workers: Sequence[Sequence[StageFigures]]) -> list[StageFigures]:
    """The stages of several workers' reports as one: figures added, histograms merged.

    Raises:
        ValueError: The workers ran different stages.

    """
    if not workers:
        return []
    first = workers[0]
    for theirs in workers[1:]:
        if [(s.kind, s.pace, s.duration_s) for s in theirs] != [
            (s.kind, s.pace, s.duration_s) for s in first
        ]:
            raise ValueError("the workers' reports ran different stages: they merge only alike")
    merged = []
    for same in zip(*workers, strict=True):
        latencies = merge_all(s.latencies for s in same)
        asked_rates = [s.asked_rate for s in same if s.asked_rate is not None]
        asked_concurrencies = [s.asked_concurrency for s in same if s.asked_concurrency is not None]
        merged.append(
            same[0].model_copy(
                update={
                    "ran_s": max(s.ran_s for s in same),
                    "start_target": sum(s.start_target for s in same),
                    "target": sum(s.target for s in same),
                    "asked_rate": sum(asked_rates) if asked_rates else None,
                    "asked_concurrency": sum(asked_concurrencies) if asked_concurrencies else None,
                    **{name: sum(getattr(s, name) for s in same) for name in _ADDED},
                    "latency": histogram_stats(latencies),
                    "latencies": latencies,
                }
            )
        )
    return merged


def merge_warmups(warmups: Sequence[WarmupFigures | None]) -> WarmupFigures | None:
    """The warm-ups of several workers as one (None when none had one)."""
    present = [w for w in warmups if w is not None]
    if not present:
        return None
    return WarmupFigures(
        duration_s=max(w.duration_s for w in present),
        ran_s=max(w.ran_s for w in present),
        target=sum(w.target for w in present),
        requests=sum(w.requests for w in present),
        ok=sum(w.ok for w in present),
        errors=sum(w.errors for w in present),
        dropped=sum(w.dropped for w in present),
    )


def target_label(value: float, pace: Kind) -> str:
    """A target as a reader reads it: ``20/s`` or ``8 in flight``."""
    return f"{value:g}/s" if pace == "rate" else f"{value:g} in flight"


def stage_label(stage: StageFigures) -> str:
    """What a stage asked: ``step 20/s`` or ``ramp 20/s → 100/s``."""
    if stage.kind == "ramp":
        begin = target_label(stage.start_target, stage.pace).removesuffix(" in flight")
        return f"ramp {begin} → {target_label(stage.target, stage.pace)}"
    return f"step {target_label(stage.target, stage.pace)}"


def warmup_line(warmup: WarmupFigures, pace: Kind) -> str:
    """The warm-up in one line: its pace, time and outcomes, said to be left out."""
    return (
        f"warm-up {warmup.ran_s:g} s at {target_label(warmup.target, pace)}: "
        f"{warmup.requests:,} requests ({warmup.ok:,} ok, {warmup.errors:,} errors, "
        f"{warmup.dropped:,} dropped), left out of every figure"
    )


def _short_target(stage: StageFigures) -> str:
    unit = "/s" if stage.pace == "rate" else ""
    if stage.kind == "ramp":
        return f"{stage.start_target:g}→{stage.target:g}{unit}"
    return f"{stage.target:g}{unit}"


def stages_table(stages: Sequence[StageFigures], warmup: WarmupFigures | None) -> Table:
    """The stages as one rich table (narrow enough for 80 columns), the warm-up in its caption."""
    open_loop = bool(stages) and stages[0].pace == "rate"
    unit = (
        "open loop: asked and achieved are requests started per second"
        if open_loop
        else "closed loop: asked in flight, achieved completed per second"
    )
    table = Table(title=f"{len(stages)} stages ({unit})")
    columns = ("#", "target", "asked", "achieved", "in flight", "sent", "err", "p50 ms", "p99 ms")
    for column in columns:
        table.add_column(column, justify="right")
    for s in stages:
        asked = s.asked_rate if open_loop else s.asked_concurrency
        table.add_row(
            str(s.stage),
            _short_target(s),
            "-" if asked is None else f"{asked:.1f}",
            f"{s.achieved_rate:.1f}",
            f"{s.mean_concurrency:.1f}",
            str(s.started),
            str(s.errors),
            f"{s.latency.p50_s * 1000:.1f}" if s.ok else "-",
            f"{s.latency.p99_s * 1000:.1f}" if s.ok else "-",
        )
    if warmup is not None and stages:
        table.caption = warmup_line(warmup, stages[0].pace)
    return table
