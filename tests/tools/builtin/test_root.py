"""The confinement root: file tools resolve against it and refuse anything outside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolnexus import ConfigError, create_toolkit

from .support import call, tree


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path/root`` with a file inside; ``tmp_path/outside`` holds a secret; the working
    folder is ``tmp_path/elsewhere`` (so resolving against it would be visible)."""
    tree(
        tmp_path,
        {
            "root/inside.txt": "inside\n",
            "outside/secret.txt": "secret needle\n",
            "elsewhere/inside.txt": "the wrong file\n",
        },
    )
    (tmp_path / "root/escape").symlink_to(tmp_path / "outside", target_is_directory=True)
    (tmp_path / "root/secret-link.txt").symlink_to(tmp_path / "outside/secret.txt")
    (tmp_path / "root/fresh-link.txt").symlink_to(tmp_path / "outside/fresh.txt")
    monkeypatch.chdir(tmp_path / "elsewhere")
    return tmp_path / "root"


def escapes(root: Path) -> list[str]:
    """Paths that resolve outside ``root``: upward, absolute, and through symlinks."""
    outside = root.parent / "outside"
    return [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        str(outside / "secret.txt"),
        str(root.parent / "elsewhere" / "inside.txt"),
        "escape/secret.txt",
        "secret-link.txt",
        "fresh-link.txt",
        "escape/new.txt",
    ]


def snapshot(base: Path) -> dict[str, bytes]:
    return {str(p.relative_to(base)): p.read_bytes() for p in base.rglob("*") if p.is_file()}


def requests(path: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("read", {"path": path}),
        ("write", {"path": path, "content": "pwned\n"}),
        ("edit", {"path": path, "oldString": "secret", "newString": "pwned"}),
        ("grep", {"pattern": "needle", "path": path}),
        ("glob", {"pattern": "*", "path": path}),
        ("apply_patch", {"patchText": f"*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch"}),
        (
            "apply_patch",
            {
                "patchText": "*** Begin Patch\n*** Update File: inside.txt\n@@\n-inside\n+moved\n"
                f"*** Update File: {path}\n@@\n-secret\n+pwned\n*** End Patch"
            },
        ),
        ("apply_patch", {"patchText": f"*** Begin Patch\n*** Delete File: {path}\n*** End Patch"}),
    ]


async def test_every_file_tool_refuses_paths_outside_the_root_and_writes_nothing(
    root: Path,
) -> None:
    world = root.parent
    before = snapshot(world)
    for path in escapes(root):
        for name, args in requests(path):
            result = await call(name, args, root)
            assert result.is_error, (name, path, result)
            assert result.output.startswith(f"{name}: {path} is outside the root"), result.output
    assert snapshot(world) == before
    assert not (world / "outside/fresh.txt").exists()
    assert not (world / "outside/new.txt").exists()


async def test_relative_paths_resolve_against_the_root_not_the_working_folder(
    root: Path,
) -> None:
    assert (await call("read", {"path": "inside.txt"}, root)).output == "inside\n"
    await call("write", {"path": "made/here.txt", "content": "hi"}, root)
    assert (root / "made/here.txt").read_text() == "hi"
    assert not Path("made").exists()
    await call("edit", {"path": "made/here.txt", "oldString": "hi", "newString": "ho"}, root)
    assert (root / "made/here.txt").read_text() == "ho"
    grep = await call("grep", {"pattern": "inside"}, root)
    assert grep.output == f"{root}/inside.txt:1:inside"
    patch = "*** Begin Patch\n*** Add File: p.txt\n+p\n*** End Patch"
    assert not (await call("apply_patch", {"patchText": patch}, root)).is_error
    assert (root / "p.txt").read_text() == "p\n"


async def test_an_absolute_path_inside_the_root_is_allowed(root: Path) -> None:
    result = await call("read", {"path": str(root / "inside.txt")}, root)
    assert result.output == "inside\n"


async def test_a_symlink_inside_the_root_that_stays_inside_is_followed(root: Path) -> None:
    (root / "alias.txt").symlink_to(root / "inside.txt")
    assert (await call("read", {"path": "alias.txt"}, root)).output == "inside\n"


async def test_searching_the_root_never_shows_what_symlinks_outside_lead_to(root: Path) -> None:
    grep = await call("grep", {"pattern": "needle|secret"}, root)
    assert grep.output == ""
    glob = await call("glob", {"pattern": "*"}, root)
    assert glob.output.split("\n") == ["inside.txt"]


async def test_without_a_root_the_same_paths_are_reachable(root: Path) -> None:
    result = await call("read", {"path": "../outside/secret.txt"})
    assert result.output == "secret needle\n"


async def test_a_toolkit_root_confines_its_file_tools_and_combines_with_tools(
    root: Path,
) -> None:
    async with await create_toolkit(builtins={"root": str(root), "tools": {"write": False}}) as tk:
        names = [t.name for t in tk.tools()]
        assert "write" not in names
        assert "read" in names
        assert (await tk.execute("read", {"path": "inside.txt"})).output == "inside\n"
        refused = await tk.execute("read", {"path": "../outside/secret.txt"})
        assert refused.is_error
        assert "outside" in refused.output


async def test_a_root_that_is_not_a_folder_is_a_config_error(root: Path) -> None:
    with pytest.raises(ConfigError, match=r"builtins\.root"):
        await create_toolkit(builtins={"root": str(root / "inside.txt")})
