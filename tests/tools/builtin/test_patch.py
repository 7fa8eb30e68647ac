"""``apply_patch``: adds, updates and deletes, all or nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolnexus import ToolResult

from .support import call, tree


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    tree(
        tmp_path,
        {
            "a.txt": "one\ntwo\nthree\n",
            "b.txt": "alpha\r\nbeta\r\ngamma\r\n",
            "old.txt": "to be removed\n",
            "keep.bin": b"\x00\xffraw",
        },
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def snapshot(base: Path) -> dict[str, bytes]:
    """Every file below ``base`` with its exact bytes."""
    return {
        str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()
    }


def patch(*lines: str) -> dict[str, str]:
    return {"patchText": "\n".join(["*** Begin Patch", *lines, "*** End Patch"])}


async def test_a_patch_adds_updates_and_deletes_files(project: Path) -> None:
    result = await call(
        "apply_patch",
        patch(
            "*** Add File: new/dir/c.txt",
            "+first",
            "+",
            "+last",
            "*** Update File: a.txt",
            "@@",
            " one",
            "-two",
            "+TWO",
            "+2",
            " three",
            "*** Delete File: old.txt",
        ),
    )
    assert result == ToolResult(
        "Applied patch: 3 file operations",
        metadata={"added": ["new/dir/c.txt"], "updated": ["a.txt"], "deleted": ["old.txt"]},
    )
    assert (project / "new/dir/c.txt").read_bytes() == b"first\n\nlast\n"
    assert (project / "a.txt").read_bytes() == b"one\nTWO\n2\nthree\n"
    assert not (project / "old.txt").exists()


async def test_hunks_apply_in_order_each_replacing_the_first_occurrence(project: Path) -> None:
    (project / "rep.txt").write_text("x = 1\ny = 2\nx = 1\n")
    result = await call(
        "apply_patch",
        patch(
            "*** Update File: rep.txt",
            "@@ first x",
            "-x = 1",
            "+x = 10",
            "@@ then y",
            "-y = 2",
            "+y = 20",
            "@@ then the next x",
            " y = 20",
            "-x = 1",
            "+x = 100",
        ),
    )
    assert result.output == "Applied patch: 1 file operation"
    assert (project / "rep.txt").read_text() == "x = 10\ny = 20\nx = 100\n"


async def test_an_update_keeps_the_files_other_bytes(project: Path) -> None:
    await call("apply_patch", patch("*** Update File: b.txt", "@@", "-beta\r", "+BETA\r"))
    assert (project / "b.txt").read_bytes() == b"alpha\r\nBETA\r\ngamma\r\n"


async def test_a_context_line_that_lost_its_space_still_matches(project: Path) -> None:
    (project / "gap.txt").write_text("a\n\nb\n")
    result = await call("apply_patch", patch("*** Update File: gap.txt", "@@", " a", "", "-b"))
    assert not result.is_error
    assert (project / "gap.txt").read_text() == "a\n\n"


async def test_a_non_matching_hunk_leaves_every_file_byte_identical(project: Path) -> None:
    before = snapshot(project)
    result = await call(
        "apply_patch",
        patch(
            "*** Add File: added.txt",
            "+new",
            "*** Update File: a.txt",
            "@@",
            "-two",
            "+2",
            "*** Delete File: old.txt",
            "*** Update File: b.txt",
            "@@",
            "-not in the file",
            "+x",
        ),
    )
    assert result == ToolResult("apply_patch: hunk 1 of b.txt does not match the file", True)
    assert snapshot(project) == before


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (
            ["*** Update File: a.txt", "@@", "-two", "+2", "*** Add File: b.txt", "+x"],
            "apply_patch: cannot add b.txt: it already exists",
        ),
        (
            ["*** Update File: a.txt", "@@", "-two", "+2", "*** Delete File: nope.txt"],
            "apply_patch: cannot delete nope.txt: no such file",
        ),
        (
            ["*** Delete File: old.txt", "*** Update File: nope.txt", "@@", "-a", "+b"],
            "apply_patch: cannot update nope.txt: no such file",
        ),
        (
            ["*** Delete File: old.txt", "*** Update File: old.txt", "@@", "-to", "+from"],
            "apply_patch: cannot update old.txt: no such file",
        ),
        (
            ["*** Delete File: old.txt", "*** Update File: keep.bin", "@@", "-raw", "+cooked"],
            "apply_patch: not UTF-8 text: keep.bin",
        ),
        (
            ["*** Update File: a.txt", "@@", "-two", "+2", "*** Update File: a.txt", "@@", "-two"],
            "apply_patch: hunk 1 of a.txt does not match the file",
        ),
        (
            ["*** Add File: c.txt", "+x", "*** Add File: c.txt", "+y"],
            "apply_patch: cannot add c.txt: it already exists",
        ),
    ],
)
async def test_a_failing_second_operation_leaves_every_file_byte_identical(
    project: Path, lines: list[str], message: str
) -> None:
    before = snapshot(project)
    assert await call("apply_patch", patch(*lines)) == ToolResult(message, is_error=True)
    assert snapshot(project) == before


async def test_a_failure_while_writing_undoes_what_was_staged(project: Path) -> None:
    (project / "plain").write_text("a file, not a folder\n")
    before = snapshot(project)
    result = await call(
        "apply_patch",
        patch(
            "*** Update File: a.txt",
            "@@",
            "-two",
            "+2",
            "*** Add File: fresh/deeper/c.txt",
            "+c",
            "*** Add File: plain/d.txt",
            "+d",
        ),
    )
    assert result == ToolResult("apply_patch: not a directory: plain/d.txt", is_error=True)
    assert snapshot(project) == before
    assert not (project / "fresh").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "apply_patch: patchText is required"),
        ("*** Add File: x\n+y\n*** End Patch", "the patch must start with '*** Begin Patch'"),
        ("*** Begin Patch\n*** Add File: x\n+y", "the patch must end with '*** End Patch'"),
        ("*** Begin Patch\n*** End Patch", "the patch has no file operations"),
        ("*** Begin Patch\n*** Add File: x\ny\n*** End Patch", "line 3: every line"),
        ("*** Begin Patch\n*** Update File: a.txt\n*** End Patch", "has no hunks"),
        ("*** Begin Patch\n*** Update File: a.txt\n@@\n~two\n*** End Patch", "line 4:"),
        ("*** Begin Patch\n*** Rename File: a.txt\n*** End Patch", "expected a file section"),
    ],
)
async def test_a_malformed_patch_is_an_error_and_writes_nothing(
    project: Path, text: str, message: str
) -> None:
    before = snapshot(project)
    result = await call("apply_patch", {"patchText": text})
    assert result.is_error
    assert result.output.startswith("apply_patch: ")
    assert message in result.output
    assert snapshot(project) == before


async def test_an_added_file_gets_a_final_newline_and_an_update_keeps_modes(
    project: Path,
) -> None:
    (project / "run.sh").write_text("echo hi\n")
    (project / "run.sh").chmod(0o755)
    await call(
        "apply_patch",
        patch("*** Add File: one.txt", "+only", "*** Update File: run.sh", "@@", "-hi", "+bye"),
    )
    assert (project / "one.txt").read_bytes() == b"only\n"
    assert (project / "run.sh").read_text() == "echo bye\n"
    assert (project / "run.sh").stat().st_mode & 0o777 == 0o755
    assert sorted(p.name for p in project.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("confined", [False, True], ids=["no root", "root"])
@pytest.mark.parametrize("where", ["same folder", "other folder"])
async def test_deleting_a_symlink_removes_the_link_and_keeps_the_file_it_points_to(
    project: Path, confined: bool, where: str
) -> None:
    # As rm and git apply do: the link goes, the file it names stays as it was.
    target = project / "old.txt" if where == "same folder" else project / "sub/real.txt"
    target.parent.mkdir(exist_ok=True)
    target.write_text("still here\n")
    (project / "link.txt").symlink_to(target)
    result = await call(
        "apply_patch", patch("*** Delete File: link.txt"), project if confined else None
    )
    assert result == ToolResult(
        "Applied patch: 1 file operation",
        metadata={"added": [], "updated": [], "deleted": ["link.txt"]},
    )
    assert not (project / "link.txt").is_symlink()
    assert not (project / "link.txt").exists()
    assert target.read_text() == "still here\n"


async def test_deleting_a_dangling_symlink_is_refused_as_no_such_file(project: Path) -> None:
    (project / "dangling.txt").symlink_to(project / "gone.txt")
    result = await call("apply_patch", patch("*** Delete File: dangling.txt"))
    assert result.is_error
    assert "no such file" in result.output
    assert (project / "dangling.txt").is_symlink()
