"""The in-memory store: the conformance suite plus its own few properties."""

from __future__ import annotations

import pytest

from toolnexus.stores import InMemoryConversationStore

from .conformance import TRANSCRIPT, StoreConformance, StoreFactory


class TestInMemoryStore(StoreConformance):
    @pytest.fixture
    def make_store(self) -> StoreFactory:
        return InMemoryConversationStore


async def test_separate_instances_do_not_share_transcripts() -> None:
    first, second = InMemoryConversationStore(), InMemoryConversationStore()
    await first.save("c1", TRANSCRIPT)
    assert await second.get("c1") is None


def test_in_memory_store_is_exported_from_the_stores_package() -> None:
    import toolnexus.stores

    assert toolnexus.stores.InMemoryConversationStore is InMemoryConversationStore
    assert "InMemoryConversationStore" in toolnexus.stores.__all__
