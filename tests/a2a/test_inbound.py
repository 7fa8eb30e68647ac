"""A toolkit served over A2A, driven by ``a2a-sdk``'s own client: card, tasks, memory, errors."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver
from a2a.types.a2a_pb2 import GetTaskRequest, TaskState
from a2a.utils.errors import A2AError, TaskNotFoundError

import toolnexus as tn
from toolnexus.testing import StubLLMServer, reply

from .served import (
    LIMIT,
    Serve,
    artifact_texts,
    message,
    post_raw,
    send,
    status_text,
)

SKILLS = [
    tn.SkillDef(name="summarise", content="Summarise text.", description="Summarise a text."),
    tn.SkillDef(name="translate", content="Translate text.", description="Translate a text."),
]


async def skill_toolkit() -> tn.Toolkit:
    return await tn.create_toolkit(skills=SKILLS, builtins=False)


async def fetch_card(url: str) -> Any:
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        return await A2ACardResolver(http, url).get_agent_card()


async def test_card_has_the_defaults_and_one_skill_per_toolkit_skill(serve: Serve) -> None:
    served = await serve(await skill_toolkit())
    card = await fetch_card(served.handle.url)
    assert card.name == "toolnexus-agent"
    assert card.version == "0.1.0"
    assert card.description  # the protocol requires one
    [interface] = card.supported_interfaces
    assert interface.url == served.handle.url + "/"
    assert interface.protocol_binding == "JSONRPC"
    assert interface.protocol_version == "1.0"
    assert not card.capabilities.streaming
    assert not card.capabilities.push_notifications
    assert list(card.default_input_modes) == ["text"]
    assert list(card.default_output_modes) == ["text"]
    assert [(s.id, s.name, s.description) for s in card.skills] == [
        ("summarise", "summarise", "Summarise a text."),
        ("translate", "translate", "Translate a text."),
    ]
    assert not card.HasField("provider")


async def test_card_fields_come_from_the_profile(serve: Serve) -> None:
    served = await serve(
        await skill_toolkit(),
        name="helper",
        description="Helps.",
        version="2.1.0",
        provider={"organization": "Acme", "url": "https://acme.example"},
        skills=["translate", "no-such-skill"],
        url="https://agents.example/helper/",
    )
    card = await fetch_card(served.handle.url)
    assert (card.name, card.description, card.version) == ("helper", "Helps.", "2.1.0")
    assert (card.provider.organization, card.provider.url) == ("Acme", "https://acme.example")
    assert [s.id for s in card.skills] == ["translate"]
    assert card.supported_interfaces[0].url == "https://agents.example/helper/"


async def test_a_toolkit_without_skills_offers_the_agent_as_one_skill(serve: Serve) -> None:
    served = await serve(tn.Toolkit([]))
    card = await fetch_card(served.handle.url)
    assert [s.id for s in card.skills] == ["ask"]


async def test_the_card_carries_no_secret_and_no_tool(serve: Serve) -> None:
    @tn.tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    tk = await tn.create_toolkit(skills=SKILLS, builtins=False, extra_tools=[lookup])
    served = await serve(tk)
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        text = (await http.get(served.handle.url + "/.well-known/agent-card.json")).text
    assert "sk-test-key-123456" not in text
    assert "lookup" not in text
    assert "Summarise text." not in text  # a skill's body stays private


async def test_a_message_completes_with_the_model_answer_as_artifact(
    serve: Serve, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.text("Paris"))
    served = await serve(tn.Toolkit([]))
    client = await connect(served.handle.url)
    task = await send(client, message("Capital of France?", context_id="geo"))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert artifact_texts(task) == ["Paris"]
    assert task.context_id == "geo"
    assert stub.requests[0].json["messages"][-1] == {
        "role": "user",
        "content": "Capital of France?",
    }
    report = await served.next_report()
    assert report["state"] == "completed"
    assert report["id"] == task.id
    assert report["result"].text == "Paris"
    assert report["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_return_immediately_answers_at_once_and_get_task_gives_the_result(
    serve: Serve, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.text("done later"))
    served = await serve(tn.Toolkit([]))
    client = await connect(served.handle.url)
    request = message("work", context_id="c")
    request.configuration.return_immediately = True
    first = await send(client, request)
    assert first.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
    await served.next_report()
    later = await client.get_task(GetTaskRequest(id=first.id))
    assert later.status.state == TaskState.TASK_STATE_COMPLETED
    assert artifact_texts(later) == ["done later"]


async def test_one_context_id_is_one_conversation(
    serve: Serve, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.text("Nice to meet you, Ada."), reply.text("You are Ada."))
    served = await serve(tn.Toolkit([]))
    client = await connect(served.handle.url)
    await send(client, message("My name is Ada.", context_id="chat-1"))
    second = await send(client, message("What is my name?", context_id="chat-1"))
    assert artifact_texts(second) == ["You are Ada."]
    sent = [(m["role"], m["content"]) for m in stub.requests[1].json["messages"]]
    assert sent == [
        ("user", "My name is Ada."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "What is my name?"),
    ]


async def test_messages_without_a_context_share_nothing(
    serve: Serve, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.text("one"), reply.text("two"))
    served = await serve(tn.Toolkit([]))
    client = await connect(served.handle.url)
    first = await send(client, message("first"))
    second = await send(client, message("second"))
    assert first.context_id
    assert second.context_id
    assert first.context_id != second.context_id
    assert [m["content"] for m in stub.requests[1].json["messages"]] == ["second"]


async def test_a_raising_run_fails_the_task_with_its_message(
    serve: Serve, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.error(400, {"error": {"message": "bad request body"}}))
    served = await serve(tn.Toolkit([]))
    client = await connect(served.handle.url)
    task = await send(client, message("hi", context_id="c"))
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert "400" in status_text(task)
    report = await served.next_report()
    assert (report["state"], report["result"]) == ("failed", None)


async def test_unknown_task_is_the_protocol_task_not_found_error(
    serve: Serve, connect: Any
) -> None:
    served = await serve(tn.Toolkit([]))
    client = await connect(served.handle.url)
    with pytest.raises(TaskNotFoundError):
        await client.get_task(GetTaskRequest(id="no-such-task"))
    answer = await post_raw(
        served.handle.url + "/",
        json.dumps(
            {"jsonrpc": "2.0", "id": "q1", "method": "GetTask", "params": {"id": "x"}}
        ).encode(),
    )
    assert answer["error"]["code"] == -32001
    assert answer["id"] == "q1"


async def test_unknown_method_and_bad_json_are_json_rpc_errors(serve: Serve) -> None:
    served = await serve(tn.Toolkit([]))
    url = served.handle.url + "/"
    unknown = await post_raw(url, b'{"jsonrpc": "2.0", "id": 41, "method": "DoMagic"}')
    assert unknown["error"]["code"] == -32601
    assert unknown["id"] == 41
    broken = await post_raw(url, b'{"jsonrpc": "2.0", "id": 42, "method": ')
    assert broken["error"]["code"] == -32700


@pytest.mark.parametrize(
    ("depth", "code"),
    [(150, -32602), (510, -32602), (513, -32700), (1_500, -32700), (100_000, -32700)],
)
async def test_json_nested_too_deep_is_a_parse_error_not_an_internal_one(
    serve: Serve, depth: int, code: int
) -> None:
    """Up to 512 levels (SPEC §13) the request is parsed and refused as invalid params; past
    that it is a parse error. Never an internal error with a recursion text."""
    served = await serve(tn.Toolkit([]))
    nested = "[" * depth + "]" * depth
    body = f'{{"jsonrpc": "2.0", "id": 43, "method": "GetTask", "params": {nested}}}'
    answer = await post_raw(served.handle.url + "/", body.encode())
    assert answer["error"]["code"] == code
    assert "Recursion" not in json.dumps(answer)
    after = await post_raw(  # the server is still fine
        served.handle.url + "/", b'{"jsonrpc": "2.0", "id": 44, "method": "DoMagic"}'
    )
    assert after["error"]["code"] == -32601


async def test_a_request_without_the_protocol_version_is_refused(serve: Serve) -> None:
    served = await serve(tn.Toolkit([]))
    body = {"jsonrpc": "2.0", "id": 5, "method": "GetTask", "params": {"id": "x"}}
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        response = await http.post(served.handle.url + "/", json=body)
    answer = response.json()
    assert answer["id"] == 5
    assert "version" in answer["error"]["message"].lower()


async def test_other_paths_answer_404(serve: Serve) -> None:
    served = await serve(tn.Toolkit([]))
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        assert (await http.get(served.handle.url + "/mcp")).status_code == 404
        assert (await http.get(served.handle.url + "/other")).status_code == 404


async def test_on_loopback_a_foreign_host_or_origin_is_refused(serve: Serve) -> None:
    served = await serve(tn.Toolkit([]), url="https://agents.example/shop/")
    url = served.handle.url
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}'
    headers = {"A2A-Version": "1.0", "Content-Type": "application/json"}
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        from_page = await http.post(
            url + "/", content=body, headers={**headers, "Origin": "http://evil.example"}
        )
        rebound = await http.get(
            url + "/.well-known/agent-card.json", headers={"Host": "evil.example:80"}
        )
        local_page = await http.post(
            url + "/", content=body, headers={**headers, "Origin": "http://localhost:3000"}
        )
        via_proxy = await http.get(
            url + "/.well-known/agent-card.json", headers={"Host": "agents.example"}
        )
    assert from_page.status_code == 403
    assert rebound.status_code == 421
    assert local_page.json()["error"]["code"] == -32001
    assert via_proxy.status_code == 200


async def test_a_message_for_a_finished_task_is_not_run(
    serve: Serve, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.text("finished"))
    served = await serve(tn.Toolkit([]))
    client = await connect(served.handle.url)
    done = await send(client, message("first", context_id="f"))
    with pytest.raises(A2AError):
        await send(client, message("again", task_id=done.id, context_id="f"))
    again = await client.get_task(GetTaskRequest(id=done.id))
    assert again.status.state == TaskState.TASK_STATE_COMPLETED
    assert artifact_texts(again) == ["finished"]
    assert len(stub.requests) == 1
