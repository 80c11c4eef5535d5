"""The whole purple agent in one container: an MCP server on the baked index, and the agent."""
