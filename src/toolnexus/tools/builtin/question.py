"""``question``: ask the human, through suspension.

The first call suspends with a ``question`` request whose prompt lists the questions (with
their options) and whose data carries them as given. The run's ``wait_for`` (or a later
``run_with_answer``/``resume``) supplies the answer, and the call executed again with it
returns the answer's data as compact JSON, unchanged.
"""

from __future__ import annotations

import copy

from ..._json import compact_json
from ...suspension import Request, pending
from ...types import JSONObject, Tool, ToolContext, ToolResult
from ._common import ArgError, BuiltinScope, builtin

__all__ = ["render_questions", "tools"]

_DESCRIPTION = (
    "Ask the user one or more questions and wait for the answers. Give each question's text, "
    "optionally a short header, a list of options and whether several may be chosen. "
    "Never use it to ask for passwords, keys or other secrets."
)

_QUESTION: JSONObject = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "The question to ask."},
        "header": {"type": "string", "description": "A short label for the question."},
        "options": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Answers to choose from.",
        },
        "multiple": {"type": "boolean", "description": "Whether several options may be chosen."},
    },
    "required": ["question"],
    "additionalProperties": False,
}


def tools(scope: BuiltinScope) -> list[Tool]:
    """The ``question`` tool (``scope`` is not needed)."""
    del scope
    properties: JSONObject = {"questions": {"type": "array", "items": _QUESTION, "minItems": 1}}
    return [builtin("question", _DESCRIPTION, properties, ["questions"], _question)]


async def _question(args: JSONObject, ctx: ToolContext | None) -> ToolResult:
    if ctx is not None and ctx.answer is not None:
        return ToolResult(compact_json(ctx.answer.data or {}))
    questions = _questions(args.get("questions"))
    request = Request.new(
        "question", render_questions(questions), data={"questions": copy.deepcopy(questions)}
    )
    return pending(request)


def render_questions(questions: list[JSONObject]) -> str:
    """The prompt for ``questions``: one line each, ``" (options: a, b)"`` appended when a
    question has options (headers are not shown)."""
    lines = []
    for q in questions:
        options = q.get("options") or []
        lines.append(q["question"] + (f" (options: {', '.join(options)})" if options else ""))
    return "\n".join(lines)


def _questions(value: object) -> list[JSONObject]:
    if value is None:
        raise ArgError("questions is required")
    if not isinstance(value, list) or not value:
        raise ArgError("questions must be a non-empty array")
    for i, q in enumerate(value):
        where = f"questions[{i}]"
        if not isinstance(q, dict):
            raise ArgError(f"{where} must be an object with a question")
        if not isinstance(q.get("question"), str) or not q["question"]:
            raise ArgError(f"{where}.question is required")
        if q.get("header") is not None and not isinstance(q["header"], str):
            raise ArgError(f"{where}.header must be a string")
        options = q.get("options")
        if options is not None and (
            not isinstance(options, list) or not all(isinstance(o, str) for o in options)
        ):
            raise ArgError(f"{where}.options must be an array of strings")
        if q.get("multiple") is not None and not isinstance(q["multiple"], bool):
            raise ArgError(f"{where}.multiple must be true or false")
    return value
