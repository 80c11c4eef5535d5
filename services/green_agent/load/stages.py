"""A shaped load run's figures by stage, and its warm-up's, which no other figure of the run counts.

Each stage of the shape (:mod:`services.green_agent.load.shape`) reports the pace it asked (its
targets; for a rate, the requests per second it asked on average) and what it achieved: an open
loop's requests started per second within the stage, a closed loop's requests completed per
second within it and the mean number in flight (the time average, from every request's start and
end). Its outcomes (answered, failed, latency) are those of the requests it started. The
warm-up's outcomes are only counted: none of them is in the run's latencies, throughput,
timeline or any stage. A generator records them as its requests end
(:class:`~services.green_agent.load.recorder.Recorder`).

A stage's figures are written from its tally (:class:`StageTally`): the tallies of several
workers add (targets, counts, time in flight) and their histograms merge; a stage ran as long as
the longest any worker ran it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel
from rich.table import Table

from services.green_agent.evaluation.report import LatencyStats
from services.green_agent.load.histogram import LatencyHistogram
from services.green_agent.load.shape import Loop, Phase
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
    loop: Loop
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


def _rate(count: float, seconds: float) -> float:
    return count / seconds if seconds > 0 else 0.0


@dataclass(slots=True)
class StageTally:
    """One stage as its requests end: by the requests it started, and the time others spent in it.

    The tallies of several workers' same stage add (:meth:`add`): their phases' targets too.
    """

    phase: Phase
    started: int = 0
    dropped: int = 0
    completed: int = 0
    errors: int = 0
    busy_s: float = 0.0
    latencies: LatencyHistogram = field(default_factory=LatencyHistogram)

    @classmethod
    def of_figures(cls, phase: Phase, figures: StageFigures) -> StageTally:
        """The tally a report's stage was written from."""
        return cls(
            phase,
            figures.started,
            figures.dropped,
            figures.completed,
            figures.errors,
            figures.mean_concurrency * figures.ran_s,
            figures.latencies.model_copy(deep=True),
        )

    def add(self, other: StageTally) -> None:
        """Add another worker's tally of the same stage (its phase is the shapes' sum's)."""
        self.started += other.started
        self.dropped += other.dropped
        self.completed += other.completed
        self.errors += other.errors
        self.busy_s += other.busy_s
        self.latencies = self.latencies.merged(other.latencies)

    def figures(self, loop: Loop, ended_s: float) -> StageFigures:
        """Its figures, the run having stopped starting requests ``ended_s`` after its origin."""
        phase = self.phase
        ran = min(max(ended_s - phase.start_s, 0.0), phase.duration_s)
        started_rate = _rate(self.started, ran)
        completed_rate = _rate(self.completed, ran)
        return StageFigures(
            stage=phase.index + 1,
            kind="ramp" if phase.ramp else "step",
            loop=loop,
            duration_s=phase.duration_s,
            ran_s=ran,
            start_target=phase.begin,
            target=phase.end,
            asked_rate=phase.mean if loop == "open" else None,
            asked_concurrency=phase.mean if loop == "closed" else None,
            started=self.started,
            dropped=self.dropped,
            completed=self.completed,
            started_rate=started_rate,
            completed_rate=completed_rate,
            achieved_rate=started_rate if loop == "open" else completed_rate,
            mean_concurrency=_rate(self.busy_s, ran),
            ok=self.latencies.count,
            errors=self.errors,
            latency=histogram_stats(self.latencies),
            latencies=self.latencies.model_copy(deep=True),
        )


def target_label(value: float, loop: Loop) -> str:
    """A target as a reader reads it: ``20/s`` or ``8 in flight``."""
    return f"{value:g}/s" if loop == "open" else f"{value:g} in flight"


def stage_label(stage: StageFigures) -> str:
    """What a stage asked: ``step 20/s`` or ``ramp 20/s → 100/s``."""
    if stage.kind == "ramp":
        begin = target_label(stage.start_target, stage.loop).removesuffix(" in flight")
        return f"ramp {begin} → {target_label(stage.target, stage.loop)}"
    return f"step {target_label(stage.target, stage.loop)}"


def warmup_line(warmup: WarmupFigures, loop: Loop) -> str:
    """The warm-up in one line: its pace, time and outcomes, said to be left out."""
    return (
        f"warm-up {warmup.ran_s:g} s at {target_label(warmup.target, loop)}: "
        f"{warmup.requests:,} requests ({warmup.ok:,} ok, {warmup.errors:,} errors, "
        f"{warmup.dropped:,} dropped), left out of every figure"
    )


def _short_target(stage: StageFigures) -> str:
    unit = "/s" if stage.loop == "open" else ""
    if stage.kind == "ramp":
        return f"{stage.start_target:g}→{stage.target:g}{unit}"
    return f"{stage.target:g}{unit}"


def stages_table(stages: Sequence[StageFigures], warmup: WarmupFigures | None) -> Table:
    """The stages as one rich table (narrow enough for 80 columns), the warm-up in its caption."""
    open_loop = bool(stages) and stages[0].loop == "open"
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
        table.caption = warmup_line(warmup, stages[0].loop)
    return table
