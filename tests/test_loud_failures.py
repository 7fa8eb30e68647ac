"""Failures are loud: warnings for what is skipped, ``strict=True`` to refuse a partial
toolkit, INFO lines for MCP servers and DEBUG lines for model requests (never a secret)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from aiohttp import web

from toolnexus import ConfigError, SkillDef, create_client, create_toolkit, http_tool
from toolnexus.testing import StubLLMServer, mcp_server_command, reply

from .http_server import serving

SECRET = "sk-very-secret-123456"


def messages(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level]


def write_skills(root: Path) -> None:
    for name, text in {
        "good": "---\nname: good\ndescription: Works.\n---\nBody.",
        "broken": "---\nname: [unclosed\n---\nBody.",
        "nameless": "Just text, no frontmatter.",
    }.items():
        (root / name).mkdir(parents=True)
        (root / name / "SKILL.md").write_text(text, encoding="utf-8")


async def test_each_skipped_skill_file_is_a_warning_naming_file_and_reason(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    write_skills(tmp_path)
    async with await create_toolkit(skills_dir=tmp_path, builtins=False) as tk:
        assert [s.name for s in tk._skills.skills] == ["good"]  # type: ignore[union-attr]
    warned = messages(caplog, logging.WARNING)
    broken = str(tmp_path / "broken" / "SKILL.md")
    nameless = str(tmp_path / "nameless" / "SKILL.md")
    assert any(broken in m and "not valid YAML" in m for m in warned), warned
    assert any(nameless in m and "no frontmatter with a non-empty name" in m for m in warned)


async def test_strict_raises_for_skipped_skills_and_missing_folders(tmp_path: Path) -> None:
    write_skills(tmp_path)
    with pytest.raises(ConfigError) as caught:
        await create_toolkit(skills_dir=[tmp_path, tmp_path / "nowhere"], strict=True)
    text = str(caught.value)
    assert "strict=True" in text
    assert str(tmp_path / "broken" / "SKILL.md") in text
    assert str(tmp_path / "nameless" / "SKILL.md") in text
    assert "nowhere does not exist" in text


async def test_strict_raises_for_two_skills_with_the_same_name(tmp_path: Path) -> None:
    for folder in ("first", "second"):
        (tmp_path / folder).mkdir()
        text = "---\nname: same\ndescription: Twice.\n---\nBody."
        (tmp_path / folder / "SKILL.md").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match="strict=True") as caught:
        await create_toolkit(skills_dir=tmp_path, strict=True, builtins=False)
    assert str(tmp_path / "second" / "SKILL.md") in str(caught.value)
    assert "same name" in str(caught.value)

    data = [SkillDef(name="same", description="Data.", content="Body.")]
    with pytest.raises(ConfigError, match="same name"):
        await create_toolkit(skills_dir=tmp_path / "first", skills=data, strict=True)


async def test_strict_raises_when_the_skill_provider_raises() -> None:
    def provider() -> list[SkillDef]:
        raise RuntimeError("catalog offline")

    with pytest.raises(ConfigError, match="catalog offline"):
        await create_toolkit(skill_provider=provider, strict=True)


async def test_strict_accepts_a_toolkit_that_loaded_completely(tmp_path: Path) -> None:
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "SKILL.md").write_text("---\nname: good\n---\nBody.", encoding="utf-8")
    config = {"mcpServers": {"off": {"command": "nothing-to-run", "disabled": True}}}
    async with await create_toolkit(
        mcp_config=config, skills_dir=tmp_path, strict=True, builtins=False
    ) as tk:
        assert "skill" in tk
        assert tk.mcp_status() == {"off": "disabled"}


async def test_strict_raises_when_an_mcp_server_fails_and_names_it(tmp_path: Path) -> None:
    config = {
        "mcpServers": {
            "ok": {"command": mcp_server_command()},
            "missing": {"command": [str(tmp_path / "no-such-program")]},
        }
    }
    with pytest.raises(ConfigError, match='MCP server "missing" failed'):
        await create_toolkit(mcp_config=config, strict=True)
    async with await create_toolkit(mcp_config=config) as tk:  # without strict: a warning
        assert tk.mcp_status() == {"ok": "connected", "missing": "failed"}


async def test_mcp_servers_log_connecting_and_ready_with_the_time_taken(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="toolnexus")
    config = {"mcpServers": {"fixture": {"command": mcp_server_command()}}}
    async with await create_toolkit(mcp_config=config) as tk:
        assert tk.mcp_status() == {"fixture": "connected"}
    info = messages(caplog, logging.INFO)
    connecting = [m for m in info if m.startswith('MCP server "fixture": connecting')]
    ready = [m for m in info if m.startswith('MCP server "fixture": ready')]
    assert len(connecting) == 1
    assert len(ready) == 1
    assert " tools in " in ready[0]
    assert ready[0].endswith(" ms")


async def test_an_unset_header_variable_is_a_warning_naming_it_and_the_server(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    monkeypatch.delenv("TN_UNSET_TOKEN", raising=False)
    monkeypatch.setenv("TN_SET_TOKEN", SECRET)
    config = {
        "mcpServers": {
            "remote": {
                "url": "http://127.0.0.1:9/mcp",
                "timeout": 2000,
                "headers": {
                    "Authorization": "Bearer ${TN_UNSET_TOKEN}",
                    "X-Other": "${TN_SET_TOKEN}",
                },
            }
        }
    }
    async with await create_toolkit(mcp_config=config) as tk:
        assert tk.mcp_status() == {"remote": "failed"}
    warned = messages(caplog, logging.WARNING)
    unset = [m for m in warned if "TN_UNSET_TOKEN" in m]
    assert len(unset) == 1
    assert 'MCP server "remote"' in unset[0]
    assert "Authorization" in unset[0]
    assert not any("TN_SET_TOKEN" in m for m in warned)
    assert not any(SECRET in m for m in caplog.text.splitlines())


async def test_an_http_tool_warns_once_about_an_unset_header_variable(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    monkeypatch.delenv("TN_UNSET_TOKEN", raising=False)

    async def echo(request: web.Request) -> web.Response:
        return web.Response(text=f"auth=[{request.headers.get('Authorization')}]")

    async with serving(echo, method="GET") as url:
        status = http_tool(
            name="status",
            description="Status.",
            url=url + "/",
            input_schema={"type": "object"},
            headers={"Authorization": "Bearer ${TN_UNSET_TOKEN}"},
        )
        first = await status.execute({}, None)
        await status.execute({}, None)
    assert first.output == "auth=[Bearer]"
    warned = [m for m in messages(caplog, logging.WARNING) if "TN_UNSET_TOKEN" in m]
    assert len(warned) == 1
    assert "'status'" in warned[0]


@pytest.mark.parametrize("stream", [False, True])
async def test_model_requests_and_retries_are_debug_lines_without_secrets(
    stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="toolnexus")
    script = [reply.error(503, {"error": "busy"}), reply.text("hello")]
    with StubLLMServer(script) as stub:
        url = stub.url
        async with create_client(
            stub.url,
            "anthropic",
            model="m",
            api_key=SECRET,
            headers={"X-Custom": SECRET + "-header"},
            retry_base_ms=0,
        ) as client:
            if stream:
                async for _ in client.stream("hi"):
                    pass
            else:
                await client.run("hi")
    debug = messages(caplog, logging.DEBUG)
    requests = [m for m in debug if m.startswith("POST ")]
    assert len(requests) == 2
    assert " -> 503 in " in requests[0]
    assert "(attempt 1)" in requests[0]
    assert " -> 200 in " in requests[1]
    assert "(attempt 2)" in requests[1]
    assert url.rstrip("/") in requests[0]
    assert any(m.startswith("retrying POST ") for m in debug)
    assert SECRET not in caplog.text
