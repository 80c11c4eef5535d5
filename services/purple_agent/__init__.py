"""The purple agent: an A2A retrieval agent in front of the MCP search tool."""

import os

# a2a-sdk wraps ~50 of its own calls per request in OpenTelemetry spans, which cost ~3.5 ms per
# request here (a third of the agent's overhead). The SDK reads this switch once, at import, so it
# is defaulted before anything imports it; set it to "true" to see those spans.
os.environ.setdefault("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "false")
