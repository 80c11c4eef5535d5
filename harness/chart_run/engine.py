"""podman, as the runner drives it: one container per pod, run with the pod's rendered settings.

``run_args`` is the translation of a pod spec into ``podman run`` flags and is pure (tested on
its own); ``Engine`` runs podman commands and turns a failure into an error that carries
podman's own message.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.chart_run.spec import FieldRef, PodSpec

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_DECIMAL = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


class EngineError(RuntimeError):
    """A podman command failed; the message is podman's."""


def cpus(quantity: str) -> str:
    """A Kubernetes CPU quantity ("1", "500m", "0.5") as podman's ``--cpus``."""
    value = float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)
    return f"{value:g}"


def memory_bytes(quantity: str) -> int:
    """A Kubernetes memory quantity ("1Gi", "512Mi", "128M", "1000") in bytes."""
    for units in (_BINARY, _DECIMAL):
        for suffix, factor in units.items():
            if quantity.endswith(suffix):
                return int(float(quantity[: -len(suffix)]) * factor)
    return int(quantity)


@dataclass(frozen=True)
class Placement:
    """Where a pod's container runs: its names, network and the host folders of its volumes."""

    pod: str
    namespace: str
    container: str
    network: str
    volume_dirs: Mapping[str, Path]
    labels: Mapping[str, str]
    annotations: Mapping[str, str] = field(default_factory=dict)

    def field_value(self, ref: FieldRef) -> str:
        """The pod's own metadata a downward-API env value names (a missing annotation: "")."""
        if ref.path == "metadata.name":
            return self.pod
        if ref.path == "metadata.namespace":
            return self.namespace
        key = ref.path.removeprefix("metadata.annotations['").removesuffix("']")
        return self.annotations.get(key, "")


# $(NAME) names a variable of the container's env; $$ is a literal $ (the kubelet's expansion).
_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text: str, env: Mapping[str, str]) -> str:
    """``text`` with ``$(NAME)`` replaced as the kubelet does in a command and its args.

    A name the env does not hold stays as written; ``$$`` gives ``$``.
    """

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "$"
        return env.get(name, match.group(0))

    return _REFERENCE.sub(value, text)


def run_args(spec: PodSpec, where: Placement) -> list[str]:
    """``podman run`` arguments that start ``spec``'s container as the kubelet would.

    The pod's own user and groups, a read-only root without podman's default tmpfs mounts (only
    the declared volumes are writable, as in a cluster), no new privileges, no capabilities, the
    CPU and memory limits, the command as the entrypoint (which drops the image's CMD, as a
    container ``command`` does) and the args after the image.
    """
    s = spec.security
    flags = ["--detach", "--name", where.container, "--hostname", where.pod]
    flags += ["--network", where.network, "--pull", "never", "--user", f"{s.uid}:{s.gid}"]
    if s.fs_group is not None:
        flags += ["--group-add", str(s.fs_group)]
    if s.read_only_root:
        flags += ["--read-only", "--read-only-tmpfs=false"]
    if s.no_new_privileges:
        flags += ["--security-opt", "no-new-privileges"]
    if s.drop_all_capabilities:
        flags += ["--cap-drop", "ALL"]
    if spec.cpu_limit:
        flags += ["--cpus", cpus(spec.cpu_limit)]
    if spec.memory_limit:
        flags += ["--memory", str(memory_bytes(spec.memory_limit))]
    for key, label in sorted(where.labels.items()):
        flags += ["--label", f"{key}={label}"]
    env = {
        name: where.field_value(value) if isinstance(value, FieldRef) else value
        for name, value in spec.env
    }
    for name, value in env.items():
        flags += ["--env", f"{name}={value}"]
    for volume in spec.volumes:
        mode = "ro" if volume.read_only else "rw"
        flags += ["--volume", f"{where.volume_dirs[volume.name]}:{volume.mount_path}:{mode}"]
    if spec.command:
        flags += ["--entrypoint", json.dumps([expand(c, env) for c in spec.command])]
    return ["run", *flags, spec.image, *(expand(a, env) for a in spec.args)]


class Engine:
    """Runs podman commands (``CONTAINERS_CONF`` from the environment, as the image scripts set)."""

    def __init__(self, binary: str = "podman") -> None:
        self.binary = binary

    async def __call__(
        self, *args: str, timeout_s: float = 300.0, check: bool = True, merge: bool = False
    ) -> str:
        """Run ``podman *args``; its stdout (with stderr if ``merge``).

        A non-zero exit raises with podman's stderr, unless ``check`` is false.
        """
        process = await asyncio.create_subprocess_exec(
            self.binary,
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT if merge else asyncio.subprocess.PIPE,
            env=os.environ.copy(),
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), timeout_s)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise EngineError(f"podman {args[0]} did not finish in {timeout_s:g} s") from None
        if check and process.returncode:
            message = (err or b"").decode(errors="replace").strip() or out.decode(errors="replace")
            raise EngineError(f"podman {' '.join(_short(args))}: {message}")
        return out.decode(errors="replace")

    async def image_exists(self, image: str) -> bool:
        """Whether the engine has ``image`` locally (pods never pull: --pull never)."""
        try:
            await self("image", "exists", image)
        except EngineError:
            return False
        return True

    async def ip(self, container: str, network: str) -> str:
        """The container's address on ``network``."""
        template = f'{{{{(index .NetworkSettings.Networks "{network}").IPAddress}}}}'
        return (await self("inspect", "--format", template, container)).strip()

    async def running(self, container: str) -> bool:
        """Whether the container is still running."""
        state = await self("inspect", "--format", "{{.State.Running}}", container, check=False)
        return state.strip() == "true"

    async def exit_code(self, container: str) -> int:
        """The exit status of a stopped container."""
        return int((await self("inspect", "--format", "{{.State.ExitCode}}", container)).strip())

    async def logs(self, container: str, tail: int = 40) -> str:
        """The last lines the container wrote (stdout and stderr)."""
        return await self("logs", "--tail", str(tail), container, check=False, merge=True)


def _short(args: Sequence[str]) -> list[str]:
    """The command for an error message, without long values (environment, scripts)."""
    return [a if len(a) < 80 else a[:77] + "..." for a in args]
