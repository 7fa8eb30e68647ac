"""Sub-agents: running one, as a tool, in a team, and the budgets that bound them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from toolnexus import (
    Answer,
    CancelToken,
    ConfigError,
    Request,
    ToolContext,
    Toolkit,
    ToolResult,
    create_in_process_client,
    define_tool,
    pending,
    tool,
)
from toolnexus.agents import Budget, agent

LIMIT = 10.0
Generate = Callable[[dict[str, Any]], Any]


def llm(generate: Generate) -> dict[str, Any]:
    return {"generate": generate, "model": "local"}


def system_of(request: dict[str, Any]) -> str:
    first = request["messages"][0]
    return str(first["content"]) if first["role"] == "system" else ""


def last(request: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = request["messages"][-1]
    return message


def usage(tokens: int) -> dict[str, int]:
    return {"prompt_tokens": tokens, "completion_tokens": 0}


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


async def test_a_run_starts_fresh_with_the_soul_and_reports_turns_and_tokens() -> None:
    seen: list[dict[str, Any]] = []

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        if last(request)["role"] == "user":
            return {
                "tool_calls": [{"name": "lookup", "arguments": {"key": "k"}}],
                "usage": usage(5),
            }
        return {"content": "found it", "usage": usage(7)}

    helper = agent(
        "helper", does="looks things up", soul="You look things up.", uses={"tools": [lookup]}
    )
    async with asyncio.timeout(LIMIT):
        result = await helper.run("find k", llm=llm(generate))
    assert (result.text, result.status, result.turns, result.total_tokens) == (
        "found it",
        "done",
        2,
        12,
    )
    assert seen[0]["messages"] == [
        {"role": "system", "content": "You look things up."},
        {"role": "user", "content": "find k"},
    ]


async def test_as_tool_returns_only_the_final_text_with_agent_metadata() -> None:
    def generate(request: dict[str, Any]) -> dict[str, Any]:
        if "researcher" in system_of(request):
            return {"content": "three sources agree", "usage": usage(4)}
        if last(request)["role"] == "user":
            return {"tool_calls": [{"name": "researcher", "arguments": {"prompt": "dig"}}]}
        return {"content": "summary"}

    researcher = agent("researcher", does="digs up facts", soul="You are the researcher.")
    research = researcher.as_tool(llm=llm(generate))
    assert research.name == "researcher"
    assert research.source == "agent"
    assert research.description == "digs up facts"
    assert research.input_schema == {
        "type": "object",
        "properties": {"prompt": {"type": "string"}},
        "required": ["prompt"],
    }
    direct = await research.execute({"prompt": "dig"}, None)
    assert direct.output == "three sources agree"
    assert not direct.is_error
    assert direct.metadata == {"agent": "researcher", "turns": 1, "totalTokens": 4}
    client = create_in_process_client(model="m", generate=generate)
    result = await client.run("go", Toolkit([research]))
    assert result.tool_calls[0].output == "three sources agree"


async def test_a_failed_agent_is_a_result_never_an_exception() -> None:
    def generate(request: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("model offline")

    broken = agent("broken", does="fails")
    result = await broken.run("hi", llm=llm(generate))
    assert result.status == "error"
    assert "model offline" in result.text
    as_tool = await broken.as_tool(llm=llm(generate)).execute({"prompt": "hi"}, None)
    assert as_tool.is_error
    assert as_tool.metadata == {"agent": "broken", "turns": 0, "totalTokens": 0}


def team_model(
    lead_calls: list[dict[str, Any]], children: dict[str, str] | None = None
) -> Generate:
    """The lead asks for ``lead_calls`` once, then answers with the results it got."""

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        soul = system_of(request)
        if "lead" not in soul:
            name = soul.split()[-1]
            return {
                "content": (children or {}).get(name, f"{name} did: {last(request)['content']}"),
                "usage": usage(3),
            }
        if last(request)["role"] == "user":
            return {"tool_calls": lead_calls, "usage": usage(2)}
        results = [m["content"] for m in request["messages"] if m["role"] == "tool"]
        return {"content": " | ".join(results), "usage": usage(2)}

    return generate


def member(name: str, **options: Any) -> Any:
    return agent(name, does=f"the {name}", soul=f"You are the {name}", **options)


async def test_the_task_tool_hands_work_to_a_teammate_and_rolls_up_its_tokens() -> None:
    writer = member("writer")
    lead = agent("lead", does="leads", soul="You are the lead", team=[writer, member("researcher")])
    generate = team_model([{"name": "task", "arguments": {"agent": "writer", "prompt": "draft"}}])
    result = await lead.run("write it", llm=llm(generate))
    assert result.status == "done"
    assert result.text == "writer did: draft"
    assert result.turns == 2
    assert result.total_tokens == 2 + 2 + 3


async def test_the_task_tool_lists_the_team_and_rejects_an_outsider() -> None:
    seen: list[dict[str, Any]] = []
    team = [member("writer"), member("critic")]
    lead = agent("lead", does="leads", soul="You are the lead", team=team)
    base = team_model([{"name": "task", "arguments": {"agent": "poet", "prompt": "x"}}])

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return base(request)  # type: ignore[no-any-return]

    result = await lead.run("go", llm=llm(generate))
    task = next(t for t in seen[0]["tools"] if t["function"]["name"] == "task")
    assert "writer: the writer" in task["function"]["description"]
    assert "critic: the critic" in task["function"]["description"]
    assert "You are the writer" not in str(seen[0]["tools"])  # a teammate's soul stays private
    assert task["function"]["parameters"]["required"] == ["agent", "prompt"]
    assert result.text == "task: no agent named 'poet' in the team; the team is critic, writer"
    assert len(seen) == 2  # nothing ran for the outsider


async def test_twenty_children_run_at_most_five_at_once_and_results_keep_call_order() -> None:
    in_flight = 0
    most = 0

    async def generate(request: dict[str, Any]) -> dict[str, Any]:
        nonlocal in_flight, most
        soul = system_of(request)
        if "lead" in soul:
            if last(request)["role"] == "user":
                calls = [
                    {"name": "task", "arguments": {"agent": "worker", "prompt": f"job {i}"}}
                    for i in range(20)
                ]
                return {"tool_calls": calls}
            return {
                "content": ",".join(
                    m["content"] for m in request["messages"] if m["role"] == "tool"
                )
            }
        in_flight += 1
        most = max(most, in_flight)
        for _ in range(20):  # give every admitted child the chance to start
            await asyncio.sleep(0)
        in_flight -= 1
        return {"content": last(request)["content"].replace("job ", "done ")}

    lead = agent(
        "lead",
        does="leads",
        soul="You are the lead",
        team=[member("worker")],
        budget=Budget(max_concurrent=5),
    )
    async with asyncio.timeout(LIMIT):
        result = await lead.run("go", llm=llm(generate))
    assert most == 5
    assert result.text == ",".join(f"done {i}" for i in range(20))


async def test_max_children_and_max_depth_refuse_a_task_naming_the_limit() -> None:
    calls = [
        {"name": "task", "arguments": {"agent": "writer", "prompt": f"p{i}"}} for i in range(3)
    ]
    lead = agent(
        "lead",
        does="l",
        soul="You are the lead",
        team=[member("writer")],
        budget=Budget(max_children=2),
    )
    result = await lead.run("go", llm=llm(team_model(calls)))
    parts = result.text.split(" | ")
    assert parts[:2] == ["writer did: p0", "writer did: p1"]
    assert "maxChildren" in parts[2]

    flat = agent(
        "lead",
        does="l",
        soul="You are the lead",
        team=[member("writer")],
        budget=Budget(max_depth=0),
    )
    refused = await flat.run("go", llm=llm(team_model(calls[:1])))
    assert "maxDepth" in refused.text


@pytest.mark.parametrize(
    ("budget", "limit"),
    [
        (Budget(max_turns=2), "maxTurns"),
        (Budget(max_tokens=50), "maxTokens"),
        (Budget(max_tool_calls=1), "maxToolCalls"),
        (Budget(max_wall_ms=500), "maxWallMs"),
    ],
)
async def test_each_limit_stops_the_run_incomplete_and_keeps_the_partial_work(
    budget: Budget, limit: str
) -> None:
    executed: list[str] = []

    async def slow_lookup(key: str) -> str:
        executed.append(key)
        if limit == "maxWallMs":
            await asyncio.sleep(0.6)  # the tool's own work outlasts the wall budget
        return f"value of {key}"

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        n = sum(1 for m in request["messages"] if m["role"] == "assistant")
        calls = [{"name": "slow_lookup", "arguments": {"key": f"k{n}{i}"}} for i in range(2)]
        return {"content": f"step {n}", "tool_calls": calls, "usage": usage(60)}

    worker = agent("worker", does="w", uses={"tools": [define_tool(slow_lookup)]}, budget=budget)
    async with asyncio.timeout(LIMIT):
        result = await worker.run("go", llm=llm(generate))
    assert result.status == "incomplete"
    assert result.limit == limit
    assert result.turns >= 1
    assert result.total_tokens == 60 * result.turns
    assert executed  # the work done before the limit was not thrown away
    if limit == "maxToolCalls":
        assert executed == ["k00"]


async def test_a_suspending_child_surfaces_through_its_parent_with_its_path_and_resumes() -> None:
    async def publish(title: str, ctx: ToolContext | None = None) -> ToolResult:
        """Publish after approval."""
        if ctx is not None and ctx.answer is not None:
            return ToolResult(f"published {title}")
        return pending(Request.new("approval", f"publish {title}?"))

    writer = member("writer", uses={"tools": [define_tool(publish)]})
    lead = agent("lead", does="l", soul="You are the lead", team=[writer])

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        soul = system_of(request)
        if "writer" in soul:
            if last(request)["role"] == "user":
                return {"tool_calls": [{"name": "publish", "arguments": {"title": "News"}}]}
            return {"content": f"writer: {last(request)['content']}"}
        if last(request)["role"] == "user":
            return {
                "tool_calls": [{"name": "task", "arguments": {"agent": "writer", "prompt": "ship"}}]
            }
        return {"content": f"lead: {last(request)['content']}"}

    halted = await lead.run("go", llm=llm(generate))
    assert halted.status == "pending"
    assert halted.pending is not None
    assert halted.pending.kind == "approval"
    assert halted.pending.prompt == "publish News?"
    assert halted.pending.data is not None
    assert halted.pending.data["path"] == ["lead", "writer"]
    answer = Answer(halted.pending.id, ok=True)
    resumed = await lead.resume(halted.pending, answer, llm=llm(generate))
    assert resumed.status == "done"
    assert resumed.text == "lead: writer: published News"

    approvals: list[Request] = []
    inline = agent(
        "lead",
        does="l",
        soul="You are the lead",
        team=[writer],
        wait_for=lambda r: (approvals.append(r), Answer(r.id, ok=True))[1],
    )
    done = await inline.run("go", llm=llm(generate))
    assert done.text == "lead: writer: published News"
    assert approvals[0].data is not None
    assert approvals[0].data["path"] == ["writer"]


async def test_cancelling_the_parent_cancels_every_child() -> None:
    started = asyncio.Event()
    cancelled: list[str] = []
    children = 0

    async def generate(request: dict[str, Any]) -> dict[str, Any]:
        nonlocal children
        if "lead" in system_of(request):
            calls = [
                {"name": "task", "arguments": {"agent": "worker", "prompt": str(i)}}
                for i in range(3)
            ]
            return {"tool_calls": calls}
        children += 1
        if children == 3:
            started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(last(request)["content"])
            raise
        return {"content": "never"}

    lead = agent("lead", does="l", soul="You are the lead", team=[member("worker")])
    token = CancelToken()
    running = asyncio.ensure_future(lead.run("go", llm=llm(generate), cancel=token))
    async with asyncio.timeout(LIMIT):
        await started.wait()
        token.cancel()
        result = await running
    assert result.status == "interrupted"
    assert sorted(cancelled) == ["0", "1", "2"]


async def test_closing_an_agent_ends_its_run_in_flight_closed_and_later_runs_too() -> None:
    started = asyncio.Event()
    calls = 0
    cancelled: list[str] = []

    async def generate(request: dict[str, Any]) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(last(request)["content"])
            raise
        return {"content": "never"}

    worker = member("worker")
    running = asyncio.ensure_future(worker.run("go", llm=llm(generate)))
    async with asyncio.timeout(LIMIT):
        await started.wait()
        await worker.aclose()
        result = await running
    assert (result.text, result.status, result.turns) == ("worker was closed", "closed", 0)
    assert cancelled == ["go"]

    async with asyncio.timeout(LIMIT):
        later = await worker.run("again", llm=llm(generate))
    assert (later.text, later.status, later.turns) == ("worker is closed", "closed", 0)
    assert calls == 1


async def test_the_clients_timeout_ms_ends_a_run_with_status_timeout() -> None:
    async def generate(request: dict[str, Any]) -> dict[str, Any]:
        await asyncio.Event().wait()
        return {"content": "never"}

    worker = member("worker")
    async with asyncio.timeout(LIMIT):
        result = await worker.run("go", llm={**llm(generate), "timeout_ms": 50})
    assert result.status == "timeout"
    assert result.text == "the run did not finish within timeout_ms=50"
    assert result.turns == 0


@pytest.mark.parametrize("budget", [None, Budget()], ids=["no-budget", "empty-budget"])
async def test_an_unset_max_turns_stops_the_run_after_ten_turns(budget: Budget | None) -> None:
    calls = 0

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        return {"tool_calls": [{"name": "lookup", "arguments": {"key": f"k{calls}"}}]}

    worker = agent("worker", does="w", uses={"tools": [lookup]}, budget=budget)
    async with asyncio.timeout(LIMIT):
        result = await worker.run("go", llm=llm(generate))
    assert (result.status, result.limit, result.turns) == ("incomplete", "maxTurns", 10)
    assert calls == 10


def test_bad_agent_definitions_are_config_errors(tmp_path: Any) -> None:
    with pytest.raises(ConfigError, match="name"):
        agent("", does="x")
    with pytest.raises(ConfigError, match="soul or soul_file"):
        agent("a", does="x", soul="s", soul_file=tmp_path / "s.md")
    with pytest.raises(ConfigError, match="cannot read soul_file"):
        agent("a", does="x", soul_file=tmp_path / "missing.md")
    with pytest.raises(ConfigError, match="uses takes only 'tools'"):
        agent("a", does="x", uses={"skills": []})
    with pytest.raises(ConfigError, match="max_turns"):
        Budget(max_turns=0)
    with pytest.raises(ConfigError, match="max_tokens"):
        Budget(max_tokens=-1)
    (tmp_path / "soul.md").write_text("From a file.")
    assert agent("a", does="x", soul_file=tmp_path / "soul.md").soul() == "From a file."


def _approval_agent(executed: list[str]) -> tuple[Any, Generate]:
    async def deploy(env: str, ctx: ToolContext | None = None) -> ToolResult:
        """Deploy after approval."""
        if ctx is not None and ctx.answer is not None:
            executed.append(env)
            return ToolResult(f"deployed {env}")
        return pending(Request.new("approval", f"deploy {env}?"))

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        if last(request)["role"] == "user":
            return {"tool_calls": [{"name": "deploy", "arguments": {"env": "prod"}}]}
        return {"content": f"ok: {last(request)['content']}"}

    return member("ops", uses={"tools": [define_tool(deploy)]}), generate


async def test_a_second_resume_of_the_same_request_is_a_config_error_and_runs_nothing() -> None:
    executed: list[str] = []
    ops, generate = _approval_agent(executed)
    async with asyncio.timeout(LIMIT):
        halted = await ops.run("ship it", llm=llm(generate))
        assert halted.status == "pending"
        assert halted.pending is not None
        answer = Answer(halted.pending.id, ok=True)
        first = await ops.resume(halted.pending, answer, llm=llm(generate))
        assert (first.status, first.text) == ("done", "ok: deployed prod")
        assert ops.waiting(halted.pending.id) is None
        with pytest.raises(ConfigError, match="no run waits for request"):
            await ops.resume(halted.pending, answer, llm=llm(generate))
    assert executed == ["prod"]


async def test_of_two_concurrent_resumes_of_one_request_exactly_one_runs() -> None:
    executed: list[str] = []
    ops, generate = _approval_agent(executed)
    async with asyncio.timeout(LIMIT):
        halted = await ops.run("ship it", llm=llm(generate))
        assert halted.pending is not None
        answer = Answer(halted.pending.id, ok=True)
        outcomes = await asyncio.gather(
            *(ops.resume(halted.pending, answer, llm=llm(generate)) for _ in range(2)),
            return_exceptions=True,
        )
    assert sorted(type(o).__name__ for o in outcomes) == ["AgentResult", "ConfigError"]
    assert executed == ["prod"]


async def test_a_resume_that_fails_leaves_the_request_waiting_for_another_answer() -> None:
    executed: list[str] = []
    ops, generate = _approval_agent(executed)
    async with asyncio.timeout(LIMIT):
        halted = await ops.run("ship it", llm=llm(generate))
        assert halted.pending is not None

        def broken(request: dict[str, Any]) -> dict[str, Any]:
            raise RuntimeError("model down")

        answer = Answer(halted.pending.id, ok=False)
        failed = await ops.resume(halted.pending, answer, llm=llm(broken))
        assert failed.status == "error"
        assert ops.waiting(halted.pending.id) is not None
        done = await ops.resume(
            halted.pending, Answer(halted.pending.id, ok=True), llm=llm(generate)
        )
    assert done.status == "done"
    assert executed == ["prod"]


class _WatchedToken(CancelToken):
    """A token that counts the callbacks registered on it and not yet unregistered."""

    def __init__(self) -> None:
        super().__init__()
        self.watching = 0

    def on_cancel(self, callback: Callable[[], object]) -> Callable[[], None]:
        unregister = super().on_cancel(callback)
        self.watching += 1

        def off() -> None:
            self.watching -= 1
            unregister()

        return off


async def test_runs_given_a_long_lived_cancel_token_leave_no_callback_on_it() -> None:
    token = _WatchedToken()
    helper = member("helper")
    async with asyncio.timeout(LIMIT):
        for _ in range(200):
            result = await helper.run("hi", llm=llm(lambda r: {"content": "hello"}), cancel=token)
            assert result.status == "done"
    assert token.watching == 0
    assert not token.cancelled
