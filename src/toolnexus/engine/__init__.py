"""The agent loop and what surrounds it: retries, hooks, tool calls, deadlines."""
