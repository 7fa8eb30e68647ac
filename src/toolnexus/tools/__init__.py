"""Tool sources: native functions, HTTP endpoints, skills, MCP servers and built-ins."""
