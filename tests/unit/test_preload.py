"""An app preloaded by gunicorn's master is built in the worker, on its first ASGI event, once."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from services.common.server import BuiltInWorker


def test_the_app_is_built_on_the_first_event_only_and_then_frozen() -> None:
    builds: list[int] = []
    seen: list[str] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    def build() -> Any:
        builds.append(1)
        return inner

    app = BuiltInWorker(build)
    assert not app.built and builds == []  # importing the module (the master) builds nothing

    async def events() -> None:
        await asyncio.gather(*(app({"type": t}, None, None) for t in ("lifespan", "http", "http")))

    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    asyncio.run(events())
    assert app.built and builds == [1] and seen == ["lifespan", "http", "http"]
    assert gc.get_freeze_count() > 0  # what the build made is kept out of the GC's passes
    gc.unfreeze()
