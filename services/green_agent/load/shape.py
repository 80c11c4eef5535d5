"""A load shape: stages of rate or concurrency over time, and a warm-up left out of the figures.

A shape is a list of stages, each ``duration`` seconds at a ``target`` pace, as k6's ``stages``
and ``ramping-arrival-rate`` and Locust's ``LoadTestShape`` give them. All stages of one shape run
one **loop**: ``open``, its targets a **rate** (requests started per second, whatever the
latency), or ``closed``, its targets a **concurrency** (requests in flight). The loop is the one
name of that axis everywhere: the shape's, each stage's figures', the report's. A stage either holds its target from its start (a *step*) or goes
linearly from the previous stage's target to its own (a *ramp*; the first stage ramps from the
warm-up's pace, or from 0 without one). The **warm-up** runs before the first stage, held at a
pace of its own (the first stage's target unless given): its outcomes are counted apart and left
out of every figure of the run.

The text form, for ``load --stages`` and the chart::

    STAGE[,STAGE...]          STAGE = [ramp:|step:]DURATION:TARGET (step: the default)
    DURATION                  seconds: 30, 30s, 1.5m or 1h
    TARGET                    20/s: a rate (open loop); 8: a concurrency (closed loop)
    --warmup DURATION[:TARGET]

``10s:20/s,ramp:20s:100/s,30s:100/s`` holds 20 requests per second for 10 s, ramps to 100/s over
20 s (the rate rises linearly: 1,200 requests in that stage) and holds 100/s for 30 s.

The pace at a time: an open loop starts request ``n`` (from 0) at the time the integral of the
rate reaches ``n`` (:meth:`Shape.starts`), so a ramp's starts come closer together as the rate
climbs and each stage starts the requests its rate asks; a closed loop keeps
:meth:`Shape.workers_at` workers sending back to back (a ramp's real-valued concurrency rounded to
the nearest whole worker).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Literal

#: Open: the targets are rates; closed: concurrencies.
Loop = Literal["open", "closed"]
# A request's start time is computed from its index: a stage whose integral is a whole number of
# requests ends exactly on one, and float rounding must not move it into the stage.
_EPS = 1e-9
_UNITS_S = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([smh]?)")
_TARGET = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(/s)?")


class ShapeError(ValueError):
    """A shape's text or figures do not describe a load (the message says which part, and why)."""


@dataclass(frozen=True, slots=True)
class Stage:
    """``duration_s`` seconds at ``target``: held from its start, or reached linearly (``ramp``)."""

    duration_s: float
    target: float
    ramp: bool = False


@dataclass(frozen=True, slots=True)
class Phase:
    """A stage placed in time: from ``start_s`` (since the run began), pace ``begin`` to ``end``.

    ``index`` is the stage's index (0 for the first), -1 for the warm-up; ``before`` is the
    integral of the pace up to ``start_s`` (for a rate: the requests due before it).
    """

    index: int
    start_s: float
    duration_s: float
    begin: float
    end: float
    ramp: bool
    before: float

    @property
    def warmup(self) -> bool:
        """Whether this is the warm-up."""
        return self.index < 0

    @property
    def end_s(self) -> float:
        """When it ends, in seconds since the run began."""
        return self.start_s + self.duration_s

    @property
    def area(self) -> float:
        """The integral of its pace (for a rate: the requests it starts)."""
        return (self.begin + self.end) / 2 * self.duration_s

    @property
    def mean(self) -> float:
        """Its mean pace."""
        return (self.begin + self.end) / 2

    def pace(self, t: float) -> float:
        """The pace at ``t`` seconds since the run began (within the phase)."""
        if not self.ramp:
            return self.end
        done = min(max((t - self.start_s) / self.duration_s, 0.0), 1.0)
        return self.begin + (self.end - self.begin) * done

    def time_of(self, m: float) -> float:
        """Seconds after its start at which the integral of its pace reaches ``m`` (0..area).

        Solves ``begin * tau + a * tau**2 = m`` with ``a = (end - begin) / (2 * duration)``, in
        the form that stays exact when ``a`` is small (no difference of near-equal roots).
        """
        if m <= 0:
            return 0.0
        a = (self.end - self.begin) / (2 * self.duration_s) if self.ramp else 0.0
        b = self.begin if self.ramp else self.end
        if a == 0:
            return m / b
        return 2 * m / (b + math.sqrt(max(b * b + 4 * a * m, 0.0)))


@dataclass(frozen=True)
class Shape:
    """Stages of one loop, and an optional warm-up (a step, before them)."""

    loop: Loop
    stages: tuple[Stage, ...]
    warmup: Stage | None = None

    def __post_init__(self) -> None:
        """Refuse a shape that is no load: no stage, a duration or a target out of range."""
        if not self.stages:
            raise ShapeError("a shape has at least one stage")
        if self.warmup is not None and (self.warmup.ramp or self.warmup.target <= 0):
            raise ShapeError("the warm-up holds one pace above 0")
        for number, stage in enumerate(self.stages, 1):
            _check(stage, self.loop, f"stage {number}")
        if self.warmup is not None:
            _check(self.warmup, self.loop, "the warm-up")
        if not any(stage.target > 0 for stage in self.stages):
            raise ShapeError("every stage's target is 0: the shape asks for no load")

    @classmethod
    def constant(cls, loop: Loop, target: float, duration_s: float, warmup_s: float = 0) -> Shape:
        """One step of ``target`` for ``duration_s`` (what ``--rate`` or ``--concurrency`` asks)."""
        warmup = Stage(warmup_s, target) if warmup_s > 0 else None
        return cls(loop, (Stage(duration_s, target),), warmup)

    @cached_property
    def phases(self) -> tuple[Phase, ...]:
        """The warm-up (if any) and the stages, placed in time."""
        phases = []
        start = before = 0.0
        previous = 0.0
        stages = [(-1, self.warmup)] if self.warmup is not None else []
        stages += list(enumerate(self.stages))
        for index, stage in stages:
            begin = previous if stage.ramp else stage.target
            phase = Phase(index, start, stage.duration_s, begin, stage.target, stage.ramp, before)
            phases.append(phase)
            start, before, previous = phase.end_s, before + phase.area, stage.target
        return tuple(phases)

    @property
    def warmup_s(self) -> float:
        """Seconds of warm-up (0: none)."""
        return self.warmup.duration_s if self.warmup is not None else 0.0

    @property
    def duration_s(self) -> float:
        """Seconds of the stages: the run's measured part."""
        return math.fsum(stage.duration_s for stage in self.stages)

    @property
    def total_s(self) -> float:
        """Seconds of the whole run: the warm-up and the stages."""
        return self.warmup_s + self.duration_s

    @property
    def peak(self) -> float:
        """The highest target, the warm-up's included (a closed loop's most workers)."""
        return max(p.end for p in self.phases)

    @property
    def mean(self) -> float:
        """The stages' mean pace (for a rate: the requests they start per second)."""
        measured = [p for p in self.phases if not p.warmup]
        return math.fsum(p.area for p in measured) / self.duration_s

    @property
    def steady(self) -> bool:
        """Whether it is one step (``--rate`` or ``--concurrency``), a warm-up or not."""
        return len(self.stages) == 1 and not self.stages[0].ramp

    def phase_at(self, t: float) -> Phase | None:
        """The phase running at ``t`` seconds since the run began (None once it has ended)."""
        for phase in self.phases:
            if t < phase.end_s:
                return phase
        return None

    def pace(self, t: float) -> float:
        """The pace asked at ``t`` seconds since the run began (0 once it has ended)."""
        phase = self.phase_at(t)
        return phase.pace(t) if phase is not None else 0.0

    def workers_at(self, t: float) -> int:
        """A closed loop's workers at ``t``: the pace rounded to the nearest whole worker."""
        return math.floor(self.pace(t) + 0.5)

    def next_active(self, k: int, t: float) -> float | None:
        """The first time from ``t`` on with at least ``k`` workers (None: not before the end)."""
        for phase in self.phases:
            if phase.end_s <= t:
                continue
            here = max(t, phase.start_s)
            if math.floor(phase.pace(here) + 0.5) >= k:
                return here
            if phase.ramp and phase.end > phase.begin:
                # The pace rises through k - 1/2 (where rounding gives k) within the phase?
                rise = (k - 0.5 - phase.begin) / (phase.end - phase.begin) * phase.duration_s
                # A hair later, so that the pace computed there has surely reached it.
                at = phase.start_s + rise + _EPS
                if here <= at < phase.end_s:
                    return at
        return None

    def starts(self) -> Iterator[tuple[float, Phase]]:
        """An open loop's schedule: each request's start (seconds since the run began), its phase.

        Request ``n`` starts when the integral of the rate reaches ``n``: the first at 0, a step
        of ``r`` per second every ``1 / r`` s, a ramp ever closer together as its rate climbs.
        """
        n = 0
        for phase in self.phases:
            top = phase.before + phase.area
            while n < top - _EPS:
                tau = phase.time_of(n - phase.before)
                yield phase.start_s + min(tau, phase.duration_s), phase
                n += 1

    def scaled(self, split: Callable[[float], float]) -> Shape:
        """The shape with every target, the warm-up's too, mapped by ``split`` (a share)."""
        stages = tuple(replace(s, target=split(s.target)) for s in self.stages)
        warmup = replace(self.warmup, target=split(self.warmup.target)) if self.warmup else None
        return Shape(self.loop, stages, warmup)

    def text(self) -> str:
        """The stages in the text form :func:`parse_stages` reads."""
        return ",".join(stage_text(stage, self.loop) for stage in self.stages)

    def warmup_text(self) -> str:
        """The warm-up in the text form :func:`parse_warmup` reads ("0": none)."""
        if self.warmup is None:
            return "0"
        seconds = number_text(self.warmup.duration_s)
        return f"{seconds}s:{target_text(self.warmup.target, self.loop)}"


def _check(stage: Stage, loop: Loop, name: str) -> None:
    if not (math.isfinite(stage.duration_s) and stage.duration_s > 0):
        raise ShapeError(f"{name}: its duration must be above 0 seconds")
    if not (math.isfinite(stage.target) and stage.target >= 0):
        raise ShapeError(f"{name}: its target must be 0 or more")
    if loop == "closed" and not float(stage.target).is_integer():
        raise ShapeError(f"{name}: a concurrency is a whole number of requests in flight")


def number_text(value: float) -> str:
    """A number as the shape's text writes it: ``20``, ``2.5``, exactly (``repr`` of a float)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def target_text(target: float, loop: Loop) -> str:
    """A target as the text form writes it: ``20/s`` (a rate) or ``8`` (a concurrency)."""
    return number_text(target) + ("/s" if loop == "open" else "")


def pace_name(loop: Loop) -> str:
    """What a loop's targets are: a rate (open) or a concurrency (closed)."""
    return "rate" if loop == "open" else "concurrency"


def stage_text(stage: Stage, loop: Loop) -> str:
    """One stage in the text form: ``[ramp:]DURATION:TARGET``."""
    ramp = "ramp:" if stage.ramp else ""
    return f"{ramp}{number_text(stage.duration_s)}s:{target_text(stage.target, loop)}"


def parse_duration(text: str) -> float:
    """Seconds from ``30``, ``30s``, ``1.5m`` or ``1h``."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise ShapeError(f"{text.strip()!r} is no duration (e.g. 30, 30s, 1.5m, 1h)")
    return float(match[1]) * _UNITS_S[match[2]]


def parse_target(text: str) -> tuple[Loop, float]:
    """A target's loop and value: ``20/s`` a rate (open), ``8`` a concurrency (closed)."""
    match = _TARGET.fullmatch(text.strip())
    if match is None:
        raise ShapeError(f"{text.strip()!r} is no target (e.g. 20/s: a rate; 8: a concurrency)")
    return ("open" if match[2] else "closed"), float(match[1])


def _stage(text: str, number: int) -> tuple[Loop, Stage]:
    fields = [f.strip() for f in text.split(":")]
    kind_of_stage = fields[0].lower()
    if kind_of_stage in ("ramp", "step"):
        fields = fields[1:]
    if len(fields) != 2:
        raise ShapeError(
            f"stage {number} ({text.strip()!r}): a stage is [ramp:]DURATION:TARGET, e.g. 30s:20/s"
        )
    try:
        duration, (loop, target) = parse_duration(fields[0]), parse_target(fields[1])
    except ShapeError as e:
        raise ShapeError(f"stage {number}: {e}") from None
    return loop, Stage(duration, target, kind_of_stage == "ramp")


def parse_stages(text: str) -> tuple[Loop, tuple[Stage, ...]]:
    """The stages of ``STAGE[,STAGE...]`` and their loop (one for all).

    Raises:
        ShapeError: A stage that does not read, or stages of both loops.

    """
    parts = text.split(",")
    if not text.strip() or any(not part.strip() for part in parts):
        raise ShapeError(f"{text!r}: stages are STAGE[,STAGE...], none empty")
    read = [_stage(part, number) for number, part in enumerate(parts, 1)]
    loops = {loop for loop, _ in read}
    if len(loops) > 1:
        first = read[0][0]
        other = next(number for number, (loop, _) in enumerate(read, 1) if loop != first)
        raise ShapeError(
            f"stage {other} is a {pace_name(read[other - 1][0])}, stage 1 a "
            f"{pace_name(first)}: the stages of one "
            "shape are all rates (20/s, open loop) or all concurrencies (8, closed loop)"
        )
    return read[0][0], tuple(stage for _, stage in read)


def parse_warmup(text: str) -> tuple[float, tuple[Loop, float] | None]:
    """Seconds of warm-up and its target if given: ``DURATION[:TARGET]``."""
    duration, _, target = text.partition(":")
    try:
        seconds = parse_duration(duration)
        return seconds, parse_target(target) if target.strip() else None
    except ShapeError as e:
        raise ShapeError(f"warm-up {text.strip()!r}: {e}") from None


def with_warmup(shape: Shape, text: str) -> Shape:
    """``shape`` with the warm-up of ``text`` (``DURATION[:TARGET]``; 0: none).

    Without a target the warm-up holds the first stage's target.
    """
    seconds, target = parse_warmup(text)
    if seconds == 0:
        return replace(shape, warmup=None)
    if target is not None and target[0] != shape.loop:
        mine, theirs = pace_name(target[0]), pace_name(shape.loop)
        raise ShapeError(f"the warm-up's target is a {mine}, the stages' a {theirs}: give one kind")
    pace = target[1] if target is not None else shape.stages[0].target
    if pace <= 0:
        raise ShapeError("the warm-up needs a pace above 0: give it one, e.g. --warmup 10s:5/s")
    return replace(shape, warmup=Stage(seconds, pace))


def parse_shape(stages: str, warmup: str = "0") -> Shape:
    """A shape from its text form: the stages and the warm-up.

    Raises:
        ShapeError: The text does not read, or describes no load.

    """
    loop, read = parse_stages(stages)
    return with_warmup(Shape(loop, read), warmup)
