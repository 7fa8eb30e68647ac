"""A run's options are checked before it starts: a ``ConfigError`` names the bad one, whichever
entry point was given it, and nothing reaches the model."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from contextlib import aclosing
from typing import Any

import pytest

from toolnexus import Answer, Client, ConfigError, Conversation, Request
from toolnexus.testing import StubLLMServer

from .running import MakeClient

BAD: dict[str, object] = {
    "prompt": 5,
    "toolkit": "all my tools",
    "history": "bad",
    "conversation_id": 5,
    "id": 5,
    "cancel": "x",
    "on_event": 3,
    "on_text": 3,
    "pending": "the request",
    "answer": True,
    "output_type": object(),
    "output_mode": "json",
    "output_retries": -1,
    "output_validator": 3,
}
"""A value of the wrong kind for each option."""

REQUEST = Request("r1", "approval", "May I?")
ANSWER = Answer("r1", ok=True)


async def _stream(client: Client, **options: Any) -> None:
    async with aclosing(client.stream(**options)) as events:
        async for _ in events:
            pass


async def _send(client: Client, **options: Any) -> None:
    await client.conversation().send(**options)


async def _run_sync(client: Client, **options: Any) -> None:
    client.run_sync(**options)  # the check comes before it would need an event loop of its own


OUTPUT: dict[str, object] = {
    "output_type": None,
    "output_mode": None,
    "output_retries": 2,
    "output_validator": None,
}
"""The structured-output options every entry point takes, with valid values."""

Call = Callable[..., Any]
ENTRY_POINTS: dict[str, tuple[Call, dict[str, object]]] = {
    "run": (Client.run, {"prompt": "hi", "toolkit": None, "history": None,
                         "conversation_id": None, "cancel": None, "on_event": None, **OUTPUT}),
    "run_sync": (_run_sync, {"prompt": "hi", "toolkit": None, "history": None,
                             "conversation_id": None, "cancel": None, "on_event": None, **OUTPUT}),
    "stream": (_stream, {"prompt": "hi", "toolkit": None, "history": None,
                         "conversation_id": None, "cancel": None, **OUTPUT}),
    "send": (_send, {"prompt": "hi", "cancel": None, "on_event": None, **OUTPUT}),
    "ask": (Client.ask, {"prompt": "hi", "toolkit": None, "id": None, "cancel": None,
                         "on_event": None, "on_text": None, **OUTPUT}),
    "run_with_answer": (Client.run_with_answer, {"pending": REQUEST, "answer": ANSWER,
                                                 "toolkit": None, "history": [], "cancel": None,
                                                 "on_event": None, **OUTPUT}),
    "ask_with_answer": (Client.ask_with_answer, {"pending": REQUEST, "answer": ANSWER,
                                                 "toolkit": None, "id": "c1", "cancel": None,
                                                 **OUTPUT}),
    "resume": (Client.resume, {"id": "c1", "answer": ANSWER, "toolkit": None, "cancel": None,
                               "on_event": None, **OUTPUT}),
}  # fmt: skip
"""Each entry point, with a valid value for every option it takes."""

CASES = [
    pytest.param(entry, option, id=f"{entry}-{option}")
    for entry, (_, options) in ENTRY_POINTS.items()
    for option in options
]


@pytest.mark.parametrize(("entry", "option"), CASES)
async def test_a_bad_run_option_is_a_config_error_naming_it_before_any_request(
    stub: StubLLMServer, make_client: MakeClient, entry: str, option: str
) -> None:
    call, valid = ENTRY_POINTS[entry]
    client = make_client("openai")
    with pytest.raises(ConfigError, match=rf"^{option} must be .*, not "):
        await call(client, **{**valid, option: BAD[option]})
    assert stub.requests == []


def test_the_cases_cover_every_option_of_every_entry_point() -> None:
    for entry, (_, valid) in ENTRY_POINTS.items():
        method = getattr(Client, entry, None) or Conversation.send
        assert set(inspect.signature(method).parameters) - {"self"} == set(valid), entry
