"""Polling instead of fixed sleeps: wait for a condition, with a generous bound and a clear failure."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Call ``condition`` until it holds; fail naming ``what`` after ``timeout_s``.

    The bound is a safety net for a hung run, never a figure the test asserts: it is far above
    what any healthy machine needs.
    """
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {timeout_s:g} s")
        time.sleep(0.05)
