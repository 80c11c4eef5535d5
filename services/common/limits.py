"""Limits of the answer contract, the same for the purple agent, the MCP tool and REST."""

from __future__ import annotations

#: Longest query accepted, in characters.
MAX_QUERY_CHARS = 2000
#: Largest top_k accepted.
MAX_TOP_K = 100
#: A green agent gives up after 60 s; every answer must come well before that.
HARD_DEADLINE_S = 60.0
