"""Parsing ``mcp.json``: wrappers, reserved keys, entry keys and configuration errors."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from toolnexus import create_toolkit
from toolnexus.errors import ConfigError
from toolnexus.testing import mcp_server_command
from toolnexus.tools.mcp import load_mcp_config
from toolnexus.tools.mcp.config import DEFAULT_TIMEOUT_MS


@pytest.mark.parametrize("wrapper", ["mcpServers", "servers", "mcp"])
def test_each_wrapper_key_holds_the_server_map(wrapper: str) -> None:
    config = load_mcp_config({wrapper: {"a": {"command": ["x"]}, "b": {"url": "http://h/mcp"}}})
    assert [s.name for s in config.servers] == ["a", "b"]


def test_the_first_present_wrapper_wins() -> None:
    config = load_mcp_config({"mcp": {"late": {"command": "x"}}, "mcpServers": {"early": {}}})
    assert [s.name for s in config.servers] == ["early"]


def test_a_bare_map_skips_the_reserved_sibling_sections() -> None:
    config = load_mcp_config(
        {
            "git": {"command": ["git-mcp"]},
            "builtins": False,
            "agents": {"x": {}},
            "a2a": {"y": {}},
            "mcpServer": {"port": 1},
        }
    )
    assert [s.name for s in config.servers] == ["git"]
    assert config.builtins is False


def test_builtins_is_none_when_absent_and_kept_when_an_object() -> None:
    assert load_mcp_config({"servers": {}}).builtins is None
    config = load_mcp_config({"servers": {}, "builtins": {"tools": {"bash": False}}})
    assert config.builtins == {"tools": {"bash": False}}


def test_type_is_inferred_from_url_then_command() -> None:
    servers = load_mcp_config(
        {
            "both": {"url": "http://h/mcp", "command": ["x"]},
            "local": {"command": ["x"]},
            "none": {"env": {"A": "1"}},
        }
    ).servers
    assert [(s.type, s.problem) for s in servers] == [
        ("remote", None),
        ("local", None),
        (None, "neither url nor command"),
    ]


def test_an_explicit_type_without_its_endpoint_is_a_problem_not_an_error() -> None:
    remote, local = load_mcp_config(
        {"r": {"type": "remote", "command": ["x"]}, "l": {"type": "local", "url": "http://h"}}
    ).servers
    assert remote.problem == 'type "remote" needs a "url"'
    assert local.problem == 'type "local" needs a "command"'


def test_command_as_a_string_takes_its_arguments_from_args() -> None:
    (server,) = load_mcp_config({"s": {"command": "npx", "args": ["-y", "pkg"]}}).servers
    assert server.command == ["npx", "-y", "pkg"]


def test_command_as_a_list_is_the_whole_argv() -> None:
    (server,) = load_mcp_config({"s": {"command": [sys.executable, "-m", "srv"]}}).servers
    assert server.command == [sys.executable, "-m", "srv"]


def test_env_and_environment_are_both_accepted_and_environment_wins() -> None:
    (a, b) = load_mcp_config(
        {
            "a": {"command": "x", "env": {"A": "1", "N": 2, "T": True}},
            "b": {"command": "x", "env": {"K": "env"}, "environment": {"K": "environment"}},
        }
    ).servers
    assert a.env == {"A": "1", "N": "2", "T": "true"}
    assert b.env == {"K": "environment"}


def test_disabled_true_or_enabled_false_turns_a_server_off() -> None:
    servers = load_mcp_config(
        {
            "on": {"command": "x"},
            "disabled": {"command": "x", "disabled": True},
            "not-enabled": {"command": "x", "enabled": False},
            "disabled-wins": {"command": "x", "disabled": True, "enabled": True},
            "explicitly-on": {"command": "x", "disabled": False, "enabled": True},
        }
    ).servers
    assert [s.enabled for s in servers] == [True, False, False, False, True]


def test_timeout_defaults_to_thirty_seconds_and_is_read_in_milliseconds() -> None:
    default, short = load_mcp_config(
        {"d": {"command": "x"}, "s": {"command": "x", "timeout": 500}}
    ).servers
    assert default.timeout_ms == DEFAULT_TIMEOUT_MS == 30_000
    assert short.timeout_ms == 500


def test_headers_are_kept_raw_for_expansion_at_connect_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MCP_CONFIG_TOKEN", "expanded")
    (server,) = load_mcp_config(
        {"s": {"url": "http://h", "headers": {"Authorization": "Bearer ${MCP_CONFIG_TOKEN}"}}}
    ).servers
    assert server.headers == {"Authorization": "Bearer ${MCP_CONFIG_TOKEN}"}


def test_cwd_and_tools_filter_are_read() -> None:
    (server,) = load_mcp_config(
        {"s": {"command": "x", "cwd": "/tmp", "tools": {"echo": True, "add": False}}}
    ).servers
    assert server.cwd == "/tmp"
    assert server.tools == {"echo": True, "add": False}


def test_a_config_file_is_read_from_disk(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"git": {"command": ["git-mcp"]}}}))
    assert [s.name for s in load_mcp_config(path).servers] == ["git"]
    assert [s.name for s in load_mcp_config(str(path)).servers] == ["git"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "mcp.json: not valid JSON"),
        ("[1, 2]", "mcp.json: the top level must be a JSON object"),
        ('{"mcpServers": {"git": 3}}', 'mcp.json: server "git": the entry must be an object'),
        (
            '{"mcpServers": {"git": {"command": 3}}}',
            'mcp.json: server "git": "command" must be a list of strings or a string',
        ),
        (
            '{"mcpServers": {"git": {"command": ["a", 1]}}}',
            'mcp.json: server "git": "command" must be a list of strings or a string',
        ),
        (
            '{"mcpServers": {"git": {"command": "a", "timeout": "fast"}}}',
            'mcp.json: server "git": "timeout" must be a number of milliseconds',
        ),
        (
            '{"mcpServers": {"git": {"command": "a", "env": ["A=1"]}}}',
            'mcp.json: server "git": "env" must be an object of string values',
        ),
        (
            '{"mcpServers": {"git": {"command": "a", "tools": {"echo": "yes"}}}}',
            'mcp.json: server "git": "tools" must map tool names to true or false',
        ),
        (
            '{"mcpServers": {"git": {"command": "a", "type": "carrier-pigeon"}}}',
            'mcp.json: server "git": "type" must be "local" or "remote"',
        ),
        ('{"mcpServers": [1]}', 'mcp.json: "mcpServers" must be an object'),
        ('{"servers": {}, "builtins": "yes"}', 'mcp.json: "builtins" must be true, false'),
    ],
)
def test_a_malformed_file_raises_config_error_naming_file_server_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, message: str
) -> None:
    (tmp_path / "mcp.json").write_text(content)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        load_mcp_config("mcp.json")
    assert str(info.value).startswith(message)
    assert isinstance(info.value, ValueError)


def test_a_missing_file_raises_config_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(ConfigError, match=r"nope\.json: file not found"):
        load_mcp_config(missing)


def test_a_malformed_dict_raises_config_error_naming_server_and_key() -> None:
    with pytest.raises(ConfigError, match=r'server "git": "command" must be a list'):
        load_mcp_config({"mcpServers": {"git": {"command": {"x": 1}}}})


def test_inherit_env_progress_reset_and_oauth_are_read() -> None:
    config = load_mcp_config(
        {
            "mcpServers": {
                "a": {
                    "url": "http://127.0.0.1:1/mcp",
                    "inheritEnv": True,
                    "resetTimeoutOnProgress": True,
                    "oauth": {
                        "clientId": "cid",
                        "scope": "read write",
                        "grant": "client_credentials",
                    },
                },
                "b": {"url": "http://127.0.0.1:1/mcp", "oauth": True},
                "c": {"url": "http://127.0.0.1:1/mcp", "oauth": False},
                "d": {"command": "x"},
            }
        }
    )
    a, b, c, d = config.servers
    assert a.inherit_env
    assert a.reset_timeout_on_progress
    assert a.oauth is not None
    assert (a.oauth.client_id, a.oauth.scope) == ("cid", "read write")
    assert a.oauth.grant == "client_credentials"
    assert b.oauth is not None
    assert b.oauth.client_id is None
    assert c.oauth is None
    assert d.oauth is None
    assert not d.inherit_env
    assert not d.reset_timeout_on_progress


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"command": "x", "inheritEnv": "yes"}, '"inheritEnv" must be true or false'),
        ({"url": "http://x", "oauth": 3}, '"oauth" must be true, false or an object'),
        ({"url": "http://x", "oauth": {"clientID": "a"}}, '"oauth" has an unknown key "clientID"'),
        ({"url": "http://x", "oauth": {"grant": "client_credentials"}}, 'needs a "clientId"'),
        ({"url": "http://x", "oauth": {"grant": "device"}}, '"grant" must be one of'),
        (
            {"url": "http://x", "oauth": {"grant": "identity_assertion", "clientId": "a"}},
            "identity_assertion grant needs clientSecret, issuer, idpTokenEndpoint, "
            "idpClientId, idToken",
        ),
    ],
)
def test_bad_new_keys_name_the_server_and_key(entry: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        load_mcp_config({"mcpServers": {"s": entry}})
    assert 'server "s"' in str(caught.value)


def test_the_identity_assertion_grant_reads_the_identity_provider_settings() -> None:
    entry = {
        "url": "http://127.0.0.1:1/mcp",
        "oauth": {
            "grant": "identity_assertion",
            "clientId": "app",
            "clientSecret": "${APP_SECRET}",
            "issuer": "https://auth.example.com",
            "idpTokenEndpoint": "https://idp.example.com/token",
            "idpClientId": "idp-app",
            "idToken": "${ID_TOKEN}",
        },
    }
    (server,) = load_mcp_config({"mcpServers": {"s": entry}}).servers
    oauth = server.oauth
    assert oauth is not None
    assert oauth.grant == "identity_assertion"
    assert (oauth.issuer, oauth.idp_token_endpoint, oauth.idp_client_id) == (
        "https://auth.example.com",
        "https://idp.example.com/token",
        "idp-app",
    )
    assert (oauth.client_secret, oauth.id_token) == ("${APP_SECRET}", "${ID_TOKEN}")


def test_relative_paths_resolve_against_the_file_folder_and_bare_names_do_not(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        '{"mcpServers": {"rel": {"command": "./bin/s", "args": ["./arg"], "cwd": "w"},'
        ' "bare": {"command": "npx", "cwd": "/abs"}}}'
    )
    rel, bare = load_mcp_config(path).servers
    assert rel.command == [str(tmp_path / "bin" / "s"), "./arg"]
    assert rel.cwd == str(tmp_path / "w")
    assert (bare.command, bare.cwd) == (["npx"], "/abs")


def test_a_dict_config_resolves_relative_paths_against_the_process_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = {
        "mcpServers": {"rel": {"command": "./bin/s", "cwd": "work"}, "bare": {"command": "npx"}}
    }
    rel, bare = load_mcp_config(config).servers
    assert rel.command == [str(tmp_path / "bin" / "s")]
    assert rel.cwd == str(tmp_path / "work")
    assert bare.command == ["npx"]


async def test_a_dict_configs_relative_command_starts_from_the_process_directory_not_its_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program, *args = mcp_server_command()
    launcher = tmp_path / "launch.sh"
    launcher.write_text(
        "#!/bin/sh\nexec " + " ".join(shlex.quote(a) for a in [program, *args]) + "\n"
    )
    launcher.chmod(0o755)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    config = {"mcpServers": {"fx": {"command": "./launch.sh", "cwd": "elsewhere"}}}

    async with await create_toolkit(mcp_config=config, builtins=False) as tk:
        assert tk.mcp_status() == {"fx": "connected"}
        assert (await tk.execute("fx_echo", {"text": "hi"})).output == "hi"
