"""JSON-RPC 2.0, the envelope A2A and MCP share: requests, responses and errors, in one place.

Servers check an incoming envelope with :func:`envelope_problem` and answer refusals with
:func:`error_response`; clients write requests with :func:`request` and read the answer to their
own request with :func:`response_to` and :func:`result_or_error`. Each protocol's methods and
parameters are its own module's business; only the envelope is here.
"""

from __future__ import annotations

from typing import Any

VERSION = "2.0"
#: The request is not a valid JSON-RPC request (or its content breaks a rule of the server's).
INVALID_REQUEST = -32600
#: JSON-RPC's "server error" range: the server cannot take the request now (overloaded).
OVERLOADED = -32000


class RpcError(Exception):
    """A JSON-RPC error a server answered: its code, message and data."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"error {code}: {message}")
        self.code = code
        self.message = message
        self.data = data


class MalformedResponse(ValueError):
    """An answer that is no JSON-RPC response to the request it answers."""


def request(method: str, params: dict[str, Any] | None, request_id: str | int) -> dict[str, Any]:
    """A request object (``params`` left out when None)."""
    message: dict[str, Any] = {"jsonrpc": VERSION, "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def error_response(request_id: object, code: int, message: str) -> dict[str, Any]:
    """An error response; an id that is no string or integer is answered with null."""
    answered = request_id if isinstance(request_id, str | int) else None
    return {"jsonrpc": VERSION, "id": answered, "error": {"code": code, "message": message}}


def request_id(payload: Any) -> object:
    """The id a decoded request names, to answer it with (None when it is no object)."""
    return payload.get("id") if isinstance(payload, dict) else None


def envelope_problem(payload: Any) -> str | None:
    """What is wrong with a decoded request (or a client's response) envelope, or None."""
    if not isinstance(payload, dict):
        return "a JSON-RPC message must be an object (batches are not accepted)"
    if payload.get("jsonrpc") != VERSION:
        return 'jsonrpc must be "2.0"'
    request_id = payload.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int | None):
        return "id must be a string, an integer or null"
    if "method" not in payload:
        # A client may answer a server's request (MCP); then it carries a result or an error.
        return None if "result" in payload or "error" in payload else "method is required"
    if not isinstance(payload["method"], str):
        return "method must be a string"
    if not isinstance(payload.get("params", {}), dict):
        return "params must be an object"
    return None


def response_to(message: Any, request_id: str | int) -> dict[str, Any] | None:
    """``message`` when it is the response (a result or an error) to ``request_id``, else None."""
    if (
        isinstance(message, dict)
        and message.get("jsonrpc") == VERSION
        and message.get("id") == request_id
        and ("result" in message) != ("error" in message)
    ):
        return message
    return None


def result_or_error(response: dict[str, Any]) -> Any:
    """The result of a response, or the :class:`RpcError` it holds, raised.

    Raises:
        RpcError: the response is an error.
        MalformedResponse: its error is no JSON-RPC error object.

    """
    if "error" not in response:
        return response.get("result")
    error = response["error"]
    if not isinstance(error, dict) or not isinstance(error.get("code"), int):
        raise MalformedResponse("the answer holds a malformed JSON-RPC error")
    raise RpcError(error["code"], str(error.get("message", "")), error.get("data"))
