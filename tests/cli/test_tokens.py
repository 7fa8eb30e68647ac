"""``--tokens FILE``: a command reuses the OAuth sign-in an earlier one kept in the file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import toolnexus as tn

from ..tools.mcp.test_oauth import Browser, config, oauth_server, server_state
from .support import toolnexus

__all__ = ["oauth_server"]  # the fixture, shared with the OAuth tests


async def test_a_command_signs_in_with_the_tokens_an_earlier_sign_in_kept(
    oauth_server: Callable[..., str], tmp_path: Path
) -> None:
    url = oauth_server()
    tokens = tmp_path / "tokens.json"
    mcp_json = tmp_path / "mcp.json"
    mcp_json.write_text(json.dumps(config(url)))
    browser = Browser()
    async with await tn.create_toolkit(
        mcp_config=config(url),
        builtins=False,
        wait_for=browser,
        token_store=tn.FileTokenStore(tokens),
    ) as tk:
        assert tk.mcp_status() == {"secure": "connected"}
    assert len(browser.requests) == 1

    done = toolnexus("tools", "--no-builtins", "--config", str(mcp_json), "--tokens", str(tokens))

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "# mcp secure: connected"
    assert "secure_echo\t(mcp)" in done.stdout.splitlines()
    assert (await server_state(url))["authorizations"] == 1, "the command asked to sign in again"
    (record,) = json.loads(tokens.read_text()).values()
    access_token = record["tokens"]["access_token"]
    assert access_token not in done.stdout + done.stderr


async def test_without_the_file_a_command_cannot_sign_in_unattended(
    oauth_server: Callable[..., str], tmp_path: Path
) -> None:
    url = oauth_server()
    mcp_json = tmp_path / "mcp.json"
    mcp_json.write_text(json.dumps(config(url)))

    done = toolnexus("tools", "--no-builtins", "--config", str(mcp_json))

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "# mcp secure: failed"
