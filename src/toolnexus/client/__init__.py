"""The client: one provider endpoint, one model, and the agent loop around it."""

from .core import Client, Conversation
from .create import create_client, create_in_process_client
from .options import ClientOptions, InProcessOptions

__all__ = [
    "Client",
    "ClientOptions",
    "Conversation",
    "InProcessOptions",
    "create_client",
    "create_in_process_client",
]
