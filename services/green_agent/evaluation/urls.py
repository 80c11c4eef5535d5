"""The URLs the evaluator derives, built from parsed parts, and the URLs it refuses to start from.

An agent's card and an MCP server's counters live at paths below a URL someone else named (an
assessment request, an agent card). Were a path appended to that text, the named URL would pick
what is called: ``http://127.0.0.1:15000/quitquitquit#`` turns ``+ "/health_check"`` into a
fragment and the request into ``POST /quitquitquit``, a trailing ``?x=`` turns the card fetch
into a GET of the named path carrying the evaluator's token, and an allow-list of origins checks
none of it. So a derived URL is the named URL parsed, its path joined with the derived one
(:func:`below`), and a named URL with user information, a query or a fragment is refused outright
(:func:`refusal`): an A2A endpoint or a server's base URL has none, so one that does is either a
mistake or an attempt to steer the request, and either way is better refused with its reason
than called.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx


def refusal(url: str | httpx.URL) -> str | None:
    """Why ``url`` may not name an endpoint (user information, a query, a fragment), or None.

    Read on the text as written: an empty query (``?``) or fragment (``#``) is refused too, as
    ``http://a/b?`` still says something other than ``http://a/b``.
    """
    text = str(url)
    if "#" in text:
        return "it has a fragment ('#'), which an endpoint's URL never has"
    if "?" in text:
        return "it has a query ('?'), which an endpoint's URL never has"
    try:
        netloc = urlsplit(text).netloc
    except ValueError:
        return None  # no URL at all: the parser that reads it next says why
    if "@" in netloc:
        return "it has user information ('user@'): give a token through the settings instead"
    return None


def checked(url: str | httpx.URL) -> httpx.URL:
    """``url`` parsed, once :func:`refusal` finds nothing wrong with it.

    Raises:
        ValueError: the URL says why it is refused, or is no URL.

    """
    reason = refusal(url)
    if reason is None:
        try:
            return httpx.URL(url)
        except httpx.InvalidURL as e:
            reason = f"it is not a URL ({e})"
    raise ValueError(f"{url} is refused: {reason}")


def below(base: str | httpx.URL, path: str) -> httpx.URL:
    """``path`` below the path of ``base`` (``http://h/a/`` and ``/b`` give ``http://h/a/b``).

    Raises:
        ValueError: ``base`` is refused (:func:`refusal`) or is no URL.

    """
    parsed = checked(base)
    joined = parsed.path.rstrip("/") + "/" + path.lstrip("/")
    return parsed.copy_with(path=joined)
