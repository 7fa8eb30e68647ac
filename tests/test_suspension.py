"""Suspension wire data and helpers."""

from __future__ import annotations

import pytest

from toolnexus import Answer, Request, ToolResult, auth_required, pending, pending_of


def test_pending_renders_prompt_and_url_as_an_error_result_carrying_the_request() -> None:
    request = Request(id="r1", kind="authorization", prompt="Log in", url="https://x")
    result = pending(request)
    assert result.output == "Log in\nhttps://x"
    assert result.is_error is True
    assert result.metadata == {"pending": request}
    assert pending_of(result) is request


def test_pending_without_url_outputs_only_the_prompt() -> None:
    result = pending(Request(id="r2", kind="approval", prompt="Deploy to prod?"))
    assert result.output == "Deploy to prod?"
    assert result.is_error is True


def test_request_to_dict_omits_absent_optionals() -> None:
    assert Request(id="r1", kind="input", prompt="Name?").to_dict() == {
        "id": "r1",
        "kind": "input",
        "prompt": "Name?",
    }


def test_request_to_dict_uses_expires_at_camel_case() -> None:
    request = Request(
        id="r1",
        kind="authorization",
        prompt="Log in",
        url="https://x",
        data={"scope": "repo"},
        expires_at="2030-01-01T00:00:00Z",
    )
    assert request.to_dict() == {
        "id": "r1",
        "kind": "authorization",
        "prompt": "Log in",
        "url": "https://x",
        "data": {"scope": "repo"},
        "expiresAt": "2030-01-01T00:00:00Z",
    }


def test_request_new_gives_each_request_a_fresh_id() -> None:
    first = Request.new("approval", "Deploy?", data={"env": "prod"})
    second = Request.new("approval", "Deploy?")
    assert first.id
    assert second.id
    assert first.id != second.id
    assert (first.kind, first.prompt, first.data) == ("approval", "Deploy?", {"env": "prod"})


def test_auth_required_suspends_on_an_authorization_request() -> None:
    result = auth_required("https://login.example/x")
    request = pending_of(result)
    assert request is not None
    assert request.kind == "authorization"
    assert request.url == "https://login.example/x"
    assert request.prompt == "Authorization required"
    assert result.output == "Authorization required\nhttps://login.example/x"
    assert result.is_error is True


def test_auth_required_uses_a_given_prompt() -> None:
    request = pending_of(auth_required("https://x", "Sign in to GitHub"))
    assert request is not None
    assert request.prompt == "Sign in to GitHub"


@pytest.mark.parametrize(
    "request_",
    [
        Request(id="r1", kind="input", prompt="Name?"),
        Request("r2", "authorization", "Log in", url="https://x", data={"a": [1]}, expires_at="z"),
    ],
)
def test_request_from_dict_round_trips(request_: Request) -> None:
    assert Request.from_dict(request_.to_dict()) == request_


@pytest.mark.parametrize(
    "answer",
    [
        Answer(id="r1", ok=True),
        Answer(id="r1", ok=True, data={"v": 1}),
        Answer(id="r1", ok=False, reason="declined"),
    ],
)
def test_answer_wire_form_round_trips(answer: Answer) -> None:
    assert Answer.from_dict(answer.to_dict()) == answer


def test_answer_to_dict_omits_absent_optionals() -> None:
    assert Answer(id="r1", ok=False).to_dict() == {"id": "r1", "ok": False}
    assert Answer("r1", True, {"v": 1}, "x").to_dict() == {
        "id": "r1",
        "ok": True,
        "data": {"v": 1},
        "reason": "x",
    }


def test_from_dict_names_a_missing_key() -> None:
    with pytest.raises(ValueError, match="'prompt'"):
        Request.from_dict({"id": "r1", "kind": "input"})
    with pytest.raises(ValueError, match="'ok'"):
        Answer.from_dict({"id": "r1"})


def test_pending_of_converts_a_dict_with_the_wire_keys() -> None:
    wire = {"id": "r1", "kind": "authorization", "prompt": "Log in", "expiresAt": "z"}
    request = pending_of(ToolResult("Log in", is_error=True, metadata={"pending": wire}))
    assert request == Request(id="r1", kind="authorization", prompt="Log in", expires_at="z")


@pytest.mark.parametrize(
    "result",
    [
        ToolResult("plain"),
        ToolResult("failed", is_error=True),
        ToolResult("x", metadata={"status": 200}),
        ToolResult("x", metadata={"pending": None}),
        ToolResult("x", metadata={"pending": "r1"}),
        ToolResult("x", metadata={"pending": {"id": "r1"}}),
    ],
)
def test_pending_of_a_result_that_is_not_a_suspension_is_none(result: ToolResult) -> None:
    assert pending_of(result) is None
