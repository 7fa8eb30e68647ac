"""A2A served safely (SPEC §13): bearer auth through ``a2a-sdk``'s own client, tasks and
contexts owned by their caller, a bounded task store, private failures, and the JSON-RPC
rules the SDK's dispatcher misses."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientCallContext, ClientConfig, create_client
from a2a.client import Client as A2aClient
from a2a.client.auth.credentials import CredentialService
from a2a.client.auth.interceptor import AuthInterceptor
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError

import toolnexus as tn
from toolnexus.serve import MemoryTaskStore, ServeHandle
from toolnexus.serve.a2a_store import TaskBounds
from toolnexus.testing import StubLLMServer, reply

from .served import LIMIT, artifact_texts, message, send, status_text

ALICE, BOB = "alice-t0k", "bob-t0k"
HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}


class Token(CredentialService):
    """Hands ``a2a-sdk``'s auth interceptor one bearer token, for the card's scheme."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.asked: list[str] = []

    async def get_credentials(
        self, security_scheme_name: str, context: ClientCallContext | None
    ) -> str | None:
        self.asked.append(security_scheme_name)
        return self.token


def asking_toolkit() -> tn.Toolkit:
    """``pick_colour`` suspends on its first call and reports the answer on the second."""

    @tn.tool
    def pick_colour(ctx: tn.ToolContext) -> tn.ToolResult:
        """Ask the user for a colour."""
        if ctx.answer is None:
            return tn.pending(tn.Request.new("input", "Which colour?"))
        return tn.ToolResult(f"colour: {(ctx.answer.data or {}).get('answers')}")

    return tn.Toolkit([pick_colour])


Start = Callable[..., Awaitable[ServeHandle]]


@pytest.fixture
async def start(stub: StubLLMServer) -> AsyncIterator[Start]:
    """``await start(tk, addr=..., **serve_options)``: an A2A agent run by a stub model."""
    runners: list[tuple[ServeHandle, tn.Client]] = []

    async def go(tk: tn.Toolkit, addr: str = "127.0.0.1:0", **options: Any) -> ServeHandle:
        runner = tn.create_client(stub.url, model="m", api_key="sk-test-key-123456")
        options.setdefault("a2a", {})
        handle = await tk.serve(addr, client=runner, **options)
        runners.append((handle, runner))
        return handle

    yield go
    for handle, runner in runners:
        await handle.aclose()
        await runner.aclose()


@pytest.fixture
async def connect() -> AsyncIterator[Callable[..., Awaitable[A2aClient]]]:
    """``await connect(url, token)``: the SDK's client, with its auth interceptor when a token
    is given."""
    opened: list[A2aClient] = []

    async def open_client(url: str, token: str | None = None) -> A2aClient:
        interceptors = [AuthInterceptor(Token(token))] if token is not None else []
        client = await create_client(url, ClientConfig(streaming=False), interceptors=interceptors)
        opened.append(client)
        return client

    yield open_client
    for client in opened:
        await client.close()


# A141 (A2A) ---------------------------------------------------------------------------------


async def test_the_card_is_public_and_requires_the_bearer_scheme(start: Start) -> None:
    handle = await start(tn.Toolkit([]), auth=[ALICE])
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        card = await A2ACardResolver(http, handle.url).get_agent_card()
        raw = (await http.get(handle.url + "/.well-known/agent-card.json")).json()
        from_page = await http.get(
            handle.url + "/.well-known/agent-card.json", headers={"Origin": "https://x.example"}
        )
    scheme = card.security_schemes["bearer"].http_auth_security_scheme
    assert scheme.scheme.lower() == "bearer"
    assert [list(r.schemes) for r in card.security_requirements] == [["bearer"]]
    assert raw["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    assert from_page.status_code == 200  # public: no Origin check


async def test_without_auth_the_card_declares_no_scheme(start: Start) -> None:
    handle = await start(tn.Toolkit([]))
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        card = await A2ACardResolver(http, handle.url).get_agent_card()
    assert not card.security_schemes
    assert not card.security_requirements


async def test_jsonrpc_needs_the_token_and_the_sdk_client_sends_it(
    start: Start, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.text("Paris"))
    handle = await start(tn.Toolkit([]), auth=[ALICE, BOB])
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}})
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        missing = await http.post(handle.url + "/", content=body, headers=HEADERS)
        wrong = await http.post(
            handle.url + "/", content=body, headers={**HEADERS, "Authorization": "Bearer x"}
        )
    for refused in (missing, wrong):
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
    alice = await connect(handle.url, ALICE)
    task = await send(alice, message("capital of France?"))
    assert artifact_texts(task) == ["Paris"]
    anonymous = await connect(handle.url)
    with pytest.raises(Exception) as refused_by_sdk:  # noqa: PT011  the SDK's own error type
        await send(anonymous, message("capital of Spain?"))
    assert "401" in str(refused_by_sdk.value)


# A145 ---------------------------------------------------------------------------------------


async def test_a_caller_cannot_see_cancel_or_continue_another_callers_task(
    start: Start, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("pick_colour", {})), reply.text("Blue it is."))
    handle = await start(asking_toolkit(), auth=[ALICE, BOB])
    alice = await connect(handle.url, ALICE)
    bob = await connect(handle.url, BOB)
    waiting = await send(alice, message("pick a colour", context_id="shared"))
    assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED

    with pytest.raises(TaskNotFoundError):
        await bob.get_task(GetTaskRequest(id=waiting.id))
    with pytest.raises(TaskNotFoundError):
        await bob.cancel_task(CancelTaskRequest(id=waiting.id))
    with pytest.raises(TaskNotFoundError):
        await send(bob, message("red", task_id=waiting.id, context_id="shared"))
    bobs = await bob.list_tasks(ListTasksRequest())
    alices = await alice.list_tasks(ListTasksRequest())
    assert [t.id for t in bobs.tasks] == []
    assert [t.id for t in alices.tasks] == [waiting.id]
    in_context = await bob.list_tasks(ListTasksRequest(context_id="shared"))
    assert list(in_context.tasks) == []

    done = await send(alice, message("blue", task_id=waiting.id, context_id="shared"))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert artifact_texts(done) == ["Blue it is."]
    assert (await alice.get_task(GetTaskRequest(id=waiting.id))).id == waiting.id


async def test_the_same_context_id_is_a_different_conversation_per_caller(
    start: Start, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.text("Noted, Ada."), reply.text("Hello, stranger."))
    handle = await start(tn.Toolkit([]), auth=[ALICE, BOB])
    alice = await connect(handle.url, ALICE)
    bob = await connect(handle.url, BOB)
    await send(alice, message("My name is Ada.", context_id="c"))
    await send(bob, message("What is my name?", context_id="c"))
    seen_by_model = [m["content"] for m in stub.requests[1].json["messages"]]
    assert seen_by_model == ["What is my name?"]


async def test_a_callable_auth_names_the_caller(
    start: Start, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.text("one"))
    store = MemoryTaskStore()

    async def check(token: str) -> str | bool:
        return {"k1": "team-a", "k2": "team-a"}.get(token, False)

    handle = await start(tn.Toolkit([]), auth=check, a2a={"store": store})
    first = await connect(handle.url, "k1")
    same_team = await connect(handle.url, "k2")
    task = await send(first, message("hi"))
    assert (await same_team.get_task(GetTaskRequest(id=task.id))).id == task.id
    stored = await store.get(task.id)
    assert stored is not None
    assert stored["owner"] == "team-a"


async def test_the_owner_is_a_digest_never_the_token(
    start: Start, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.text("one"))
    store = MemoryTaskStore()
    handle = await start(tn.Toolkit([]), auth=[ALICE], a2a={"store": store})
    task = await send(await connect(handle.url, ALICE), message("hi"))
    saved = json.dumps(await store.all())
    assert ALICE not in saved
    stored = await store.get(task.id)
    assert stored is not None
    assert len(stored["owner"]) == 64


async def test_a_text_plain_post_is_415_and_a_foreign_host_on_a_wildcard_bind_421(
    start: Start,
) -> None:
    handle = await start(tn.Toolkit([]), addr="0.0.0.0:0", auth=[ALICE])
    port = handle.url.rsplit(":", 1)[1]
    url = f"http://127.0.0.1:{port}/"
    body = b'{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}'
    auth = {"Authorization": f"Bearer {ALICE}", "A2A-Version": "1.0"}
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        plain = await http.post(url, content=body, headers={**auth, "Content-Type": "text/plain"})
        foreign = await http.post(
            url, content=body, headers={**HEADERS, **auth, "Host": "evil.example"}
        )
        wildcard = await http.post(
            url, content=body, headers={**HEADERS, **auth, "Host": f"0.0.0.0:{port}"}
        )
        card = await http.get(
            f"http://127.0.0.1:{port}/.well-known/agent-card.json", headers={"Host": "evil.example"}
        )
        fine = await http.post(url, content=body, headers={**HEADERS, **auth})
    assert plain.status_code == 415
    assert (foreign.status_code, wildcard.status_code, card.status_code) == (421, 421, 421)
    assert fine.status_code == 200


# failures, bounds and JSON-RPC deviations ----------------------------------------------------


async def test_with_auth_a_failure_reaches_the_caller_as_a_generic_message(
    start: Start, connect: Any, stub: StubLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    stub.enqueue(reply.error(400, {"error": {"message": "internal detail 42"}}))
    caplog.set_level(logging.WARNING, logger="toolnexus")
    handle = await start(tn.Toolkit([]), auth=[ALICE])
    task = await send(await connect(handle.url, ALICE), message("hi"))
    assert task.status.state == TaskState.TASK_STATE_FAILED
    text = status_text(task)
    assert text.startswith("the agent failed (error ")
    assert "detail" not in text
    error_id = text.removeprefix("the agent failed (error ").removesuffix(")")
    logged = [r.getMessage() for r in caplog.records if error_id in r.getMessage()]
    assert logged
    assert "400" in logged[0]


async def test_the_memory_store_evicts_the_oldest_finished_task_and_expires_finished_ones() -> None:
    now = [0.0]
    store = MemoryTaskStore(TaskBounds(max_tasks=2, task_ttl_s=10), clock=lambda: now[0])

    def task(id: str, state: str) -> dict[str, Any]:
        return {"id": id, "contextId": "c", "status": {"state": state}}

    await store.save(task("a", "TASK_STATE_COMPLETED"))
    await store.save(task("b", "TASK_STATE_WORKING"))
    await store.save(task("c", "TASK_STATE_WORKING"))
    assert [t["id"] for t in await store.all()] == ["b", "c"]  # a: oldest finished, evicted
    await store.save(task("b", "TASK_STATE_COMPLETED"))
    now[0] = 9.0
    assert await store.get("b") is not None
    now[0] = 10.5
    assert await store.get("b") is None  # finished 10.5 s ago: expired
    assert await store.get("c") is not None  # still running: kept
    await store.save(task("d", "TASK_STATE_WORKING"))
    await store.save(task("e", "TASK_STATE_WORKING"))
    assert len(store) == 2  # none finished: the oldest of all goes


async def test_a_served_memory_store_is_bounded_by_max_tasks(
    start: Start, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.text("1"), reply.text("2"), reply.text("3"))
    handle = await start(tn.Toolkit([]), max_tasks=2)
    client = await connect(handle.url)
    first = await send(client, message("one"))
    await send(client, message("two"))
    await send(client, message("three"))
    listed = await client.list_tasks(ListTasksRequest())
    assert len(listed.tasks) == 2
    with pytest.raises(TaskNotFoundError):
        await client.get_task(GetTaskRequest(id=first.id))


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b'{"jsonrpc":"2.0","id":7,"method":"ListTasks","params":{"status":"NOPE"}}', -32602),
        (b'{"jsonrpc":"2.0","id":7,"method":"GetExtendedAgentCard","params":{}}', -32004),
        (b'{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"\xff"}}', -32700),
        (
            b'{"jsonrpc":"2.0","id":7,"method":"GetTask","params":'
            + b"[" * 600
            + b"]" * 600
            + b"}",
            -32700,
        ),
    ],
)
async def test_jsonrpc_errors_the_sdk_dispatcher_misses(
    start: Start, body: bytes, code: int
) -> None:
    handle = await start(tn.Toolkit([]))
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        answer = await http.post(handle.url + "/", content=body, headers=HEADERS)
    assert answer.json()["error"]["code"] == code
    if code not in (-32700,):
        assert answer.json()["id"] == 7


async def test_a_notification_gets_no_reply_and_is_not_run(
    start: Start, stub: StubLLMServer
) -> None:
    handle = await start(tn.Toolkit([]))
    note = {
        "jsonrpc": "2.0",
        "method": "SendMessage",
        "params": {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hi"}]}},
    }
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        answer = await http.post(handle.url + "/", content=json.dumps(note), headers=HEADERS)
        listed = await http.post(
            handle.url + "/",
            content=b'{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}',
            headers=HEADERS,
        )
    assert answer.status_code == 204
    assert answer.content == b""
    assert listed.json()["result"].get("tasks", []) == []
    assert stub.requests == []


async def test_cancel_by_the_owner_still_works_with_auth(
    start: Start, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("pick_colour", {})))
    handle = await start(asking_toolkit(), auth=[ALICE])
    alice = await connect(handle.url, ALICE)
    waiting = await send(alice, message("pick", context_id="c"))
    canceled = await asyncio.wait_for(alice.cancel_task(CancelTaskRequest(id=waiting.id)), LIMIT)
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
