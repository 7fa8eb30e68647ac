"""Serving over A2A: what is checked before anything listens, and where the profile comes from."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

import toolnexus as tn
from toolnexus.testing import StubLLMServer

from .served import LIMIT


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_a2a_without_a_client_is_a_config_error() -> None:
    with pytest.raises(tn.ConfigError, match="client="):
        await tn.Toolkit([]).serve("127.0.0.1:0", a2a={})


async def test_a2a_with_something_else_as_client_is_a_config_error() -> None:
    with pytest.raises(tn.ConfigError, match="Client"):
        await tn.Toolkit([]).serve("127.0.0.1:0", a2a={}, client=object())


@pytest.mark.parametrize(
    ("profile", "named"),
    [
        ({"nmae": "x"}, "nmae"),
        ({"name": ""}, '"name"'),
        ({"skills": "summarise"}, '"skills"'),
        ({"store": "redis://x"}, '"store"'),
        ({"store": 42}, '"store"'),
        ({"url": "ftp://x"}, '"url"'),
        ({"provider": {"org": "x"}}, '"provider"'),
        ({"streaming": "yes"}, '"streaming"'),
    ],
)
async def test_a_bad_profile_is_a_config_error_naming_the_key(
    stub: StubLLMServer, profile: dict[str, Any], named: str
) -> None:
    client = tn.create_client(stub.url, model="m", api_key="k")
    with pytest.raises(tn.ConfigError, match=named):
        await tn.Toolkit([]).serve("127.0.0.1:0", a2a=profile, client=client)


async def test_on_task_must_be_callable(stub: StubLLMServer) -> None:
    client = tn.create_client(stub.url, model="m", api_key="k")
    with pytest.raises(tn.ConfigError, match="on_task"):
        await tn.Toolkit([]).serve("127.0.0.1:0", a2a={}, client=client, on_task="no")


async def test_the_config_a2a_block_is_used_when_no_profile_is_given(
    stub: StubLLMServer,
) -> None:
    config = {"mcpServers": {}, "a2a": {"name": "from-config"}}
    tk = await tn.create_toolkit(config, builtins=False)
    client = tn.create_client(stub.url, model="m", api_key="k")
    handle = await tk.serve("127.0.0.1:0", client=client)
    try:
        async with httpx.AsyncClient(timeout=LIMIT) as http:
            card = (await http.get(handle.url + "/.well-known/agent-card.json")).json()
        assert card["name"] == "from-config"
    finally:
        await handle.aclose()


def test_without_the_sdk_serving_over_a2a_says_what_to_install(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import asyncio, sys
        sys.modules["a2a"] = None  # as if a2a-sdk were not installed
        import toolnexus as tn

        async def main():
            client = tn.create_client("http://127.0.0.1:1", model="m", api_key="k")
            try:
                await tn.Toolkit([]).serve("127.0.0.1:{free_port()}", a2a={{}}, client=client)
            except tn.ConfigError as exc:
                print(exc)

        asyncio.run(main())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert "pip install 'toolnexus[a2a]'" in out.stdout
