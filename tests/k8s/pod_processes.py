"""A rendered Job's container as a local process, run as its pod would run it.

The command, its arguments and its env are the render's. What the image and Kubernetes add is
added as they add it: the image's ENV and working directory (the Dockerfile's stage), and an
Indexed Job pod's JOB_COMPLETION_INDEX. Only what names a cluster resource is replaced: each
volume's mount path by a local folder (the test decides which pods share one, as they would share
a claim), and env values that name a Service or a Secret by the caller's ``replace``; an env value
from a Secret that the caller does not replace is an error, never passed on silently.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from tests.k8s.rendering import ROOT, Doc, containers, pod_spec


@dataclass(frozen=True)
class PodProcess:
    """What to start: argv, its environment and working directory."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path


def image_env(stage: str) -> tuple[dict[str, str], str]:
    """The ENV a Dockerfile stage sets itself, and its last WORKDIR.

    Inherited stages are left out: theirs name the image's own file system (its virtualenv's
    PATH), which the local interpreter replaces.
    """
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    start = re.search(rf"^FROM \S+ AS {re.escape(stage)}$", text, re.MULTILINE)
    assert start, f"the Dockerfile has no stage {stage}"
    body = text[start.end() :]
    following = re.search(r"^FROM ", body, re.MULTILINE)
    body = body[: following.start()] if following else body
    env: dict[str, str] = {}
    workdir = "/"
    for line in body.splitlines():
        instruction, _, rest = line.strip().partition(" ")
        if instruction == "ENV":
            env |= dict(pair.split("=", 1) for pair in shlex.split(rest))
        elif instruction == "WORKDIR":
            workdir = rest.strip()
    return env, workdir


def pod_process(
    job: Doc,
    folders: Mapping[str, Path],
    replace: Mapping[str, str | None],
    stage: str,
    index: int | None = None,
) -> PodProcess:
    """The main container of ``job``'s pod as a process.

    Args:
        job: The rendered Job.
        folders: A local folder for each volume the container mounts, by volume name.
        replace: Env values to set instead of the rendered ones (None: leave it unset).
        stage: The Dockerfile stage the container's image is built from.
        index: The completion index of this pod of an Indexed Job.

    """
    spec = pod_spec(job)
    (container,) = containers(job, init=False)
    mounts = {}
    for mount in container.get("volumeMounts") or []:
        # A subPath is a folder of the volume: the caller's folder stands for what is mounted.
        mounts[PurePosixPath(mount["mountPath"])] = folders[mount["name"]]
    assert {v["name"] for v in spec["volumes"]} >= set(folders)

    def local(value: str) -> str:
        path = PurePosixPath(value)
        for mount_path, folder in mounts.items():
            if path == mount_path or mount_path in path.parents:
                return str(folder.joinpath(*path.relative_to(mount_path).parts))
        return value

    baked, workdir = image_env(stage)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}  # the image's code is the checkout
    env |= {name: local(value) for name, value in baked.items()}
    for entry in container.get("env") or []:
        name = entry["name"]
        if name in replace:
            continue
        assert "valueFrom" not in entry, f"{name} comes from the cluster: replace it"
        env[name] = local(str(entry["value"]))
    env |= {name: value for name, value in replace.items() if value is not None}
    if index is not None:
        assert job["spec"]["completionMode"] == "Indexed"
        env["JOB_COMPLETION_INDEX"] = str(index)  # what the Job controller sets in each pod
    argv = [*container.get("command", []), *container.get("args", [])]
    assert not any("$(" in a for a in argv), "the kubelet's $(VAR) expansion is not done here"
    assert argv[0] == "python", argv
    return PodProcess([sys.executable, *argv[1:]], env, Path(local(workdir)))
