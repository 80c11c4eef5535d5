"""Servers of other makes than ours, for our clients to meet.

An MCP server of the SDK with a toy search tool (``mcp_toy``) and a server of the seed
specification's REST wire (``seed_rest``).
"""
