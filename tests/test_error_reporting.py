"""How failures are reported: tool exceptions in the debug log, strict wire booleans."""

from __future__ import annotations

import logging

import pytest

from toolnexus import Answer, ConfigError, Toolkit, ToolResult, tool
from toolnexus.types import Tool


@tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("boom")


async def test_a_native_tool_exception_is_logged_at_debug_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.DEBUG, logger="toolnexus"):
        result = await Toolkit([explode]).execute("explode", {})
    assert (result.output, result.is_error) == ("boom", True)
    [record] = [r for r in caplog.records if "explode" in r.getMessage()]
    assert record.levelno == logging.DEBUG
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], RuntimeError)


async def test_a_raw_tool_exception_is_logged_at_debug_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def execute(args: dict[str, object], ctx: object) -> ToolResult:
        raise ValueError("bad input")

    raw = Tool(
        name="raw",
        description="d",
        input_schema={"type": "object"},
        source="custom",
        execute=execute,  # type: ignore[arg-type]
    )
    with caplog.at_level(logging.DEBUG, logger="toolnexus"):
        result = await Toolkit([raw]).execute("raw", {})
    assert (result.output, result.is_error) == ("bad input", True)
    [record] = [r for r in caplog.records if "raw" in r.getMessage()]
    assert record.levelno == logging.DEBUG
    assert record.exc_info is not None


@pytest.mark.parametrize("ok", ["false", "true", 0, 1, None])
def test_answer_from_dict_rejects_an_ok_that_is_not_a_boolean(ok: object) -> None:
    with pytest.raises(ConfigError, match="ok"):
        Answer.from_dict({"id": "r1", "ok": ok})


def test_answer_from_dict_keeps_a_boolean_ok() -> None:
    assert Answer.from_dict({"id": "r1", "ok": False}).ok is False
    assert Answer.from_dict({"id": "r1", "ok": True, "data": {"a": 1}}).data == {"a": 1}
