"""405 for a method a path does not serve, before anything reads the request's body.

Without it a request of another method falls through to whatever catches every path (the MCP
SDK's mount reads a whole body before it looks at the method), and a body it was promised but
never sent holds the server until the body deadline. Paths no route names pass on: the router
answers them 404 without reading a body.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from services.common.guard.refusal import Guard, Refusal

#: A route that serves every method (an ASGI app mounted as a route names none).
ANY = frozenset({"*"})


def route_methods(routes: Iterable[BaseRoute], prefix: str = "") -> dict[str, frozenset[str]]:
    """Each path the routes serve (mounted apps' included) and the methods served there."""
    methods: dict[str, frozenset[str]] = {}
    for route in routes:
        if isinstance(route, Mount):
            for path, served in route_methods(route.routes, prefix + route.path).items():
                methods[path] = served | methods.get(path, frozenset())
        elif isinstance(route, Route):
            served = frozenset(route.methods) if route.methods is not None else ANY
            path = prefix + route.path
            methods[path] = served | methods.get(path, frozenset())
    return methods


class AllowedMethods(Guard):
    """ASGI middleware: 405 with ``Allow`` for a method the path's routes do not serve."""

    def __init__(
        self,
        app: ASGIApp,
        methods: Mapping[str, Collection[str]],
        jsonrpc_paths: Collection[str] = (),
    ) -> None:
        """Guard ``app``, whose paths serve ``methods`` (:func:`route_methods`; ``*``: any)."""
        super().__init__(app, jsonrpc_paths)
        self._methods = {p: frozenset(m) for p, m in methods.items() if "*" not in m}
        self._allow = {p: ", ".join(sorted(m)).encode() for p, m in self._methods.items()}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass on a served method; refuse another."""
        if scope["type"] == "http":
            path = scope["path"]
            served = self._methods.get(path)
            if served is not None and scope["method"] not in served:
                allow = self._allow[path]
                message = f"{scope['method']} is not allowed on {path}: use {allow.decode()}"
                refusal = Refusal(405, message, headers=((b"allow", allow),))
                await self._refuse(scope, send, refusal)
                return
        await self._app(scope, receive, send)
