"""The client: one provider endpoint, one model, and the agent loop around it."""

from .core import Client, Conversation
from .create import create_client, create_in_process_client

__all__ = ["Client", "Conversation", "create_client", "create_in_process_client"]
