"""``Client.translate``: exactly one provider call for an OpenAI-shaped request.

The same endpoint, headers, retries, request shaping (``request_params`` then
``body_transform``), deadline and ``llm`` metric as the loop; ``before_llm``/``after_llm`` fire
once with ``turn`` 0. No loop, no tool execution, no store, no ``tool`` or ``run`` metric.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING

from ..cancel import CancelToken
from ..dialects.translate import TranslateResult, build_request, read_reply
from ..errors import ConfigError
from ..toolkit import Toolkit
from ..types import JSONObject
from .hooks import call_hook
from .scope import RunScope, guarded

if TYPE_CHECKING:
    from .loop import Engine

__all__ = ["translate"]


async def translate(
    engine: Engine,
    messages: Sequence[JSONObject],
    *,
    tools: Sequence[JSONObject] | None,
    toolkit: Toolkit | None,
    tool_choice: object,
    system: str | None,
    max_tokens: int,
    cancel: CancelToken | None,
) -> TranslateResult:
    """Send one translated request through ``engine``'s caller; the reply in OpenAI terms."""
    style = engine.dialect.name
    if style not in ("openai", "anthropic"):
        raise ConfigError(
            f"translate works with clients of style 'openai' or 'anthropic', not {style!r}"
        )
    declared = [*(toolkit.to_openai() if toolkit is not None else []), *(tools or [])]
    body = build_request(
        style,
        [dict(m) for m in messages],
        declared,
        model=engine.model,
        system=system,
        default_system=engine.system_prompt,
        tool_choice=tool_choice,
        max_tokens=max_tokens,
    )

    async def one_call() -> AsyncGenerator[TranslateResult, None]:
        sent = await _shaped(engine, body)
        started = time.perf_counter()
        try:
            turn = await engine.caller.call(sent, engine.headers(), turn=0)
        except BaseException:
            await engine.metrics.llm(model=engine.model, ok=False, ms=_ms_since(started))
            raise
        await engine.metrics.llm(
            model=engine.model,
            ok=True,
            ms=_ms_since(started),
            prompt_tokens=turn.usage.prompt_tokens,
            completion_tokens=turn.usage.completion_tokens,
        )
        if engine.hooks.after_llm is not None:
            payload = {"response": turn.response, "model": engine.model, "turn": 0}
            await call_hook(engine.hooks.after_llm, {**payload, "style": style}, name="after_llm")
        yield read_reply(style, turn.response, usage=turn.usage, request_model=str(sent["model"]))

    async def no_run_metric(_: BaseException) -> None:
        return None

    scope = RunScope(cancel, engine.timeout_ms)
    async with aclosing(guarded(one_call(), scope, no_run_metric)) as results:
        async for result in results:
            return result
    raise AssertionError("unreachable")  # pragma: no cover


async def _shaped(engine: Engine, body: JSONObject) -> JSONObject:
    """``before_llm`` (its ``messages``/``tools`` replacements apply), then request shaping."""
    if engine.hooks.before_llm is not None:
        payload = {
            "messages": list(body["messages"]),
            "tools": list(body.get("tools") or []),
            "model": engine.model,
            "turn": 0,
            "style": engine.dialect.name,
        }
        override = await call_hook(engine.hooks.before_llm, payload, name="before_llm")
        if override:
            if override.get("messages") is not None:
                body["messages"] = list(override["messages"])
            if "tools" in override:
                if override["tools"]:
                    body["tools"] = list(override["tools"])
                else:
                    body.pop("tools", None)
    return await engine.shape(body)


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0
