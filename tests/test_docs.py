"""Every code block in ``docs/`` and the README runs, so the documentation cannot go stale.

How each block is checked:

- ``python``: the blocks of one page run in order in one namespace (a later block may use the
  names an earlier one defined), in a scratch working folder, on one event loop per page;
  top-level ``await`` is allowed (compiled with ``ast.PyCF_ALLOW_TOP_LEVEL_AWAIT``).
- ``bash``/``sh``: each command runs in a shell from the repository root, with this
  environment's interpreter and ``toolnexus`` command first on ``PATH``.
- ``json``/``yaml``: parsed.

Where a block needs a model, a ``toolnexus.testing.StubLLMServer`` (one per page) stands in
for it: the provider base URLs written in the block (``https://api.openai.com/v1``,
``https://api.anthropic.com``, ``http://localhost:11434/v1``, ...) are replaced in the block's
text by the stub's URL before it runs, and dummy API keys (``OPENAI_API_KEY``,
``ANTHROPIC_API_KEY``, ...) are set in the environment. The page shows the real URLs; the test
runs the same code against the stub.

An HTML comment right before a block steers it (``docs/contributing.md`` describes it):

- ``<!-- docs-test: stub [...] -->`` the replies the stub plays for this block, in order: a
  string is a text answer, ``{"calls": [["name", {args}], ...]}`` a turn of tool calls. Every
  scripted reply must be used by the block.
- ``<!-- docs-test: setup ... -->`` Python lines run (unseen by the reader) before the block,
  in the page's namespace: the placeholders a snippet assumes, such as ``email`` or ``fetch``.
- ``<!-- docs-test: teardown ... -->`` Python lines run after the block (undoing what it did to
  the process, such as a global registration).
- ``<!-- docs-test: replace OLD => NEW -->`` the block runs with ``OLD`` replaced by ``NEW`` (a
  fixed port by ``0``, a remote document by a local file); ``$name`` in ``NEW`` is the value a
  setup gave ``name`` (such as the URL of a server it started).
- ``<!-- docs-test: subprocess REASON -->`` the block (after its setup) runs in a fresh
  interpreter, for code that changes process-wide state (a global tracer provider, DBOS).
- ``<!-- docs-test: until TEXT -->`` a shell command that serves until interrupted: started,
  stopped (SIGTERM) once ``TEXT`` appears on its stderr, and expected to exit with 0.
- ``<!-- docs-test: skip REASON -->`` the block is not run; the reason is required.
- ``<!-- docs-test: raises NAME -->`` the block must raise the exception class ``NAME``.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import importlib
import inspect
import json
import os
import queue
import re
import signal
import string
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

import toolnexus
from toolnexus.testing import StubLLMServer, reply

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]

# The provider URLs the pages use, longest first, each with the path the stub is reached at.
PROVIDER_URLS = {
    "https://generativelanguage.googleapis.com/v1beta": "/v1beta",
    "https://api.openai.com/v1": "/v1",
    "https://api.anthropic.com": "",
    "http://localhost:11434/v1": "/v1",
}
DUMMY_ENV = {
    "OPENAI_API_KEY": "docs-test-key",
    "ANTHROPIC_API_KEY": "docs-test-key",
    "GEMINI_API_KEY": "docs-test-key",
    "OPENROUTER_API_KEY": "docs-test-key",
}
RUNNABLE = {"python", "bash", "sh", "json", "yaml"}
FENCE = re.compile(
    r"^(?P<indent> *)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```\s*$", re.M | re.S
)
KINDS = {"skip", "raises", "setup", "teardown", "replace", "subprocess", "until", "stub"}
MARKER = re.compile(r"<!--\s*docs-test:\s*(?P<kind>[\w-]+)\s*(?P<rest>.*?)-->", re.S)


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    code: str
    skip: str | None = None
    raises: str | None = None
    setup: list[str] = field(default_factory=list)
    teardown: list[str] = field(default_factory=list)
    replace: list[tuple[str, str]] = field(default_factory=list)
    fresh: str | None = None
    until: str | None = None
    stub: list[Any] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    """The fenced code blocks of ``page`` with the markers in the comments right before each."""
    text = page.read_text(encoding="utf-8")
    found: list[Block] = []
    for match in FENCE.finditer(text):
        indent = match.group("indent")
        body = match.group("body")
        code = "".join(
            line[len(indent) :] if line.startswith(indent) else line
            for line in body.splitlines(keepends=True)
        )
        block = Block(
            page, text.count("\n", 0, match.start()) + 1, match.group("lang") or "text", code
        )
        before = text[: match.start()].rstrip()
        while before.endswith("-->"):
            start = before.rfind("<!--")
            marker = MARKER.fullmatch(before[start:])
            if marker is None:
                break
            _apply(block, marker.group("kind"), marker.group("rest").strip())
            before = before[:start].rstrip()
        found.append(block)
    return found


def _apply(block: Block, kind: str, rest: str) -> None:
    if kind == "skip":
        assert rest, f"{block.where}: a skip marker needs a reason"
        block.skip = rest
    elif kind == "raises":
        block.raises = rest
    elif kind == "setup":
        block.setup.insert(0, rest)
    elif kind == "teardown":
        block.teardown.insert(0, rest)
    elif kind == "replace":
        old, sep, new = rest.partition(" => ")
        assert sep, f"{block.where}: a replace marker reads OLD => NEW, not {rest!r}"
        assert old in block.code, f"{block.where}: {old!r} is not in the block"
        block.replace.append((old, new))
    elif kind == "subprocess":
        assert rest, f"{block.where}: a subprocess marker needs a reason"
        block.fresh = rest
    elif kind == "until":
        assert rest, f"{block.where}: an until marker names the line that says it is ready"
        block.until = rest
    elif kind == "stub":
        block.stub = json.loads(rest) + block.stub
    else:
        raise AssertionError(
            f"{block.where}: unknown docs-test marker {kind!r}"
        )  # pragma: no cover


def _replies(specs: list[Any]) -> list[reply.Reply]:
    built = []
    for spec in specs:
        if isinstance(spec, str):
            built.append(reply.text(spec))
        else:
            calls = [reply.call(name, args) for name, args in spec["calls"]]
            built.append(reply.tool_calls(*calls, text=spec.get("text")))
    return built


def _with_stub(code: str, stub: StubLLMServer) -> str:
    for url, path in PROVIDER_URLS.items():
        code = code.replace(url, stub.url + path)
    return code


@contextlib.contextmanager
def _page_environment(tmp: Path, stub: StubLLMServer) -> Iterator[None]:
    saved_env = dict(os.environ)
    saved_cwd = Path.cwd()
    saved_path = list(sys.path)
    os.environ.update(DUMMY_ENV)
    os.environ["TOOLNEXUS_DOCS_STUB_URL"] = stub.url
    os.chdir(tmp)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.path[:] = saved_path


def _run_python(
    code: str, name: str, namespace: dict[str, Any], loop: asyncio.AbstractEventLoop
) -> None:
    compiled = compile(code, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    if compiled.co_flags & inspect.CO_COROUTINE:

        async def run() -> None:
            async with asyncio.timeout(30):
                await eval(compiled, namespace)

        loop.run_until_complete(run())
    else:
        exec(compiled, namespace)


def _run_shell(block: Block, stub: StubLLMServer) -> None:
    env = {**os.environ, **DUMMY_ENV}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    code = _with_stub(_replaced(block, {}), stub)
    if block.until is not None:
        commands = [line for line in code.splitlines() if line.strip() and line[0] != "#"]
        assert len(commands) == 1, f"{block.where}: an until block is one command"
        # exec: the command itself gets the SIGTERM, not a shell waiting for it
        _run_server(["bash", "-c", f"exec env {commands[0]}"], env, block.until)
        return
    argv = ["bash", "-euo", "pipefail", "-c", code]
    done = subprocess.run(
        argv,
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"


def _remember(namespace: dict[str, Any], opened: list[Any]) -> None:
    for value in namespace.values():
        if isinstance(value, toolnexus.Client | toolnexus.Toolkit) and all(
            value is not seen for seen in opened
        ):
            opened.append(value)


async def _close_all(opened: list[Any]) -> None:
    """Close what a page left open (clients, toolkits), as a program would on exit."""
    for value in opened:
        close = getattr(value, "aclose", None) or value.close
        result = close()
        if inspect.isawaitable(result):
            await result


def run_page(page: Path, tmp: Path) -> list[str]:
    """Run every block of ``page``; returns what was skipped, with the reasons."""
    skipped: list[str] = []
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    opened: list[Any] = []
    loop = asyncio.new_event_loop()
    with StubLLMServer() as stub, _page_environment(tmp, stub):
        try:
            for block in blocks_of(page):
                if block.skip is not None:
                    skipped.append(f"{block.where} ({block.lang}): {block.skip}")
                    continue
                if block.lang not in RUNNABLE:
                    continue
                stub.enqueue(*_replies(block.stub))
                try:
                    _run_block(block, stub, namespace, loop, opened)
                    _remember(namespace, opened)
                except BaseException as exc:
                    if block.raises and type(exc).__name__ == block.raises:
                        continue
                    raise AssertionError(f"{block.where} ({block.lang}) failed: {exc!r}") from exc
                assert block.raises is None, f"{block.where}: expected {block.raises}"
                with contextlib.suppress(AssertionError):
                    stub.assert_consumed()
                    continue
                pytest.fail(f"{block.where}: the stub replies scripted for it were not all used")
        finally:
            _remember(namespace, opened)
            loop.run_until_complete(_close_all(opened))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
    return skipped


def _run_block(
    block: Block,
    stub: StubLLMServer,
    namespace: dict[str, Any],
    loop: asyncio.AbstractEventLoop,
    opened: list[Any],
) -> None:
    if block.lang == "json":
        json.loads(block.code)
    elif block.lang == "yaml":
        yaml.safe_load(block.code)
    elif block.lang in ("bash", "sh"):
        _run_shell(block, stub)
    else:
        if block.fresh is not None:
            _run_fresh(block, _replaced(block, {}), stub)
            return
        for setup in block.setup:
            _run_python(_with_stub(setup, stub), f"{block.where} (setup)", namespace, loop)
            _remember(namespace, opened)
        code = _replaced(block, namespace)
        _run_python(_with_stub(code, stub), block.where, namespace, loop)
        for teardown in block.teardown:
            _run_python(teardown, f"{block.where} (teardown)", namespace, loop)


def _replaced(block: Block, namespace: dict[str, Any]) -> str:
    """The block's code after its ``replace`` markers (``$name`` in NEW: a setup's value)."""
    code = block.code
    for old, new in block.replace:
        values = {k: str(v) for k, v in namespace.items() if isinstance(v, str | int)}
        code = code.replace(old, string.Template(new).safe_substitute(values))
    return code


def _run_server(argv: list[str], env: dict[str, str], ready: str) -> None:
    """Start a command that serves until interrupted, wait for ``ready`` on its stderr, then
    stop it (SIGTERM to its process group, as a service manager would) and expect exit 0."""
    proc = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    seen: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)
        lines.put("")

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 30
        while not any(ready in line for line in seen):
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            assert line, f"exited {proc.wait()} before printing {ready!r}:\n{''.join(seen)}"
            seen.append(line)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        code = proc.wait(timeout=30)
        reader.join(timeout=30)
        assert proc.stderr is not None
        proc.stderr.close()
    assert code == 0, f"exit {code} after SIGTERM:\n{''.join(seen)}"


def _run_fresh(block: Block, code: str, stub: StubLLMServer) -> None:
    """Run ``block`` with its setup in a new interpreter (top-level ``await`` allowed)."""
    source = "\n".join([*block.setup, code])
    runner = (
        "import ast, asyncio, inspect, sys\n"
        "flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT\n"
        "code = compile(sys.stdin.read(), sys.argv[1], 'exec', flags=flags)\n"
        "ns = {'__name__': '__docs__'}\n"
        "if code.co_flags & inspect.CO_COROUTINE:\n"
        "    asyncio.run(eval(code, ns))\n"
        "else:\n"
        "    exec(code, ns)\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", runner, block.where], input=_with_stub(source, stub),
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_code_block_of_the_page_runs(page: Path, tmp_path: Path) -> None:
    skipped = run_page(page, tmp_path)
    for line in skipped:
        print("skipped", line)


def test_every_block_has_a_language_and_every_language_is_checked() -> None:
    unchecked = [
        f"{b.where} ({b.lang})"
        for page in PAGES
        for b in blocks_of(page)
        if b.lang not in RUNNABLE and b.skip is None
    ]
    assert unchecked == []


def test_few_blocks_are_skipped() -> None:
    skipped = [b for page in PAGES for b in blocks_of(page) if b.skip is not None]
    total = sum(len(blocks_of(page)) for page in PAGES)
    assert len(skipped) <= total // 4, [f"{b.where}: {b.skip}" for b in skipped]


def test_the_readme_keeps_its_two_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    venv = "python3 -m venv .venv && . .venv/bin/activate && "
    assert f"{venv}pip install -e . && python examples/quickstart.py" in readme
    assert f'{venv}pip install -e ".[dev]" && python -m pytest' in readme


def test_the_api_reference_covers_every_public_name() -> None:
    reference = (DOCS / "reference" / "toolnexus.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^::: toolnexus\.(\w+)$", reference, re.M))
    assert sorted(set(toolnexus.__all__) - listed) == []
    assert sorted(listed - set(toolnexus.__all__)) == []


def test_the_markers_are_understood() -> None:
    bad = ("<!-- docs-test:", "<!--docs-test:")
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in MARKER.finditer(text):
            assert match.group("kind") in KINDS, match.group(0)
        assert sum(text.count(b) for b in bad) == len(MARKER.findall(text)), page


def test_the_readme_links_to_pages_that_exist() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert "docs/images/chat.png" in local
    assert {"docs/index.md", "docs/tools.md", "docs/client.md", "docs/glossary.md"} <= set(local)
    assert [t for t in local if not (ROOT / t).exists()] == []


@pytest.mark.parametrize(
    "module",
    [
        "toolnexus.testing",
        "toolnexus.agents",
        "toolnexus.stores",
        "toolnexus.serve",
        "toolnexus.ui",
        "toolnexus.durable",
        "toolnexus.otel",
        "toolnexus.prometheus",
    ],
)
def test_the_api_reference_covers_every_public_submodule(module: str) -> None:
    reference = "\n".join(p.read_text(encoding="utf-8") for p in (DOCS / "reference").glob("*.md"))
    documented = set(re.findall(rf"^::: {re.escape(module)}(?:\.\w+)*\.(\w+)$", reference, re.M))
    public = importlib.import_module(module).__all__
    assert f"::: {module}\n" in reference
    assert sorted(set(public) - documented) == []
