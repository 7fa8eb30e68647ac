"""Callbacks get snapshots: what a callback is handed is its own, and only what it returns counts.

One scenario touches every callback the engine hands data to: the four hooks, ``body_transform``,
``on_event`` (or the events ``stream`` yields), ``on_metric``, ``wait_for`` and the store's
``save``. It runs once with callbacks that only keep what they get, and once with callbacks that
scribble over everything they get; both runs must send, record and save the same things.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from toolnexus import (
    Answer,
    Client,
    DoneEvent,
    Event,
    Hooks,
    Request,
    RunResult,
    ToolContext,
    Toolkit,
    ToolResult,
    create_toolkit,
    pending,
)
from toolnexus.testing import StubLLMServer, reply
from toolnexus.tools.skills import SkillDef
from toolnexus.types import JSONObject

from ..running import MakeClient, drive
from .support import make_tool

Keep = Callable[[str, Any], None]
"""Called by every callback with its name and what it was given."""


class RecordingStore:
    """A store that hands ``keep`` the list it is asked to save, and stores a deep copy."""

    def __init__(self, keep: Keep) -> None:
        self.keep = keep
        self.saved: dict[str, list[JSONObject]] = {}

    async def get(self, id: str) -> list[JSONObject] | None:
        found = self.saved.get(id)
        return copy.deepcopy(found) if found is not None else None

    async def save(self, id: str, messages: list[JSONObject]) -> None:
        self.saved[id] = copy.deepcopy(messages)
        self.keep("save", messages)

    async def delete(self, id: str) -> None:
        self.saved.pop(id, None)


class Tools:
    """``lookup`` records the args it runs with; ``deploy`` suspends until answered."""

    def __init__(self) -> None:
        self.lookups: list[JSONObject] = []

    async def lookup(self, args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        self.lookups.append(copy.deepcopy(args))
        return ToolResult(f"found {args.get('city')}", metadata={"tags": ["a"]})

    async def deploy(self, args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        if ctx is not None and ctx.answer is not None:
            return ToolResult("deployed")
        return pending(Request.new("approval", "Deploy?", data={"env": "prod"}))


def scribble(value: Any) -> None:
    """Change ``value`` in place, as deep as it goes (dicts, lists, dataclass fields)."""
    if isinstance(value, dict):
        for key in list(value):
            scribble(value[key])
        value["scribbled"] = True
    elif isinstance(value, list):
        for item in value:
            scribble(item)
        value.append({"scribbled": True})
    elif hasattr(value, "__dataclass_fields__"):
        for name in value.__dataclass_fields__:
            field_value = getattr(value, name, None)
            scribble(field_value)
            if isinstance(field_value, str) and not _frozen(value):
                setattr(value, name, "scribbled")


def _frozen(value: Any) -> bool:
    params = getattr(type(value), "__dataclass_params__", None)
    return bool(params and params.frozen)


def seen(event: Event, mode: str, keep: Keep) -> None:
    """``on_event``; for a stream, the events as they are yielded (but the caller's own
    result in the last one)."""
    if mode != "stream":
        keep("on_event", event)
    elif not isinstance(event, DoneEvent):
        keep("stream", event)


async def run_scenario(
    make_client: MakeClient, stub: StubLLMServer, style: str, mode: str, keep: Keep
) -> tuple[RunResult, Tools, RecordingStore, Toolkit]:
    stub.enqueue(
        reply.tool_calls(
            reply.call("lookup", {"city": "Pune", "nested": {"units": ["C"]}}),
            reply.call("deploy", {"target": {"env": "prod"}}),
        ),
        reply.text("All done."),
    )
    tools = Tools()
    store = RecordingStore(keep)

    def hook(name: str) -> Callable[[JSONObject], None]:
        return lambda payload: keep(name, payload)

    async def wait_for(request: Request) -> Answer:
        answer = Answer(request.id, ok=True)
        keep("wait_for", request)
        return answer

    def body_transform(body: JSONObject) -> JSONObject:
        sent = copy.deepcopy(body)  # what is returned is sent
        keep("body_transform", body)
        return sent

    client: Client = make_client(
        style,
        hooks=Hooks(
            before_llm=hook("before_llm"),
            after_llm=hook("after_llm"),
            before_tool=hook("before_tool"),
            after_tool=hook("after_tool"),
        ),
        body_transform=body_transform,
        on_metric=lambda m: keep("on_metric", m),
        wait_for=wait_for,
        store=store,
    )
    toolkit = await create_toolkit(
        extra_tools=[make_tool("lookup", tools.lookup), make_tool("deploy", tools.deploy)],
        skills=[SkillDef(name="ops", content="Be careful.", description="Operations.")],
        builtins=False,
    )
    result, _ = await drive(
        client,
        mode,
        toolkit,
        prompt="Deploy it.",
        conversation_id="c1",
        on_event=lambda event: seen(event, mode, keep),
    )
    return result, tools, store, toolkit


async def test_what_callbacks_are_given_is_never_changed_afterwards(
    stub: StubLLMServer, make_client: MakeClient, style: str, mode: str
) -> None:
    kept: list[tuple[str, Any, Any]] = []

    def keep(name: str, value: Any) -> None:
        kept.append((name, value, copy.deepcopy(value)))

    result, _, _, toolkit = await run_scenario(make_client, stub, style, mode, keep)
    await toolkit.aclose()
    if mode != "stream":  # a stream's DoneEvent carries the caller's own result
        result.messages.append({"role": "user", "content": "the caller edits its result"})
        scribble(result.tool_calls)

    names = {name for name, _, _ in kept}
    expected = {"before_llm", "after_llm", "before_tool", "after_tool", "body_transform"}
    expected |= {"on_metric", "wait_for", "save", "stream" if mode == "stream" else "on_event"}
    assert names == expected
    for name, value, at_the_time in kept:
        assert value == at_the_time, f"{name} payload changed after it was handed out"


async def test_callbacks_that_edit_what_they_are_given_change_nothing(
    stub: StubLLMServer, make_client: MakeClient, style: str, mode: str
) -> None:
    clean, clean_tools, clean_store, kit = await run_scenario(
        make_client, stub, style, mode, lambda name, value: None
    )
    await kit.aclose()
    clean_requests = [r.json for r in stub.requests]
    stub.reset()

    messy, messy_tools, messy_store, messy_kit = await run_scenario(
        make_client, stub, style, mode, lambda name, value: scribble(value)
    )
    schemas = {t.name: copy.deepcopy(t.input_schema) for t in messy_kit.tools()}
    await messy_kit.aclose()

    assert [r.json for r in stub.requests] == clean_requests
    assert messy.messages == clean.messages
    assert messy.tool_calls == clean.tool_calls
    assert (messy.text, messy.usage, messy.status) == (clean.text, clean.usage, clean.status)
    assert (
        messy_tools.lookups == clean_tools.lookups == [{"city": "Pune", "nested": {"units": ["C"]}}]
    )
    assert messy_store.saved == clean_store.saved
    # Neither the toolkit's schemas nor a later toolkit's (the skill tool's) were touched.
    assert all("scribbled" not in repr(schema) for schema in schemas.values())
    async with await create_toolkit(skills=[SkillDef(name="x", content="y")]) as later:
        skill = later.get("skill")
        assert skill is not None
        assert "scribbled" not in repr(skill.input_schema)


@pytest.mark.parametrize("convert", ["to_openai", "to_anthropic", "to_gemini"])
async def test_provider_tool_formats_carry_copies_of_the_schemas(convert: str) -> None:
    async with await create_toolkit(skills=[SkillDef(name="x", content="y")]) as tk:
        declarations = getattr(tk, convert)()
        scribble(declarations)
        skill = tk.get("skill")
        assert skill is not None
        assert "scribbled" not in repr(skill.input_schema)
    async with await create_toolkit(skills=[SkillDef(name="x", content="y")]) as later:
        skill = later.get("skill")
        assert skill is not None
        assert "scribbled" not in repr(skill.input_schema)
