"""Bearer tokens as settings give them: read, checked, kept apart by purpose, read on change.

A server's tokens (:class:`TokenSet`: token -> caller name) and the one a client sends
(:class:`ClientToken`) come from a file (one per line, ``#`` comments; the chart mounts a Secret
there) and/or an environment variable (comma-separated). A line ``name:token`` names its caller
(:data:`NAME` says what a name may be); a bare token is named from its hash. Short tokens,
placeholders, names that are no name and the names the request telemetry gives of its own
(``OWN_LABELS`` of :mod:`services.telemetry.http`) are refused at start, and so is one value given to two purposes
(:func:`distinct_purposes`).

A token file is read again when it changes: its identity, size and modification time are looked
at, at most once per :data:`RELOAD_CHECK_S`, so a revoked token stops working, and a new one
starts, without a restart. A rewrite that cannot be used (unreadable, no token, a short one)
keeps the tokens read before and logs an error: a broken Secret never opens a server. No
message here ever shows a token.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Generic, TypeVar

from services.telemetry.http import OWN_LABELS, UNNAMED

MIN_TOKEN_CHARS = 16
PLACEHOLDERS = ("changeme", "changethis", "secret", "token", "password", "example")
#: How often, at most, a token file is looked at for a change: a stat per second is nothing on
#: the request path, and a revoked token stops working within about that.
RELOAD_CHECK_S = 1.0

#: What a caller's name may be. A name is in every request's log line and metrics: a bare
#: token holding ":" would otherwise have the part before it taken for a name and written there.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
#: The name a bare token gets: ``client-`` and 12 hex digits of its SHA-256.
HASHED_NAME = re.compile(r"client-[0-9a-f]{12}")

_log = logging.getLogger(__name__)
_T = TypeVar("_T")


class TokenError(ValueError):
    """A configured token is unusable; the message never shows the token."""


def _caller(line: str, where: str, unnamed: str | None) -> tuple[str, str]:
    name, _, token = line.rpartition(":")
    token = token.strip()
    if len(token) < MIN_TOKEN_CHARS:
        raise TokenError(f"a token in {where} is shorter than {MIN_TOKEN_CHARS} characters")
    if token.lower() in PLACEHOLDERS or token.lower().startswith(("changeme", "changethis")):
        raise TokenError(f"a token in {where} is a placeholder: generate a random one")
    name = name.strip()
    if name and not NAME.fullmatch(name):
        # Not shown: it may be the start of a token that holds ":".
        raise TokenError(
            f"a token's name in {where} is not letters, digits, '.', '_' and '-' (63 at most): "
            "a line is name:token, and a token holds no ':'"
        )
    # The telemetry's own labels (no token, an unknown one, past the bound, the scraper, a bare
    # token): a token named so would read as one of them on a dashboard.
    if (name in OWN_LABELS and name != unnamed) or HASHED_NAME.fullmatch(name):
        raise TokenError(
            f"a token in {where} is named {name!r}, a name the request metrics and logs give of "
            "their own: choose another name"
        )
    digest = hashlib.sha256(token.encode()).hexdigest()[:12]
    return token, name or unnamed or f"client-{digest}"


def caller_label(name: str) -> str:
    """What the request metrics and logs call the caller ``name``: a hashed name is unnamed."""
    return UNNAMED if HASHED_NAME.fullmatch(name) else name


def load_tokens(
    inline: str | None, path: Path | None, unnamed: str | None = None
) -> dict[str, str]:
    """Token -> caller name, from ``inline`` (comma-separated) and the lines of ``path``.

    A token given without a name is named ``unnamed``, or from its hash when that is None.
    """
    tokens: dict[str, str] = {}
    sources: list[tuple[str, list[str]]] = []
    if inline:
        sources.append(("the token variable", inline.split(",")))
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise TokenError(f"cannot read the token file {path}: {e.strerror}") from None
        sources.append((str(path), text.splitlines()))
    for where, lines in sources:
        for line in lines:
            if line.strip() and not line.lstrip().startswith("#"):
                token, name = _caller(line.strip(), where, unnamed)
                tokens[token] = name
    return tokens


def _identity(path: Path) -> tuple[int, int, int, int] | None:
    """What changes when the file is rewritten or replaced (a Secret's mount swaps a link)."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_dev, found.st_ino, found.st_mtime_ns, found.st_size)


class _Watched(Generic[_T]):
    """A value read from ``path``, read again when the file changes (see the module docstring).

    The first read raises (:class:`TokenError`: the server does not start); a later one that
    fails keeps the value read before and logs why, once per version of the file.
    """

    def __init__(
        self,
        path: Path | None,
        read: Callable[[], _T],
        *,
        clock: Callable[[], float] = time.monotonic,
        interval_s: float = RELOAD_CHECK_S,
    ) -> None:
        self._path = path
        self._read = read
        self._clock = clock
        self._interval_s = interval_s
        self._identity = _identity(path) if path is not None else None
        self.value = read()
        self._next_check = clock() + interval_s

    def refresh(self) -> bool:
        """Read the file again if it changed; whether the value changed."""
        if self._path is None:
            return False
        now = self._clock()
        if now < self._next_check:
            return False
        self._next_check = now + self._interval_s
        identity = _identity(self._path)
        if identity == self._identity:
            return False
        self._identity = identity  # a bad version is reported once, not every check
        try:
            value = self._read()
        except TokenError as e:
            _log.error("%s: the tokens read before stay in use", e)
            return False
        if value == self.value:
            return False
        self.value = value
        _log.warning("read the changed token file %s", self._path)
        return True


class TokenSet(Mapping[str, str]):
    """Token -> caller name, as :func:`load_tokens` reads them; the file read again on change.

    A changed file must still hold a token: one left empty keeps the tokens read before (an
    empty set would switch authentication off).
    """

    def __init__(
        self,
        inline: str | None,
        path: Path | None,
        *,
        unnamed: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        interval_s: float = RELOAD_CHECK_S,
    ) -> None:
        """Read the tokens (``unnamed``: see :func:`load_tokens`); :class:`TokenError` if unusable."""
        self._inline = inline
        self._file = path
        self._unnamed = unnamed
        self._started = False  # at start, no token at all is authentication off
        self._watched = _Watched(path, self._load, clock=clock, interval_s=interval_s)
        self._started = True

    def _load(self) -> dict[str, str]:
        tokens = load_tokens(self._inline, self._file, self._unnamed)
        if not tokens and self._started:
            raise TokenError(f"the token file {self._file} holds no token")
        return tokens

    def refresh(self) -> bool:
        """Read the file again if it changed; whether the tokens changed."""
        return self._watched.refresh()

    def __getitem__(self, token: str) -> str:
        """The caller named by ``token``."""
        return self._watched.value[token]

    def __iter__(self) -> Iterator[str]:
        """The tokens."""
        return iter(self._watched.value)

    def __len__(self) -> int:
        """How many tokens."""
        return len(self._watched.value)


class ClientToken:
    """The ``Authorization`` a client sends (:func:`authorization`); its file read on change.

    A rewrite that holds no usable token keeps the token read before, and logs why.
    """

    def __init__(
        self,
        token: str | None,
        path: Path | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        interval_s: float = RELOAD_CHECK_S,
    ) -> None:
        """Read the token; :class:`TokenError` if its file cannot be read or holds none."""
        self._watched = _Watched(
            path, lambda: authorization(token, path), clock=clock, interval_s=interval_s
        )

    @property
    def token(self) -> str | None:
        """The token sent (no scheme), to check it against the server's other purposes."""
        header = self._watched.value
        return header.removeprefix("Bearer ") if header else None

    def header(self) -> str | None:
        """The ``Authorization`` header value now (the file looked at first, if it is time)."""
        self._watched.refresh()
        return self._watched.value


def authorization(token: str | None, path: Path | None) -> str | None:
    """The ``Authorization`` header a client sends: the file's token, else ``token``, else none.

    The file may be a bare token or a server's token file (the chart's client-tokens Secret):
    its first token is sent, without its ``name:`` prefix, as the helm test pod does.
    """
    if path is not None:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as e:
            raise TokenError(f"cannot read {path}: {e.strerror}") from None
        listed = [
            line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")
        ]
        if not listed:
            raise TokenError(f"the token file {path} holds no token")
        token = listed[0].rpartition(":")[2].strip()
    return f"Bearer {token}" if token else None


def distinct_purposes(purposes: Mapping[str, Iterable[str]]) -> None:
    """Refuse a token given to two purposes (:class:`TokenError` naming them, never the token).

    ``purposes``: the tokens of each, by what names the purpose (the settings that give it). A
    token for two purposes opens the second to whoever holds it for the first: the scraper would
    call the API, a caller would read ``/metrics``, the next hop could call this server.
    """
    seen: dict[str, str] = {}
    for purpose, tokens in purposes.items():
        for token in tokens:
            first = seen.setdefault(token, purpose)
            if first != purpose:
                raise TokenError(
                    f"{first} and {purpose} hold the same token: give each purpose its own"
                )


def one_token_per_purpose(tokens: Mapping[str, str], metrics_tokens: Mapping[str, str]) -> None:
    """Refuse a scrape token that is also a caller's token (:class:`TokenError`)."""
    if tokens.keys() & metrics_tokens.keys():
        raise TokenError("a scrape token is also a caller's token: give /metrics its own")
