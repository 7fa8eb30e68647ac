"""Describing remote agents: ``agent(...)``, ``agents=[...]`` and the config ``agents`` block."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from toolnexus import ConfigError, RemoteAgent, agent, create_toolkit
from toolnexus.tools.mcp.config import load_mcp_config

from .peer import Peer, running_peer


def test_agent_keeps_its_options_in_seconds() -> None:
    remote = agent(
        "https://agents.example/.well-known/agent-card.json",
        headers={"Authorization": "Bearer ${TOKEN}"},
        timeout=20,
        poll_every=0.5,
        name="helper",
    )
    assert remote == RemoteAgent(
        "https://agents.example/.well-known/agent-card.json",
        timeout=20.0,
        poll_every=0.5,
        name="helper",
    )
    assert remote.headers == {"Authorization": "Bearer ${TOKEN}"}
    assert (remote.timeout, remote.poll_every) == (20.0, 0.5)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"card_url": "ftp://x/card"}, "card_url must be an http"),
        ({"card_url": ""}, "card_url must be an http"),
        ({"timeout": 0}, "timeout must be a positive"),
        ({"timeout": float("inf")}, "timeout must be a positive"),
        ({"poll_every": "1"}, "poll_every must be a number"),
        ({"headers": {"X": 1}}, "headers must map header names to strings"),
        ({"name": " "}, "name must be a non-empty string"),
    ],
)
def test_a_bad_agent_option_is_a_config_error_naming_it(
    options: dict[str, Any], message: str
) -> None:
    given: dict[str, Any] = {"card_url": "http://127.0.0.1:1/card", **options}
    with pytest.raises(ConfigError, match=message):
        agent(given.pop("card_url"), **given)


@pytest.mark.parametrize(
    ("agents", "message"),
    [
        ("http://127.0.0.1:1/card", "agents must be a list"),
        ([42], r"agents\[0\] must be an agent"),
    ],
)
async def test_a_bad_agents_option_is_a_config_error(agents: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        await create_toolkit(builtins=False, agents=agents)


def test_the_agents_block_reads_milliseconds_and_skips_disabled_entries() -> None:
    config = load_mcp_config(
        {
            "mcpServers": {},
            "agents": {
                "shop": {
                    "card": "http://127.0.0.1:1/card",
                    "headers": {"X-Key": "${KEY}"},
                    "timeout": 2500,
                    "pollEvery": 50,
                    "name": "paint",
                },
                "off": {"card": "http://127.0.0.1:2/card", "disabled": True},
                "also off": {"card": "http://127.0.0.1:3/card", "enabled": False},
            },
        }
    )
    assert config.agents == [
        RemoteAgent(
            "http://127.0.0.1:1/card", timeout=2.5, poll_every=0.05, name="paint", id="shop"
        )
    ]
    assert config.agents[0].headers == {"X-Key": "${KEY}"}


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ([], '"agents" must be an object'),
        ({"a": "http://x"}, 'agent "a": the entry must be an object'),
        ({"a": {"card": 7}}, 'agent "a": "card" must be the URL'),
        ({"a": {"card": "http://x/c", "timeout": -1}}, 'agent "a": "timeout" must be a positive'),
        ({"a": {"card": "http://x/c", "pollEvery": True}}, 'agent "a": "pollEvery" must be a'),
        ({"a": {"card": "http://x/c", "headers": []}}, r'agent "a": "headers" must map'),
    ],
)
def test_a_malformed_agents_block_is_a_config_error_naming_the_file_and_agent(
    tmp_path: Path, block: object, message: str
) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {}, "agents": ' + json.dumps(block) + "}")
    with pytest.raises(ConfigError, match=message) as caught:
        load_mcp_config(path)
    assert str(path) in str(caught.value)


async def test_config_agents_come_first_and_a_disabled_one_is_never_contacted(
    peer: Peer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    async with running_peer("Second Shop", skills=1) as second, running_peer("Off Shop") as off:
        config = {
            "agents": {
                "first": {"card": peer.card_url, "pollEvery": 10},
                "off": {"card": off.card_url, "disabled": True},
                "incomplete": {"timeout": 100},
            }
        }
        async with await create_toolkit(
            mcp_config=config, builtins=False, agents=[second.card_url]
        ) as tk:
            assert [t.name for t in tk.tools()] == [
                "Paint_Shop_paint",
                "Paint_Shop_frame_it",
                "Second_Shop_paint",
            ]
            result = await tk.execute("Paint_Shop_paint", {"task": "from config"})
            assert result.output == "echo: from config\nbytes: 11"
        assert off.seen.headers == []
    assert any('A2A agent "incomplete"' in m and '"card"' in m for m in caplog.messages)
