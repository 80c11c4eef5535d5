"""The chart's load-test shapes: loadTest.stages and loadTest.warmupSeconds rendered into the
generators' `load --stages` and `--warmup`, read back by the generator's own parser, and the
values that would make the Job fail refused at render time instead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from services.green_agent.load.shape import Shape, Stage, parse_shape
from tests.k8s.rendering import RenderError, containers, render


def _args(*values_files: str, **sets: object) -> list[str]:
    rendered = render(*values_files, loadTest__enabled=True, **sets)
    (job,) = rendered.component("Job", "load-generator")
    (generator,) = containers(job)
    args: list[str] = generator["args"]
    return args


def _option(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def _values(tmp_path: Path, load_test: dict[str, Any]) -> str:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump({"loadTest": {"enabled": True, **load_test}}))
    return str(path)  # absolute: the renderer takes it as it is


def test_the_full_scenario_runs_a_closed_loop_in_stages_after_a_warm_up() -> None:
    args = _args("ci/full-values.yaml")
    stages, warmup = _option(args, "--stages") or "", _option(args, "--warmup") or ""
    assert (stages, warmup) == ("30s:16,ramp:60s:64,120s:64", "15")
    for replaced in ("--duration", "--concurrency", "--rate", "--max-in-flight"):
        assert replaced not in args
    # What the generator reads from them: the values' stages, and the warm-up at the first.
    assert parse_shape(stages, warmup) == Shape(
        "closed", (Stage(30, 16), Stage(60, 64, ramp=True), Stage(120, 64)), Stage(15, 16)
    )


def test_rate_stages_keep_the_open_loops_cap_and_their_fractions(tmp_path: Path) -> None:
    stages = [
        {"durationSeconds": 60, "rate": 100},
        {"durationSeconds": 90.5, "rate": 250.5, "ramp": True},
        {"durationSeconds": 30, "rate": 0},
    ]
    args = _args(_values(tmp_path, {"stages": stages, "maxInFlight": 64}))
    assert _option(args, "--stages") == "60s:100/s,ramp:90.5s:250.5/s,30s:0/s"
    assert _option(args, "--max-in-flight") == "64" and "--warmup" not in args
    assert parse_shape(_option(args, "--stages") or "").mean == pytest.approx(
        (6000 + 175.25 * 90.5) / 180.5
    )


def test_without_stages_the_pace_is_one_step_for_the_duration() -> None:
    args = _args(loadTest__rate=40, loadTest__warmupSeconds=10)
    assert (_option(args, "--rate"), _option(args, "--duration")) == ("40", "60")
    assert _option(args, "--warmup") == "10" and "--stages" not in args
    args = _args()
    assert (_option(args, "--concurrency"), _option(args, "--duration")) == ("16", "60")
    assert "--warmup" not in args


@pytest.mark.parametrize(
    ("load_test", "why"),
    [
        (
            {
                "stages": [
                    {"durationSeconds": 9, "rate": 5},
                    {"durationSeconds": 9, "concurrency": 6},
                ]
            },
            "every stage has a rate .* or every stage a concurrency",
        ),
        (
            {"stages": [{"durationSeconds": 9, "concurrency": 2}]},
            r"stages\[0\].concurrency is split",
        ),
        ({"stages": [{"durationSeconds": 9, "rate": 0}]}, "every target is 0"),
        (
            {"stages": [{"durationSeconds": 3000, "rate": 5}], "warmupSeconds": 700},
            "run 3700 s; a load runs 3600 s at most",
        ),
        (
            {
                "stages": [{"durationSeconds": 9, "rate": 0}, {"durationSeconds": 9, "rate": 5}],
                "warmupSeconds": 5,
            },
            "runs at the first stage's target, and it is 0",
        ),
        ({"stages": [{"durationSeconds": 9, "rate": 5, "concurrency": 6}]}, "schema"),
        ({"stages": [{"durationSeconds": 9}]}, "schema"),
        ({"stages": [{"rate": 5}]}, "schema"),
        ({"stages": [{"durationSeconds": 9, "rate": 5, "slope": 2}]}, "schema"),
        ({"warmupSeconds": -1}, "schema"),
    ],
)
def test_a_shape_the_generators_would_refuse_fails_the_render(
    tmp_path: Path, load_test: dict[str, Any], why: str
) -> None:
    with pytest.raises(RenderError, match=why):
        render(_values(tmp_path, load_test))
