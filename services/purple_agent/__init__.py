"""The purple agent: an A2A retrieval agent in front of the MCP search tool."""

import os

# a2a-sdk wraps the calls of its JSON-RPC dispatcher in OpenTelemetry spans of its own, nested in
# the request's span: they add Python calls to every request and tell nothing the request's own
# span does not (the count is in docs/performance.md). The SDK reads this switch once, at
# import, so it is defaulted before anything imports it; set it to "true" to see those spans.
os.environ.setdefault("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "false")
