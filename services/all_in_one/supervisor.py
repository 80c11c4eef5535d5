"""Two servers as one process tree: started in order, stopped in reverse, gone together.

A container runs one command; the all-in-one image runs two servers under it. The supervisor
starts them in order, passes their output through, and when either exits stops the other and
exits with that child's status (so the container restarts rather than running half an agent).
SIGTERM or SIGINT stops them in reverse order, each given ``grace_s`` to drain before it is
killed: the agent first, so it finishes the answers that still need the MCP server.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


@dataclass
class Child:
    """One server: its name in the log, its command and its environment."""

    name: str
    argv: Sequence[str]
    env: Mapping[str, str]
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        """Launch the server; its output goes to the supervisor's (the container's log)."""
        self.process = subprocess.Popen(list(self.argv), env=dict(self.env))
        log.info("%s started (pid %d)", self.name, self.process.pid)

    def exited(self) -> int | None:
        """Its exit status once it has exited."""
        return None if self.process is None else self.process.poll()

    def stop(self, grace_s: float) -> None:
        """SIGTERM, then SIGKILL if it has not exited within ``grace_s``."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            log.warning("%s did not stop within %g s: killed", self.name, grace_s)
            self.process.kill()
            self.process.wait()
        log.info("%s stopped (%s)", self.name, self.process.returncode)


def supervise(children: Sequence[Child], grace_s: float, poll_s: float = 0.2) -> int:
    """Run ``children`` until one exits or a stop signal comes; the exit status to return.

    0 after a stop signal; the status of the child that exited first otherwise (1 if it exited
    with 0: a server that stops by itself is a failure of the whole).
    """
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    status = 0
    try:
        for child in children:
            child.start()
        while not stop.wait(poll_s):
            gone = next((c for c in children if c.exited() is not None), None)
            if gone is not None:
                code = gone.exited()
                log.error("%s exited with status %s: stopping the others", gone.name, code)
                status = code or 1
                break
    finally:
        for child in reversed(children):
            child.stop(grace_s)
    return status
