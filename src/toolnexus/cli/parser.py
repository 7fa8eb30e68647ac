"""The ``toolnexus`` argument parser (argparse): ``run``, ``tools`` and ``serve``.

No parser takes abbreviations: ``--token`` is never read as ``--tokens`` (or any other flag).
"""

from __future__ import annotations

import argparse

__all__ = ["build_parser"]

DEFAULT_DB = "~/.toolnexus/conversations.db"
DEFAULT_ADDR = "127.0.0.1:8765"


def build_parser() -> argparse.ArgumentParser:
    """The parser; each command's namespace carries ``command`` and its own flags."""
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="toolnexus",
        allow_abbrev=False,
        description="Run an agent over MCP servers, skills and built-in tools, or serve them.",
    )
    parser.add_argument("--version", action="version", version=f"toolnexus {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    shared = _shared_flags()
    _run_parser(commands, shared)
    tools = commands.add_parser(
        "tools",
        allow_abbrev=False,
        parents=[shared],
        help="list the tools the model would see (no model needed)",
        description="List the tools the model would see, with each MCP server's status.",
    )
    tools.add_argument("--json", action="store_true", help="print a JSON list instead")
    tools.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when a configured MCP server failed (default: say so on stderr, exit 0)",
    )
    _serve_parser(commands, shared)
    return parser


def _shared_flags() -> argparse.ArgumentParser:
    shared = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    group = shared.add_argument_group("tool sources")
    group.add_argument("--config", metavar="PATH", help="MCP config file (mcp.json)")
    group.add_argument(
        "--skills",
        metavar="DIR",
        action="append",
        default=[],
        help="folder of SKILL.md skills (repeatable)",
    )
    group.add_argument("--no-builtins", action="store_true", help="leave out the built-in tools")
    group.add_argument(
        "--tokens",
        metavar="FILE",
        help="keep the OAuth tokens of MCP servers in FILE, so the next command signs in "
        "without asking (default: in memory, for this command only)",
    )
    return shared


def _run_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], shared: argparse.ArgumentParser
) -> None:
    run = commands.add_parser(
        "run",
        allow_abbrev=False,
        parents=[shared],
        help="chat with a model that can use the tools (REPL, or --once PROMPT)",
        description=(
            "Chat with a model that can use the tools. The answer streams to stdout; tool "
            "activity goes to stderr. Flags win over environment variables."
        ),
    )
    run.add_argument("--base-url", help="API root of the endpoint (env TOOLNEXUS_BASE_URL)")
    run.add_argument("--model", help="model name (env TOOLNEXUS_MODEL)")
    run.add_argument(
        "--style",
        choices=("openai", "anthropic", "responses", "gemini"),
        help="wire format: openai, anthropic, responses or gemini "
        "(env TOOLNEXUS_STYLE, default openai)",
    )
    run.add_argument("--system", metavar="TEXT", help="system prompt")
    run.add_argument(
        "--api-key",
        help="API key (else OPENAI_API_KEY, ANTHROPIC_API_KEY, OPENROUTER_API_KEY, "
        "GEMINI_API_KEY or GOOGLE_API_KEY, by style)",
    )
    run.add_argument(
        "--max-turns", type=int, metavar="N", help="model calls per prompt (default 10)"
    )
    run.add_argument("--once", metavar="PROMPT", help="run one prompt and exit")
    run.add_argument("--id", metavar="ID", help="conversation id kept in the SQLite store")
    run.add_argument(
        "--db",
        metavar="PATH",
        help=f"SQLite store for --id (env TOOLNEXUS_DB, default {DEFAULT_DB})",
    )
    run.add_argument(
        "--yes",
        action="store_true",
        help="let the built-ins that change things (bash, write, edit, apply_patch) run "
        "without asking (env TOOLNEXUS_YES=1); without a terminal they are refused otherwise",
    )
    reply = run.add_mutually_exclusive_group()
    reply.add_argument(
        "--answer",
        metavar="TEXT",
        help="answer the request the conversation --id waits for, and continue its run",
    )
    reply.add_argument(
        "--decline",
        metavar="REASON",
        nargs="?",
        const="",
        help="decline the request the conversation --id waits for (the model sees REASON)",
    )


def _serve_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], shared: argparse.ArgumentParser
) -> None:
    serve = commands.add_parser(
        "serve",
        allow_abbrev=False,
        parents=[shared],
        help="serve the tools to other programs (--mcp) or serve an agent (--a2a)",
        description=(
            "Serve the tools as an MCP server (--mcp), and/or an agent that runs a model "
            "with them as an A2A server (--a2a), until SIGINT or SIGTERM."
        ),
    )
    serve.add_argument("--mcp", action="store_true", help="serve the tools over MCP")
    serve.add_argument("--stdio", action="store_true", help="speak MCP on stdin/stdout")
    serve.add_argument(
        "--addr",
        default=DEFAULT_ADDR,
        metavar="HOST:PORT",
        help=f"listen address (default {DEFAULT_ADDR})",
    )
    serve.add_argument(
        "--name", help="name announced to clients (default toolnexus / toolnexus-agent)"
    )
    serve.add_argument(
        "--tool", action="append", metavar="NAME", help="expose only this tool (repeatable)"
    )
    safety = serve.add_argument_group("who may connect, and what is served")
    safety.add_argument(
        "--token",
        action="append",
        metavar="TOKEN",
        help="require Authorization: Bearer TOKEN on every route but the agent card "
        "(repeatable; env TOOLNEXUS_SERVE_TOKEN)",
    )
    safety.add_argument(
        "--insecure",
        action="store_true",
        help="serve without a token on an address that is not loopback (warns)",
    )
    safety.add_argument(
        "--builtins",
        action="store_true",
        help="also serve the built-in tools (bash, read, write, ...); off by default",
    )
    safety.add_argument(
        "--allow-host",
        action="append",
        metavar="HOST[:PORT]",
        help="also answer requests whose Host is this name (repeatable; for a proxy or DNS name)",
    )
    agent = serve.add_argument_group("agent (--a2a, --ui)")
    agent.add_argument(
        "--a2a", action="store_true", help="serve an agent over A2A (card and JSON-RPC at /)"
    )
    agent.add_argument(
        "--ui",
        action="store_true",
        help="serve a chat page at / (and AG-UI at /agui, the AI SDK stream at /api/chat)",
    )
    agent.add_argument("--base-url", help="API root of the model (env TOOLNEXUS_BASE_URL)")
    agent.add_argument("--model", help="model name (env TOOLNEXUS_MODEL)")
    agent.add_argument(
        "--style",
        choices=("openai", "anthropic", "responses", "gemini"),
        help="wire format: openai, anthropic, responses or gemini "
        "(env TOOLNEXUS_STYLE, default openai)",
    )
    agent.add_argument("--api-key", help="API key (else the provider's environment variable)")
    agent.add_argument("--system", metavar="TEXT", help="system prompt")
    agent.add_argument("--description", help="the agent card's description")
    agent.add_argument(
        "--db", metavar="PATH", help="SQLite conversation store (default: in memory)"
    )
    agent.add_argument("--tasks", metavar="DIR", help="keep tasks as JSON files in DIR")
