"""Remote agents over A2A as a tool source (``source="a2a"``).

``agent(card_url, ...)`` describes one; ``create_toolkit(agents=[...])``, the config ``agents``
block and ``Toolkit.add_agent`` resolve them. The A2A SDK (``toolnexus[a2a]``) is imported only
when an agent is resolved (by ``wire.py``), so importing this package stays cheap.
"""

from __future__ import annotations

from .config import RemoteAgent, agent, checked_agents, parse_agents_block

__all__ = ["RemoteAgent", "agent", "checked_agents", "parse_agents_block"]
