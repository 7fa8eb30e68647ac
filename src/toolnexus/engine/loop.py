"""THE agent loop: one async generator of events behind ``run``, ``stream`` and ``ask``.

Per turn: ``before_llm`` → build the body → one LLM call (with retries) → ``after_llm`` →
``usage`` event → if the model asked for tools: ``tool_call`` events, run them concurrently,
settle them in call order (suspensions included), append their results → next turn.

With an ``output_type`` (``engine.output``), the end of a turn is where the answer is checked:
a text answer (or, in the ``tool`` mode, a ``final_result`` call) that fails is sent back and
the loop goes on; no other step changes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, cast

from .._callbacks import maybe_await, snapshot
from .._text import valid_text, valid_value
from ..cancel import CancelToken
from ..dialects import ArgumentsDelta, Dialect, StreamItem, ToolUse, Turn
from ..dialects.base import prompt_message
from ..dialects.output import OutputMode
from ..errors import ConfigError
from ..events import (
    DoneEvent,
    Event,
    PendingEvent,
    TextEvent,
    ToolCallDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from ..messages import Message
from ..metrics import Metrics
from ..suspension import Answer, Request, pending_of
from ..toolkit import Toolkit
from ..types import (
    ConversationStore,
    JSONObject,
    RunResult,
    RunStatus,
    ToolCall,
    ToolResult,
    Usage,
    WaitFor,
)
from .hooks import Hooks, call_hook
from .intercepted import intercepted_call, observed
from .interceptors import Interceptor, RunInfo
from .llm import ModelCaller
from .output import ACCEPTED, FINAL_RESULT, AnswerCheck, OutputOptions, Verdict
from .resume import resumable_turn
from .scope import RunScope, guarded
from .serial import KeyedLock
from .tool_calls import Finished, Outcome, ToolRunner
from .waiting import check_not_waiting, save_pending

logger = logging.getLogger("toolnexus")

__all__ = ["Engine", "RunInput", "WaitFor"]


@dataclass(slots=True)
class RunInput:
    """Everything one run needs beyond the client's configuration."""

    prompt: str | None
    toolkit: Toolkit | None
    history: Sequence[Message] | None = None
    conversation_id: str | None = None
    cancel: CancelToken | None = None
    stream: bool = False
    resume: tuple[Request, Answer] | None = None
    """Set by ``run_with_answer``: the halted request and the host's answer."""
    quiet: bool = False
    """Only the ``DoneEvent`` is wanted (``run`` without ``on_event``): no usage, tool-call or
    tool-result event is made."""
    output: OutputOptions | None = None
    """Structured output: the answer is checked against a type (see ``engine.output``)."""


@dataclass(slots=True)
class _RunState:
    started: float
    messages: list[JSONObject] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    halted: Request | None = None
    interceptors: tuple[Interceptor, ...] = ()
    info: RunInfo | None = None
    """Set when the run has interceptors."""
    turn_results: list[tuple[str, ToolResult]] = field(default_factory=list)
    stop_reason: str | None = None
    """Of the last model reply."""
    last_message: JSONObject | None = None
    quiet: bool = False
    """The last assistant message this run appended."""

    def record(self, use: ToolUse, args: JSONObject, result: ToolResult) -> None:
        self.tool_calls.append(
            ToolCall(use.id, use.name, args, result.output, result.is_error, result.metadata)
        )


@dataclass(slots=True)
class Engine:
    """A client's fixed configuration, and the loop that runs on it."""

    dialect: Dialect
    caller: ModelCaller
    model: str
    system_prompt: str
    max_turns: int
    hooks: Hooks
    metrics: Metrics
    store: ConversationStore
    headers: Callable[[], dict[str, str]]
    """Resolves the request headers (and the API key) at the start of each run."""
    wait_for: WaitFor | None = None
    request_params: Mapping[str, Any] | None = None
    body_transform: Callable[[JSONObject], Any] | None = None
    timeout_ms: float | None = None
    interceptors: tuple[Interceptor, ...] = ()
    """Wrap every model call and tool execution (see ``interceptors.Interceptor``)."""
    output_mode: OutputMode | None = None
    """The client's default structured-output mode (``None``: the style's)."""
    conversations: KeyedLock = field(default_factory=KeyedLock)
    """Serialises runs of one conversation id within this client."""

    def events(self, run: RunInput) -> AsyncGenerator[Event, None]:
        """The run as a stream of events, under its deadline and cancel token."""
        scope = RunScope(run.cancel, self.timeout_ms)
        state = _RunState(started=time.perf_counter(), quiet=run.quiet)
        state.interceptors = interceptors = self.interceptors
        if interceptors:
            state.info = RunInfo(
                self.model,
                self.dialect.name,
                run.stream,
                run.conversation_id,
                _stopped=lambda: scope.reason,
            )

        async def on_error(exc: BaseException) -> None:
            abandoned = isinstance(exc, GeneratorExit)
            await self.metrics.run(
                model=self.model,
                turns=state.turns,
                tool_calls=len(state.tool_calls),
                total_tokens=state.usage.total_tokens,
                ms=_ms_since(state.started),
                error=None if abandoned else str(exc) or type(exc).__name__,
                abandoned=abandoned,
            )

        inner = self._loop(run, state, scope)
        if run.conversation_id is not None:
            inner = self._one_at_a_time(run.conversation_id, inner)
        events = guarded(inner, scope, on_error, final=_is_done)
        if state.info is None:
            return events
        return observed(events, interceptors, state.info)

    async def _one_at_a_time(
        self, conversation_id: str, events: AsyncGenerator[Event, None]
    ) -> AsyncGenerator[Event, None]:
        """``events`` once no other run of this client holds the conversation: from loading
        the transcript to saving it, runs of one conversation id never overlap."""
        done: DoneEvent | None = None
        async with aclosing(events):
            async with self.conversations.hold(conversation_id):
                async for event in events:
                    if isinstance(event, DoneEvent):  # saved: the next run may start
                        done = event
                        break
                    yield event
        if done is not None:
            yield done

    async def _loop(
        self, run: RunInput, state: _RunState, scope: RunScope
    ) -> AsyncGenerator[Event, None]:
        headers = self.headers()
        toolkit = run.toolkit
        runner = ToolRunner(
            toolkit,
            self.hooks,
            self.metrics,
            scope,
            state.interceptors,
            state.info,
            quiet=run.quiet,
        )
        answers = None
        if run.output is not None:
            answers = AnswerCheck(run.output, self.dialect.name, copy=bool(state.interceptors))
        offered = list(toolkit.tools()) if toolkit is not None else []
        if answers is not None:
            headers = answers.headers(headers)
            if answers.mode == "tool":
                if any(t.name == FINAL_RESULT for t in offered):
                    raise ConfigError(
                        f"the toolkit has a tool named {FINAL_RESULT!r}, which output_mode="
                        "'tool' needs for the answer: rename it or choose another output_mode"
                    )
                offered.append(answers.spec.final_tool)
        # The schemas are shared with the tools unless an interceptor sees the body as sent:
        # hooks and body_transform get copies of their own. A copy per run cost twice the
        # json.dumps of the body with 1,000 tools (benchmarks/suite.py, growth).
        tools: list[JSONObject] = []
        if offered:
            tools = self.dialect.tool_schemas(offered, copy=bool(state.interceptors))
        skills = toolkit.skills_prompt() if toolkit is not None else ""
        system = "\n\n".join(p for p in (self.system_prompt, skills) if p)
        state.messages = await self._seed(run)
        if run.resume is None:
            if self.dialect.system_in_messages and system and not state.messages:
                state.messages.append({"role": "system", "content": system})
            state.messages.append(prompt_message(self.dialect, _valid_prompt(run.prompt)))
        else:
            async with aclosing(self._resume(run.resume, runner, state)) as events:
                async for event in events:
                    yield event
            if state.halted is not None:
                yield await self._done(run, state, scope, "pending", state.halted.prompt)
                return

        for turn in range(self.max_turns):
            if self.hooks.before_llm is not None:
                tools = await self._before_llm(state, tools, turn)
            body = self.dialect.build_body(
                state.messages, tools, model=self.model, system=system, stream=run.stream
            )
            if self.request_params or self.body_transform is not None:
                body = await self.shape(body, answers.shape if answers is not None else None)
            elif answers is not None:
                body = answers.shape(body)
            reply: Turn | None = None
            if run.stream or state.info is not None:
                calls = self._call_llm(body, headers, turn, state)
                async with aclosing(calls) as items:
                    async for item in items:
                        if isinstance(item, str):
                            yield TextEvent(valid_text(item)[0])
                        elif isinstance(item, ArgumentsDelta):
                            if answers is None or not answers.final(item.name):
                                yield ToolCallDeltaEvent(item.id, item.name, item.index, item.delta)
                        else:
                            reply = item
            else:  # most runs: one JSON call, with no generator around it
                reply = await self._call_once(body, headers, turn)
            assert reply is not None
            state.turns += 1
            state.usage += reply.usage
            state.stop_reason = reply.stop_reason
            entries = reply.entries()
            if entries:
                state.messages.extend(valid_value(entries)[0])  # a JSON "\ud800" is no UTF-8 text
                state.last_message = valid_value(reply.message)[0]
            if self.hooks.after_llm is not None:
                payload = {"response": snapshot(reply.response), "model": self.model, "turn": turn}
                await call_hook(
                    self.hooks.after_llm, {**payload, "style": self.dialect.name}, name="after_llm"
                )
            if not state.quiet:
                yield UsageEvent(snapshot(state.usage))
            if not reply.tool_uses:
                if reply.stop_reason == _PAUSED:
                    continue  # a server tool paused the turn: send the transcript again
                if answers is None:
                    yield await self._done(run, state, scope, "done", valid_text(reply.text)[0])
                    return
                said = await answers.check_text(reply.text)
                if said.ok or answers.failed():
                    yield await self._answered(run, state, scope, answers, said)
                    return
                state.messages.append(answers.retry_message(said))
                continue
            uses, finals = reply.tool_uses, []
            if answers is not None and answers.mode == "tool":
                uses = [u for u in reply.tool_uses if u.name != FINAL_RESULT]
                finals = [u for u in reply.tool_uses if u.name == FINAL_RESULT]
            state.turn_results = []
            if uses:
                async with aclosing(self._tool_turn(runner, uses, turn, state)) as events:
                    async for event in events:
                        yield event
            verdict: Verdict | None = None
            if finals:
                assert answers is not None
                verdict = await self._final_results(answers, reply.tool_uses, finals, state)
            state.messages.extend(self._results(reply.tool_uses, state.turn_results))
            if state.halted is not None:
                yield await self._done(run, state, scope, "pending", state.halted.prompt)
                return
            if verdict is not None and answers is not None:
                if verdict.ok or answers.failed():
                    yield await self._answered(run, state, scope, answers, verdict)
                    return
        text = self.dialect.incomplete_text(state.last_message)
        yield await self._done(run, state, scope, "incomplete", text, limit="maxTurns")

    async def _final_results(
        self, answers: AnswerCheck, calls: list[ToolUse], finals: list[ToolUse], state: _RunState
    ) -> Verdict:
        """Check the turn's ``final_result`` calls and put their results among the others, in
        call order. The first valid one is the answer; else the last failure is returned."""
        settled = dict(state.turn_results)
        chosen: Verdict | None = None
        last: Verdict | None = None
        for use in finals:
            verdict = await answers.check_call(use.args, use.error)
            if verdict.ok:
                settled[use.id] = ToolResult(ACCEPTED)
                chosen = chosen or verdict
            else:
                settled[use.id] = ToolResult(verdict.retry, is_error=True)
                last = verdict
        state.turn_results = [(c.id, settled[c.id]) for c in calls if c.id in settled]
        result = chosen or last
        assert result is not None
        return result

    async def _answered(
        self,
        run: RunInput,
        state: _RunState,
        scope: RunScope,
        answers: AnswerCheck,
        verdict: Verdict,
    ) -> DoneEvent:
        """The end of a run whose answer was checked: ``done`` with its value, or
        ``incomplete`` (``outputRetries``) when the last retry failed too."""
        if verdict.ok:
            return await self._done(
                run,
                state,
                scope,
                "done",
                verdict.text,
                output=verdict.value,
                dump=answers.spec.dump,
            )
        return await self._done(
            run, state, scope, "incomplete", verdict.text, limit="outputRetries"
        )

    async def _before_llm(
        self, state: _RunState, tools: list[JSONObject], turn: int
    ) -> list[JSONObject]:
        """Run the ``before_llm`` hook; its replacements persist. Returns the tools to send."""
        if self.hooks.before_llm is None:
            return tools
        payload = {
            "messages": snapshot(state.messages),
            "tools": snapshot(tools),
            "model": self.model,
            "turn": turn,
        }
        override = await call_hook(
            self.hooks.before_llm, {**payload, "style": self.dialect.name}, name="before_llm"
        )
        if override:
            if override.get("messages") is not None:
                state.messages = snapshot(list(override["messages"]))
            if "tools" in override:
                return snapshot(list(override["tools"] or []))
        return tools

    async def _seed(self, run: RunInput) -> list[JSONObject]:
        if run.conversation_id is not None and run.resume is None:
            await check_not_waiting(self.store, run.conversation_id)
        if run.history is not None:
            return list(cast("Sequence[JSONObject]", run.history))
        if run.conversation_id is not None:
            saved = await self.store.get(run.conversation_id)
            return list(cast("list[JSONObject]", saved or []))
        return []

    async def shape(
        self, body: JSONObject, output: Callable[[JSONObject], JSONObject] | None = None
    ) -> JSONObject:
        """``request_params`` merged in (its keys win), then the structured-output form
        (``output``), then ``body_transform``: what it returns replaces the body; ``None`` keeps
        the body it was given, edits included (SPEC §2.8)."""
        if self.request_params:
            body.update(self.request_params)
        if output is not None:
            body = output(body)
        if self.body_transform is not None:
            given = snapshot(body)  # its own copy: edits to it are the transform's to make
            replaced = await maybe_await(self.body_transform, given)
            if replaced is None:
                return given
            if not isinstance(replaced, dict):
                raise ConfigError(
                    f"body_transform must return a dict or None, got {type(replaced).__name__}"
                )
            body = replaced
        return body

    async def _call_once(self, body: JSONObject, headers: dict[str, str], turn: int) -> Turn:
        """``_call_llm`` for a JSON call without interceptors."""
        started = time.perf_counter()
        try:
            reply = await self.caller.call(body, headers, turn=turn)
        except BaseException:
            await self.metrics.llm(model=self.model, ok=False, ms=_ms_since(started))
            raise
        await self._llm_done(reply, started)
        return reply

    async def _llm_done(self, reply: Turn, started: float) -> None:
        """The ``llm`` metric of a call that answered."""
        await self.metrics.llm(
            model=self.model,
            ok=True,
            ms=_ms_since(started),
            prompt_tokens=reply.usage.prompt_tokens,
            completion_tokens=reply.usage.completion_tokens,
        )

    async def _call_llm(
        self, body: JSONObject, headers: dict[str, str], turn: int, state: _RunState
    ) -> AsyncGenerator[StreamItem | Turn, None]:
        """One streamed or intercepted model call (text deltas and argument pieces, then the
        turn), with its ``llm`` metric."""
        started = time.perf_counter()
        if state.info is not None:
            calls = intercepted_call(
                self.caller, self.dialect, state.interceptors, state.info, body, headers, turn
            )
        else:
            calls = self.caller.stream(body, headers, turn=turn)
        try:
            async with aclosing(calls) as items:
                async for item in items:
                    yield item
                    if isinstance(item, Turn):
                        reply = item
        except GeneratorExit:  # the consumer left the stream during this call
            await self.metrics.llm(
                model=self.model, ok=False, ms=_ms_since(started), abandoned=True
            )
            raise
        except BaseException:
            await self.metrics.llm(model=self.model, ok=False, ms=_ms_since(started))
            raise
        await self._llm_done(reply, started)

    async def _tool_turn(
        self, runner: ToolRunner, uses: list[ToolUse], turn: int, state: _RunState
    ) -> AsyncGenerator[Event, None]:
        """Announce, run and settle one turn's calls; leaves the results in ``turn_results``."""
        if not state.quiet:
            for use in uses:
                yield ToolCallEvent(use.id, use.name, snapshot(use.args))
        outcomes: list[Outcome] = []
        async for item in runner.with_progress(runner.run_all(uses, turn)):
            if isinstance(item, Finished):
                outcomes = item.value
            else:
                yield item
        results: list[tuple[str, ToolResult]] = []
        for index, (use, outcome) in enumerate(zip(uses, outcomes, strict=True)):
            result = outcome.result
            request = pending_of(result)
            if request is not None:
                if state.halted is not None:
                    continue  # a later suspension: it suspends again after the resume
                if self.wait_for is None:
                    request = _stamp(request, use.id)
                    result = ToolResult(
                        result.output, True, {**(result.metadata or {}), "pending": request}
                    )
                    yield PendingEvent(snapshot(request))
                    state.halted = request
                    state.record(use, outcome.args, result)
                    results.append((use.id, result))
                    continue
                yield PendingEvent(snapshot(request))
                answering = self._answer(runner, use, outcome.args, request, (turn, index))
                async for step in runner.with_progress(answering):
                    if isinstance(step, Finished):
                        result = step.value
                    else:
                        yield step
            state.record(use, outcome.args, result)
            results.append((use.id, result))
            if not state.quiet:
                yield ToolResultEvent(use.id, use.name, result.output, result.is_error)
        state.turn_results = results

    async def _answer(
        self,
        runner: ToolRunner,
        use: ToolUse,
        args: JSONObject,
        request: Request,
        where: tuple[int, int],
    ) -> ToolResult:
        """Ask the host's ``wait_for``; run the call once more when the answer is ok."""
        assert self.wait_for is not None
        answer = await maybe_await(self.wait_for, snapshot(request))
        if not isinstance(answer, Answer) or not answer.ok:
            return declined(request, answer if isinstance(answer, Answer) else None)
        return await runner.run_again(use, args, answer, request, *where)

    async def _resume(
        self, resume: tuple[Request, Answer], runner: ToolRunner, state: _RunState
    ) -> AsyncGenerator[Event, None]:
        """Settle the halted turn of a history: the answered call, then the unanswered ones."""
        request, answer = resume
        turn = resumable_turn(self.dialect, state.messages, request)
        if answer.ok:
            index = next(i for i, c in enumerate(turn.calls) if c.id == turn.halted.id)
            result = await runner.run_again(
                turn.halted, turn.halted.args, answer, request, 0, index
            )
        else:
            result = declined(request, answer)
        state.record(turn.halted, turn.halted.args, result)
        yield ToolResultEvent(turn.halted.id, turn.halted.name, result.output, result.is_error)
        settled = {**turn.results, turn.halted.id: result}
        if turn.unanswered:
            async with aclosing(self._tool_turn(runner, turn.unanswered, 0, state)) as events:
                async for event in events:
                    yield event
            settled.update(state.turn_results)
        ordered = [(use.id, settled[use.id]) for use in turn.calls if use.id in settled]
        del state.messages[turn.results_start :]
        state.messages.extend(self._results(turn.calls, ordered))

    def _results(
        self, uses: list[ToolUse], results: list[tuple[str, ToolResult]]
    ) -> list[JSONObject]:
        """The transcript entries of one turn's results. A style whose results name their call
        (gemini's ``functionResponse``) gets the calls along, through ``call_results``."""
        call_results = getattr(self.dialect, "call_results", None)
        if call_results is None:
            entries = self.dialect.tool_results(results)
        else:
            by_id = {use.id: use for use in uses}
            entries = call_results([(by_id[i], r) for i, r in results if i in by_id])
        return valid_value(entries)[0]  # tool output is repaired already; metadata may not be

    async def _done(
        self,
        run: RunInput,
        state: _RunState,
        scope: RunScope,
        status: RunStatus,
        text: str,
        *,
        limit: str | None = None,
        output: object = None,
        dump: Callable[[Any], object] | None = None,
    ) -> DoneEvent:
        result = RunResult(
            text=text,
            messages=cast("list[Message]", state.messages),
            tool_calls=state.tool_calls,
            tool_call_count=len(state.tool_calls),
            turns=state.turns,
            usage=state.usage,
            model=self.model,
            status=status,
            limit=limit,
            pending=state.halted if status == "pending" else None,
            stop_reason=state.stop_reason,
            output=output,
            _output_dump=dump,
        )
        if run.conversation_id is not None:
            # Saving is all or nothing for the caller: a deadline or cancel that fired already
            # lands here, before the save; from then on neither can stop the run, so it never
            # raises RunTimeout/RunCancelled for a transcript that was stored (a store that
            # writes in a thread would finish its write anyway). It finishes as saved.
            await asyncio.sleep(0)
            scope.close()
            await self.store.save(
                run.conversation_id, cast("list[Message]", snapshot(state.messages))
            )
            if result.pending is not None:  # so another process can list and answer it
                await save_pending(self.store, run.conversation_id, snapshot(result.pending))
        await self.metrics.run(
            model=self.model,
            turns=state.turns,
            tool_calls=len(state.tool_calls),
            total_tokens=state.usage.total_tokens,
            ms=_ms_since(state.started),
            status=status,
        )
        return DoneEvent(result)


_PAUSED = "pause_turn"
"""The stop reason of a turn the provider paused and expects to be sent again."""


def _stamp(request: Request, call_id: str) -> Request:
    """The request with the halted call's id in ``data["toolCallId"]`` (for the resume)."""
    data = {**(request.data or {}), "toolCallId": call_id}
    return Request(request.id, request.kind, request.prompt, request.url, data, request.expires_at)


def _is_done(event: Event) -> bool:
    return isinstance(event, DoneEvent)


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0


def _valid_prompt(prompt: str | None) -> str | None:
    """The prompt as valid Unicode (see ``toolnexus._text``); a warning says when it was not."""
    if prompt is None:
        return None
    text, invalid = valid_text(prompt)
    if invalid:
        logger.warning("the prompt had %d characters that are not valid Unicode: replaced", invalid)
    return text


ADVISORY_REASONS = frozenset({"declined", "cancelled", "expired"})
"""The reason codes of §4.1 that say nothing beyond "not ok" (the model is not told them)."""


def declined(request: Request, answer: Answer | None) -> ToolResult:
    """The result of a call whose request was declined or expired: a reason in a person's own
    words follows on a ``reason:`` line, so the model learns why (SPEC §4.3)."""
    output = f"declined/expired: {request.prompt}"
    reason = answer.reason if answer is not None else None
    if reason and reason.strip() and reason not in ADVISORY_REASONS:
        output += f"\nreason: {reason}"
    return ToolResult(output, is_error=True)
