"""`helm upgrade --reuse-values` from every chart version since 0.3.0 renders, as a fresh install
of the new chart with the same settings would.

With --reuse-values Helm renders the new templates over the old chart's values (its values.yaml
and the release's own settings), never the new values.yaml, and checks them against the new
schema: every value added since is missing. The chart fills those in where they are missing
(templates/_upgrade.tpl, from files/added-values.yaml). Each version's values.yaml comes from the
repository's history, at the last commit that carried that version; a shallow clone or a copy
without its git history cannot say what those were, and skips those tests saying so (as
scripts/lint/chart-version.sh does).
"""

from __future__ import annotations

import base64
import copy
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.common.tokens import MIN_TOKEN_CHARS
from tests.k8s.rendering import (
    CHART,
    ROOT,
    Doc,
    Rendered,
    RenderError,
    containers,
    install_notes,
    template,
    token_source,
)

CHART_PATH = CHART.relative_to(ROOT).as_posix()
FIRST = (0, 3, 0)
ADDED = CHART / "files" / "added-values.yaml"
FILL = '{{- include "nfcorpus.addedValues" . }}'
AUTH_SECRET = "nfcorpus-retrieval-auth"
#: The release's own settings of each render: none (the old chart's defaults), and auth on.
SETTINGS = {"auth-off": {}, "auth-on": {"auth.enabled": "true"}}
#: What the comparison with a fresh install turns on: the templates that read most added values
#: (the tokens, the load test's shape and token, the scrape token).
EVERYTHING = {"auth.enabled": "true", "loadTest.enabled": "true", "serviceMonitor.enabled": "true"}


@dataclass(frozen=True)
class OldValues:
    """A values.yaml of the chart's history and the versions whose last commit carried it."""

    versions: tuple[str, ...]
    text: str

    @property
    def name(self) -> str:
        return "+".join(self.versions)

    @property
    def values(self) -> dict[str, Any]:
        values: dict[str, Any] = yaml.safe_load(self.text)
        return values


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version)[:3])


def _git(*args: str) -> str:
    cmd = ["git", "-C", str(ROOT), *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def _no_history() -> str | None:
    """Why the chart's history cannot be read here; None when it can."""
    try:
        top = Path(_git("rev-parse", "--show-toplevel").strip())
        shallow = _git("rev-parse", "--is-shallow-repository").strip()
    except (OSError, subprocess.CalledProcessError):
        return "not a git checkout: no history of the chart's versions to upgrade from"
    if top.resolve() != ROOT.resolve():
        return f"not a git checkout of its own (inside {top}): no history of the chart's versions"
    if shallow == "true":
        return "a shallow clone: the chart's older versions are not in it (fetch the history)"
    return None


def _history() -> list[OldValues]:
    """values.yaml of every chart version since 0.3.0 at the last commit that carried it, one
    per distinct file, the versions that share it named together."""
    # Walked over values.yaml too: a commit that changed values.yaml alone still carried the
    # version Chart.yaml says, and was the last one that did if no later commit changed either.
    paths = (f"{CHART_PATH}/Chart.yaml", f"{CHART_PATH}/values.yaml")
    last: dict[str, str] = {}  # version -> its newest commit; git log lists the newest first
    for commit in _git("log", "--format=%H", "--", *paths).split():
        chart = yaml.safe_load(_git("show", f"{commit}:{CHART_PATH}/Chart.yaml"))
        last.setdefault(str(chart["version"]), commit)
    shared: dict[str, list[str]] = {}
    for version, commit in last.items():
        if _version_key(version) >= FIRST:
            text = _git("show", f"{commit}:{CHART_PATH}/values.yaml")
            shared.setdefault(text, []).append(version)
    found = (OldValues(tuple(sorted(v, key=_version_key)), text) for text, v in shared.items())
    return sorted(found, key=lambda old: _version_key(old.versions[0]))


NO_HISTORY = _no_history()
HISTORY = [] if NO_HISTORY else _history()
OLD = [pytest.param(old, id=old.name) for old in HISTORY] or [
    pytest.param(
        None,
        id="no-history",
        marks=pytest.mark.skip(reason=NO_HISTORY or "no chart version since 0.3.0 in the history"),
    )
]

Render = Callable[[OldValues, Mapping[str, str]], Rendered]


@pytest.fixture(scope="module")
def chart_of(tmp_path_factory: pytest.TempPathFactory) -> Callable[[OldValues], Path]:
    """The chart as --reuse-values renders it from an old version: a copy of the current chart
    with that version's values.yaml in place of its own."""
    charts: dict[OldValues, Path] = {}

    def copy_for(old: OldValues) -> Path:
        if old not in charts:
            chart = tmp_path_factory.mktemp("reuse") / CHART.name
            shutil.copytree(CHART, chart)
            (chart / "values.yaml").write_text(old.text)
            charts[old] = chart
        return charts[old]

    return copy_for


@pytest.fixture(scope="module")
def reuse(chart_of: Callable[[OldValues], Path]) -> Render:
    """Render the current templates over an old version's values, the release's own settings
    given as --set (as --reuse-values passes them)."""
    done: dict[tuple[OldValues, tuple[tuple[str, str], ...]], Rendered] = {}

    def render_over(old: OldValues, sets: Mapping[str, str]) -> Rendered:
        key = (old, tuple(sorted(sets.items())))
        if key not in done:
            done[key] = template(chart_of(old), *_set_args(sets))
        return done[key]

    return render_over


def _set_args(sets: Mapping[str, str]) -> list[str]:
    return [arg for key, value in sorted(sets.items()) for arg in ("--set", f"{key}={value}")]


def _paths(tree: Any, prefix: str = "") -> dict[str, Any]:
    """Every key of a values tree, nested ones included, by its dotted path."""
    found: dict[str, Any] = {}
    if isinstance(tree, dict):
        for key, value in tree.items():
            path = f"{prefix}{key}"
            found[path] = value
            found.update(_paths(value, f"{path}."))
    return found


def _comparable(r: Rendered) -> dict[tuple[str, str], Doc]:
    """The documents by kind and name, what a render draws at random left out: the generated
    tokens (a Secret's data) and the checksums of the pods' tokens."""
    docs: dict[tuple[str, str], Doc] = {}
    for doc in r.docs:
        doc = copy.deepcopy(doc)  # the renders are cached: theirs stay as rendered
        if doc["kind"] == "Secret":
            doc["data"] = dict.fromkeys(doc.get("data") or {}, "<token>")
        for meta in (doc["metadata"], doc.get("spec", {}).get("template", {}).get("metadata", {})):
            for name in [n for n in meta.get("annotations") or {} if n.startswith("checksum/")]:
                meta["annotations"][name] = "<checksum>"
        docs[(doc["kind"], doc["metadata"]["name"])] = doc
    return docs


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two documents differ: each path with both values, for a message one can act on."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [
            d
            for k in sorted(a.keys() | b.keys())
            for d in _differences(a.get(k), b.get(k), f"{path}.{k}")
        ]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in _differences(x, y, f"{path}[{i}]")
        ]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("old", OLD)
def test_the_chart_renders_over_the_values_of(old: OldValues, settings: str, reuse: Render) -> None:
    try:
        reuse(old, SETTINGS[settings])
    except RenderError as e:
        pytest.fail(
            f"helm upgrade --reuse-values from chart {old.name} ({settings}) fails: {e}",
            pytrace=False,
        )


@pytest.mark.parametrize("old", OLD)
def test_the_upgrade_renders_what_a_fresh_install_with_the_same_settings_renders(
    old: OldValues, reuse: Render, tmp_path: Path
) -> None:
    # A fresh install of the new chart given the old values as the release's own: every value
    # added since at values.yaml's default (what --reset-then-reuse-values would give).
    given = tmp_path / "old-values.yaml"
    given.write_text(old.text)
    fresh = _comparable(template(CHART, "--values", str(given), *_set_args(EVERYTHING)))
    upgraded = _comparable(reuse(old, EVERYTHING))
    assert sorted(upgraded) == sorted(fresh), f"from chart {old.name}"
    for key, doc in fresh.items():
        differs = _differences(upgraded[key], doc)
        assert not differs, (
            f"from chart {old.name}, {key[0]} {key[1]} (upgrade != fresh): {differs}"
        )


@pytest.mark.parametrize("old", OLD)
def test_the_install_notes_are_what_a_fresh_install_with_the_same_settings_prints(
    old: OldValues, chart_of: Callable[[OldValues], Path], tmp_path: Path
) -> None:
    # NOTES.txt reads added values too, and `helm template` leaves it out.
    given = tmp_path / "old-values.yaml"
    given.write_text(old.text)
    fresh = install_notes(CHART, "--values", str(given), *_set_args(EVERYTHING))
    assert install_notes(chart_of(old), *_set_args(EVERYTHING)) == fresh, f"from chart {old.name}"


def _first_leaf(tree: dict[str, Any]) -> tuple[list[str], Any] | None:
    """The first scalar of a values tree, by its keys, and its value."""
    for key, value in tree.items():
        if not isinstance(value, dict):
            return [key], value
        if (inner := _first_leaf(value)) is not None:
            return [key, *inner[0]], inner[1]
    return None


@pytest.mark.parametrize("old", OLD)
def test_one_value_set_inside_each_map_added_since_renders(
    old: OldValues, chart_of: Callable[[OldValues], Path], tmp_path: Path
) -> None:
    # The schema is checked before any template fills a value in: a map added since the old
    # chart that the release sets one key of (a mirror's indexer.image.repository) must require
    # none of the others. Each such map gets its first value set, at its default.
    had = _paths(old.values)
    given: dict[str, Any] = {}
    for path, default in _paths(yaml.safe_load(ADDED.read_text())).items():
        leaf = _first_leaf(default) if isinstance(default, dict) else None
        if path in had or leaf is None:
            continue
        node = given
        keys = [*path.split("."), *leaf[0]]
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = leaf[1]
    if not given:
        pytest.skip(f"chart {old.name} has every map added since")
    release = tmp_path / "release-values.yaml"
    release.write_text(yaml.safe_dump(given))
    try:
        template(chart_of(old), "--values", str(release), *_set_args(SETTINGS["auth-on"]))
    except RenderError as e:
        pytest.fail(f"from chart {old.name}, setting {_set(given)}: {e}", pytrace=False)


def _set(tree: dict[str, Any]) -> list[str]:
    """The dotted paths of a tree's scalars."""
    return [path for path, value in _paths(tree).items() if not isinstance(value, dict)]


@pytest.mark.parametrize("old", OLD)
def test_every_value_added_since_has_its_default_filled_in(old: OldValues) -> None:
    # What the fill does not list, an upgrade from this version renders without.
    current = _paths(yaml.safe_load((CHART / "values.yaml").read_text()))
    missing = set(current) - set(_paths(old.values))
    unlisted = sorted(missing - set(_paths(yaml.safe_load(ADDED.read_text()))))
    assert not unlisted, f"values added since chart {old.name}, not in {ADDED.name}: {unlisted}"


def test_the_filled_in_defaults_are_values_yaml_s() -> None:
    current = _paths(yaml.safe_load((CHART / "values.yaml").read_text()))
    for path, default in _paths(yaml.safe_load(ADDED.read_text())).items():
        assert path in current, f"{ADDED.name} lists {path}, which values.yaml does not hold"
        if not isinstance(default, dict):
            assert default == current[path], f"{path}: {default!r} is not values.yaml's"


def test_every_template_fills_in_the_added_values_before_it_reads_one() -> None:
    # Helm renders the templates in an order of its own: each one fills them in first.
    rendered = [p for p in (CHART / "templates").rglob("*") if p.suffix in (".yaml", ".txt")]
    assert rendered
    for path in rendered:
        first = path.read_text().splitlines()[0]
        assert first == FILL, f"{path.relative_to(CHART)} starts with {first!r}, not {FILL!r}"


@pytest.fixture
def oldest() -> OldValues:
    if not HISTORY:
        pytest.skip(NO_HISTORY or "no chart version since 0.3.0 in the history")
    return HISTORY[0]


def test_the_indexer_runs_its_own_image_of_the_charts_app_version(
    oldest: OldValues, reuse: Render
) -> None:
    assert "image" not in oldest.values["indexer"]  # it ran the servers' image then
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    (job,) = reuse(oldest, SETTINGS["auth-off"]).component("Job", "indexer")
    (indexer,) = containers(job, init=False)
    assert indexer["image"] == f"{values['indexer']['image']['repository']}:{chart['appVersion']}"


def test_the_load_generators_get_a_token_of_their_own_generated(
    oldest: OldValues, reuse: Render
) -> None:
    assert "loadGeneratorToken" not in oldest.values["auth"]
    r = reuse(oldest, {"auth.enabled": "true", "loadTest.enabled": "true"})
    (generators,) = r.component("Job", "load-generator")
    key = "load-generator-token"
    assert token_source(generators, "GREEN_AGENT_TOKEN_FILE") == (AUTH_SECRET, key)
    data = {
        k: base64.b64decode(v).decode() for k, v in r.get("Secret", AUTH_SECRET)["data"].items()
    }
    token = data[key]
    assert len(token) >= MIN_TOKEN_CHARS and token.isalnum()  # generated, as on a fresh install
    # ... and listed by name among the tokens the purple agent accepts.
    assert f"load-generator:{token}" in data["client-tokens"].splitlines()
