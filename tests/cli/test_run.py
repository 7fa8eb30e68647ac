"""``toolnexus run`` over piped stdin: streaming, tool lines, memory, exit codes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from toolnexus.testing import StubLLMServer, reply

from .support import clean_env, messages_text, toolnexus, with_imports_listed, write_skill


@pytest.fixture
def stub() -> Iterator[StubLLMServer]:
    with StubLLMServer() as server:
        yield server


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write_skill(root, "greeting", "Greet people warmly.", "Say hello with the person's name.")
    return root


def endpoint(stub: StubLLMServer) -> list[str]:
    return ["--base-url", stub.url, "--model", "test-model", "--api-key", "test-key"]


def test_once_streams_text_to_stdout_and_tool_lines_to_stderr(
    stub: StubLLMServer, skills: Path
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("skill", {"name": "greeting"})),
        reply.text("Hello, Maya!", chunks=["Hel", "lo, ", "Maya!"]),
    )

    done = toolnexus(
        "run", *endpoint(stub), "--no-builtins", "--skills", str(skills), "--once", "hi"
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello, Maya!\n"
    assert done.stderr.splitlines() == ['-> skill {"name":"greeting"}', "<- skill ok"]
    assert all(r.stream for r in stub.requests)
    assert stub.requests[0].json["messages"][-1] == {"role": "user", "content": "hi"}
    assert "Say hello with the person" in messages_text(stub.requests[1].json)


def test_piped_output_is_plain_and_rich_is_never_imported(
    stub: StubLLMServer, skills: Path
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("skill", {"name": "greeting"})), reply.text("Hello, Maya!")
    )

    done, modules = with_imports_listed(
        "run", *endpoint(stub), "--no-builtins", "--skills", str(skills), "--once", "hi"
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello, Maya!\n"
    assert done.stderr.splitlines() == ['-> skill {"name":"greeting"}', "<- skill ok"]
    assert not any(name == "rich" or name.startswith("rich.") for name in modules)


def test_a_failing_tool_is_reported_as_error_on_stderr(stub: StubLLMServer, skills: Path) -> None:
    stub.enqueue(reply.tool_calls(reply.call("skill", {"name": "nope"})), reply.text("Sorry.\n"))

    done = toolnexus(
        "run", *endpoint(stub), "--no-builtins", "--skills", str(skills), "--once", "x"
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == "Sorry.\n"
    assert done.stderr.splitlines() == ['-> skill {"name":"nope"}', "<- skill error"]


def test_the_turn_limit_exits_3(stub: StubLLMServer, skills: Path) -> None:
    stub.enqueue(reply.tool_calls(reply.call("skill", {"name": "greeting"})))

    done = toolnexus(
        "run", *endpoint(stub), "--no-builtins", "--skills", str(skills),
        "--max-turns", "1", "--once", "hi",
    )  # fmt: skip

    assert done.returncode == 3, done.stderr
    assert len(stub.requests) == 1


def test_a_model_error_exits_1_without_the_api_key(stub: StubLLMServer) -> None:
    stub.enqueue(reply.error(400, {"error": {"message": "bad request"}}))

    done = toolnexus(
        "run", "--base-url", stub.url, "--model", "m", "--api-key", "sk-very-secret-key",
        "--no-builtins", "--once", "hi",
    )  # fmt: skip

    assert done.returncode == 1
    assert "400" in done.stderr
    assert "sk-very-secret-key" not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr


def test_no_api_key_anywhere_exits_1_naming_the_variables(stub: StubLLMServer) -> None:
    done = toolnexus("run", "--base-url", stub.url, "--model", "m", "--no-builtins", "--once", "x")

    assert done.returncode == 1
    assert "no API key: pass --api-key or set OPENAI_API_KEY" in done.stderr
    assert "api_key=" not in done.stderr
    assert stub.requests == []


def test_a_question_with_stdin_not_a_terminal_exits_4_and_prints_the_request(
    stub: StubLLMServer,
) -> None:
    ask = {"questions": [{"question": "Which colour?", "options": ["red", "blue"]}]}
    stub.enqueue(reply.tool_calls(reply.call("question", ask)))

    done = toolnexus("run", *endpoint(stub), "--once", "pick one")

    assert done.returncode == 4, done.stderr
    assert "Which colour?" in done.stderr


def test_repl_over_piped_stdin_keeps_the_session_and_stops_at_exit(stub: StubLLMServer) -> None:
    stub.enqueue(reply.text("first answer"), reply.text("second answer\n"), reply.text("never"))

    done = toolnexus(
        "run",
        *endpoint(stub),
        "--no-builtins",
        input="first question\n\n  \nsecond question\nexit\nthird\n",
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == "first answer\nsecond answer\n"
    assert len(stub.requests) == 2
    second = messages_text(stub.requests[1].json)
    assert "first question" in second
    assert "first answer" in second
    assert done.stderr == "> " * 5  # one prompt per line read, blank ones included


@pytest.mark.parametrize("word", ["quit", None])
def test_repl_ends_with_quit_or_end_of_input(stub: StubLLMServer, word: str | None) -> None:
    stub.enqueue(reply.text("ok"))
    lines = "hello\n" + (f"{word}\n" if word else "")

    done = toolnexus("run", *endpoint(stub), "--no-builtins", input=lines)

    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"
    assert len(stub.requests) == 1


def test_once_without_id_is_stateless(stub: StubLLMServer) -> None:
    stub.enqueue(reply.text("one"), reply.text("two"))

    toolnexus("run", *endpoint(stub), "--no-builtins", "--once", "remember apples")
    done = toolnexus("run", *endpoint(stub), "--no-builtins", "--once", "what did I say?")

    assert done.returncode == 0, done.stderr
    assert "apples" not in messages_text(stub.requests[1].json)


def test_two_once_runs_with_the_same_id_and_db_continue_one_conversation(
    stub: StubLLMServer, tmp_path: Path
) -> None:
    stub.enqueue(reply.text("noted"), reply.text("you said apples"))
    db = str(tmp_path / "state" / "chats.db")
    common = [*endpoint(stub), "--no-builtins", "--id", "user-7", "--db", db]

    first = toolnexus("run", *common, "--once", "remember apples")
    second = toolnexus("run", *common, "--once", "what did I say?")

    assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
    later = stub.requests[1].json["messages"]
    assert "remember apples" in messages_text({"messages": later})
    assert "noted" in messages_text({"messages": later})
    assert later[-1] == {"role": "user", "content": "what did I say?"}


def test_the_db_comes_from_toolnexus_db_when_no_flag_is_given(
    stub: StubLLMServer, tmp_path: Path
) -> None:
    stub.enqueue(reply.text("noted"), reply.text("again"))
    env = clean_env(TOOLNEXUS_DB=str(tmp_path / "env.db"))
    common = [*endpoint(stub), "--no-builtins", "--id", "c1"]

    toolnexus("run", *common, "--once", "remember pears", env=env)
    toolnexus("run", *common, "--once", "and?", env=env)

    assert (tmp_path / "env.db").exists()
    assert "remember pears" in messages_text(stub.requests[1].json)


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--base-url", "http://127.0.0.1:9"], {}),
        ([], {"TOOLNEXUS_BASE_URL": "http://127.0.0.1:9"}),
        (["--model", "m"], {}),
    ],
)
def test_a_missing_model_or_base_url_exits_2(args: list[str], env: dict[str, str]) -> None:
    done = toolnexus("run", *args, "--once", "hi", env=clean_env(**env))

    assert done.returncode == 2
    assert "model" in done.stderr or "base URL" in done.stderr


def test_environment_variables_configure_the_endpoint_and_flags_win(stub: StubLLMServer) -> None:
    stub.enqueue(reply.text("from env"), reply.text("from flags"))
    env = clean_env(
        TOOLNEXUS_BASE_URL=stub.url,
        TOOLNEXUS_MODEL="env-model",
        TOOLNEXUS_STYLE="anthropic",
        ANTHROPIC_API_KEY="test-key",
        OPENAI_API_KEY="test-key",
    )

    by_env = toolnexus("run", "--no-builtins", "--once", "a", env=env)
    by_flags = toolnexus(
        "run", "--no-builtins", "--model", "flag-model", "--style", "openai", "--once", "b", env=env
    )

    assert (by_env.returncode, by_flags.returncode) == (0, 0), by_env.stderr + by_flags.stderr
    assert (by_env.stdout, by_flags.stdout) == ("from env\n", "from flags\n")
    first, second = stub.requests
    assert (first.style, first.json["model"]) == ("anthropic", "env-model")
    assert (second.style, second.json["model"]) == ("openai", "flag-model")


@pytest.mark.parametrize(
    ("style", "key", "path"),
    [
        ("responses", "OPENAI_API_KEY", "/responses"),
        ("gemini", "GEMINI_API_KEY", "/models/m:streamGenerateContent"),
    ],
)
def test_style_takes_the_newer_wire_formats(
    stub: StubLLMServer, style: str, key: str, path: str
) -> None:
    stub.enqueue(reply.text("hello from " + style))
    env = clean_env(TOOLNEXUS_BASE_URL=stub.url, TOOLNEXUS_MODEL="m", **{key: "test-key"})

    done = toolnexus("run", "--no-builtins", "--style", style, "--once", "hi", env=env)

    assert done.returncode == 0, done.stderr
    assert done.stdout == f"hello from {style}\n"
    assert (stub.requests[0].style, stub.requests[0].path) == (style, path)


def test_an_unknown_style_is_refused_by_the_parser(stub: StubLLMServer) -> None:
    env = clean_env(TOOLNEXUS_BASE_URL=stub.url, TOOLNEXUS_MODEL="m", OPENAI_API_KEY="k")
    done = toolnexus("run", "--style", "bedrock", "--once", "hi", env=env)
    assert done.returncode == 2
    assert "gemini" in done.stderr
    assert stub.requests == []


def test_system_prompt_flag_reaches_the_model(stub: StubLLMServer) -> None:
    stub.enqueue(reply.text("aye"))

    done = toolnexus(
        "run", *endpoint(stub), "--no-builtins", "--system", "Talk like a pirate.", "--once", "hi"
    )

    assert done.returncode == 0, done.stderr
    assert stub.requests[0].json["messages"][0] == {
        "role": "system",
        "content": "Talk like a pirate.",
    }
