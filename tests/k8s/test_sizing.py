"""The chart's README sizes it for its corpus (Sizing for the corpus): its NFCorpus column names
the defaults of values.yaml, its 1M column what examples/values-1m-documents.yaml sets, and the
example renders what it sets."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from tests.k8s.rendering import CHART, containers, env, pod_spec, render

EXAMPLE = "examples/values-1m-documents.yaml"
SECTION = "## Sizing for the corpus"
#: A values key the table sizes: the first code span of a row's first cell.
CODE = re.compile(r"`([^`]+)`")
#: A cell naming the chart's default: "`value` (default)".
DEFAULT = re.compile(r"`([^`]+)` \(default\)")


def _table() -> tuple[list[str], list[list[str]]]:
    """The header and the rows of the section's table of values."""
    text = (CHART / "README.md").read_text()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("| ")
    ]
    (start,) = [i for i, row in enumerate(rows) if row[0] == "value"]
    header, body = rows[start], rows[start + 2 :]  # past the --- row
    return header, [row for row in body if len(row) == len(header)]


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's merge of a values file over the defaults: maps deeply, the rest replaced."""
    out = dict(base)
    for key, value in over.items():
        inner = out.get(key)
        both = isinstance(inner, Mapping) and isinstance(value, Mapping)
        out[key] = _merged(inner, value) if both else value  # type: ignore[arg-type]
    return out


def _at(values: Mapping[str, Any], key: str) -> str:
    node: Any = values
    for part in key.split("."):
        node = node[part]
    return str(node)


def _sized() -> list[tuple[str, str, str]]:
    """(key, NFCorpus cell, 1M cell) of each row that sizes a values key."""
    header, rows = _table()
    nfcorpus = next(i for i, h in enumerate(header) if h.startswith("NFCorpus"))
    million = header.index("1M")
    sized = []
    for row in rows:
        key = CODE.match(row[0])
        if key and "." in key.group(1):
            sized.append((key.group(1), row[nfcorpus], row[million]))
    return sized


def test_the_nfcorpus_column_names_the_defaults() -> None:
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    named = [(key, m.group(1)) for key, cell, _ in _sized() if (m := DEFAULT.search(cell))]
    assert len(named) >= 12, "the table no longer names the defaults as `value` (default)"
    assert [(key, _at(defaults, key)) for key, _ in named] == named


def test_the_1m_column_is_what_the_example_sets() -> None:
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    values = _merged(defaults, yaml.safe_load((CHART / EXAMPLE).read_text()))
    stated = [(key, m.group(1)) for key, _, cell in _sized() if (m := CODE.match(cell))]
    assert len(stated) >= 12, "the table's 1M column no longer gives values as `value`"
    assert [(key, _at(values, key)) for key, _ in stated] == stated


def test_the_example_renders_what_it_sets() -> None:
    example = yaml.safe_load((CHART / EXAMPLE).read_text())
    r = render(EXAMPLE)
    (mcp,) = containers(r.component("Deployment", "mcp-server")[0])
    assert env(mcp)["RETRIEVAL_STORE"] == example["store"]["backend"] == "server"
    assert mcp["resources"] == example["mcpServer"]["resources"]
    q = example["qdrant"]
    (qdrant,) = r.component("StatefulSet", "qdrant")
    (server,) = containers(qdrant)
    assert server["resources"] == q["resources"]
    (claim,) = qdrant["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == q["persistence"]["size"]
    assert server["startupProbe"]["failureThreshold"] == q["probes"]["startup"]["failureThreshold"]
    i = example["indexer"]
    (job,) = r.component("Job", "indexer")
    assert job["spec"]["activeDeadlineSeconds"] == i["activeDeadlineSeconds"]
    (indexer,) = containers(job, init=False)
    assert indexer["resources"] == i["resources"]
    # The encoding threads are the CPU the indexer is given.
    threads = str(i["computeThreads"])
    assert env(indexer)["RETRIEVAL_ENCODE_THREADS"] == threads == i["resources"]["limits"]["cpu"]
    (data,) = [v for v in pod_spec(job)["volumes"] if v["name"] == "data"]
    assert data["persistentVolumeClaim"]["claimName"] == i["data"]["existingClaim"]
    (wait,) = pod_spec(job)["initContainers"]
    assert env(wait)["WAIT_SECONDS"] == str(i["waitForQdrantSeconds"])
