"""A2A callers as an authenticating server context names them: by the name their token maps to."""

from __future__ import annotations

from a2a.auth.user import User
from a2a.server.context import ServerCallContext


class NamedUser(User):
    """An authenticated caller named ``name``, as the frame's token check makes one."""

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def is_authenticated(self) -> bool:
        """Always: a named caller showed a token."""
        return True

    @property
    def user_name(self) -> str:
        """The caller's name."""
        return self._name


def caller(name: str) -> ServerCallContext:
    """The server context of a request made by the caller ``name``."""
    return ServerCallContext(user=NamedUser(name))
