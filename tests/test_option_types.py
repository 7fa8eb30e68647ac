"""Options of the wrong kind are ``ConfigError`` s: numbers too large for a float (``10**400``)
in options and configs, as ``Infinity`` is (never a bare ``OverflowError``), and headers that are
not a mapping."""

from __future__ import annotations

from typing import Any

import pytest

import toolnexus as tn
from toolnexus import ConfigError

HUGE = 10**400


@pytest.mark.parametrize(
    ("option", "name"),
    [
        ({"timeout_ms": HUGE}, "timeout_ms"),
        ({"timeout_ms": float("inf")}, "timeout_ms"),
        ({"retry_base_ms": HUGE}, "retry_base_ms"),
        ({"max_retry_after_s": HUGE}, "max_retry_after_s"),
    ],
)
def test_client_options_too_large_for_a_float_are_config_errors(
    option: dict[str, Any], name: str
) -> None:
    with pytest.raises(ConfigError, match=name):
        tn.create_client("http://127.0.0.1:9", "openai", model="m", api_key="k", **option)


def test_an_infinite_retry_after_limit_still_means_any() -> None:
    tn.create_client(
        "http://127.0.0.1:9", "openai", model="m", api_key="k", max_retry_after_s=float("inf")
    )


@pytest.mark.parametrize(
    "config",
    [
        {"mcpServers": {"srv": {"command": "unused", "timeout": HUGE}}},
        {"agents": {"helper": {"card": "http://127.0.0.1:9/card", "timeout": HUGE}}},
        {"agents": {"helper": {"card": "http://127.0.0.1:9/card", "pollEvery": HUGE}}},
    ],
    ids=["mcp-timeout", "agent-timeout", "agent-poll"],
)
async def test_config_numbers_too_large_for_a_float_are_config_errors(
    config: dict[str, Any],
) -> None:
    with pytest.raises(ConfigError, match="finite number of milliseconds") as info:
        await tn.create_toolkit(mcp_config=config, builtins=False)
    assert len(str(info.value)) < 300  # the 401-digit number is not printed whole


@pytest.mark.parametrize("option", ["timeout", "poll_every"])
def test_agent_seconds_too_large_for_a_float_are_config_errors(option: str) -> None:
    with pytest.raises(ConfigError, match=f"{option} must be a positive, finite number"):
        tn.agent("http://127.0.0.1:9/card", **{option: HUGE})


@pytest.mark.parametrize("headers", ["X-A: b", [("X-A", "b")], 3])
def test_headers_that_are_not_a_mapping_are_a_config_error_naming_headers(headers: Any) -> None:
    with pytest.raises(ConfigError, match=r"^headers must be a dict"):
        tn.create_client("http://127.0.0.1:9", "openai", model="m", api_key="k", headers=headers)
