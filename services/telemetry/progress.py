"""Progress of long steps (encoding, upserting, training): a bar on a terminal, log lines elsewhere.

A Kubernetes Job's log is not a terminal: rich's bar writes nothing there, and the indexer looked
silent for minutes. Off a terminal, progress is logged every ``every_s`` seconds (and at the end)
with the rate and the time left.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.progress import Progress

log = logging.getLogger("nfcorpus.progress")


@contextmanager
def progress(label: str, total: int, every_s: float = 10.0) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``: ``n`` more of ``total`` items of ``label`` are done."""
    if sys.stderr.isatty():
        with Progress(transient=True) as bar:
            task = bar.add_task(label, total=total)
            yield lambda n: bar.advance(task, n)
        return
    started = last = time.monotonic()
    done = 0

    def report() -> None:
        elapsed = max(time.monotonic() - started, 1e-9)
        rate = done / elapsed
        left = (total - done) / rate if rate > 0 else float("inf")
        log.info(
            "%s: %d/%d (%.0f%%), %.1f/s, %.0f s left",
            label, done, total, 100 * done / max(total, 1), rate, left,
            extra={"step": label, "done": done, "total": total, "rate_per_s": round(rate, 1)},
        )  # fmt: skip

    def advance(n: int) -> None:
        nonlocal done, last
        done += n
        if time.monotonic() - last >= every_s:
            last = time.monotonic()
            report()

    yield advance
    report()
