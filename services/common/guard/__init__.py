"""The frame's guards: one concern per ASGI middleware, each refusing what it alone judges.

In the order a request meets them (:func:`services.common.frame.service_app` composes them, with
authentication between the Host check and the method check):

1. :mod:`~services.common.guard.hosts`: a ``Host`` or ``Origin`` that is not the server's (421, 403);
2. :mod:`~services.common.guard.methods`: a method the path does not serve (405), from the head;
3. :mod:`~services.common.guard.content_type`: a post to a JSON endpoint that is not JSON (415);
4. :mod:`~services.common.guard.body`: the body, whatever the method, read whole within its size
   and time (413, 408) and, when JSON, within its nesting and text rules (422);
5. :mod:`~services.common.guard.envelope`: a JSON-RPC envelope and the protocol's own rules;
6. :mod:`~services.common.guard.admission`: the requests the process works on at once (503).

Every refusal is answered by :mod:`~services.common.guard.refusal`: a JSON-RPC error on a JSON-RPC
path, a JSON error elsewhere. Nothing behind the guards (a route, an SDK) reads a body the guards
have not bounded.
"""
