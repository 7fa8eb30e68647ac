"""``grep`` and ``glob``: the walk, its order, ``include`` and glob rules, limits, caps."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from toolnexus import ToolResult

from .support import Watch, call, tree

FILES: dict[str, str | bytes] = {
    "z.py": "needle at the top\n",
    "src/a.py": "x = 1\nneedle = 2\n",
    "src/b.txt": "a needle in text\nnothing\nneedle again\n",
    "src/sub/c.py": "needle deep\n",
    "src/a-b.py": "needle dashed\n",
    "node_modules/pkg/index.py": "needle hidden\n",
    ".git/config.py": "needle hidden\n",
    "bin/blob.py": b"needle \xff\xfe not utf-8\n",
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small tree, also the working folder."""
    tree(tmp_path, FILES)
    monkeypatch.chdir(tmp_path)
    return tmp_path


# grep ---------------------------------------------------------------------------------------------


async def test_grep_lists_matching_lines_in_sorted_order_skipping_hidden_folders(
    project: Path,
) -> None:
    result = await call("grep", {"pattern": "needle"})
    root = str(project)
    assert result == ToolResult(
        "\n".join(
            [
                f"{root}/src/a-b.py:1:needle dashed",
                f"{root}/src/a.py:2:needle = 2",
                f"{root}/src/b.txt:1:a needle in text",
                f"{root}/src/b.txt:3:needle again",
                f"{root}/src/sub/c.py:1:needle deep",
                f"{root}/z.py:1:needle at the top",
            ]
        ),
        metadata={"count": 6},
    )


async def test_grep_uses_python_regular_expressions(project: Path) -> None:
    result = await call("grep", {"pattern": r"^needle\s+(=|again)", "path": "src"})
    assert result.output.splitlines() == [
        f"{project}/src/a.py:2:needle = 2",
        f"{project}/src/b.txt:3:needle again",
    ]
    assert result.metadata == {"count": 2}


async def test_grep_include_without_a_slash_matches_the_file_name(project: Path) -> None:
    result = await call("grep", {"pattern": "needle", "include": "*.py"})
    assert [
        line.split(":")[0].removeprefix(f"{project}/") for line in result.output.split("\n")
    ] == [
        "src/a-b.py",
        "src/a.py",
        "src/sub/c.py",
        "z.py",
    ]


@pytest.mark.parametrize(
    ("include", "files"),
    [
        ("src/*.py", ["src/a-b.py", "src/a.py"]),
        ("src/**/*.py", ["src/a-b.py", "src/a.py", "src/sub/c.py"]),
        ("**/c.py", ["src/sub/c.py"]),
        ("src/?.py", ["src/a.py"]),
        ("*.{txt,py}", ["src/a-b.py", "src/a.py", "src/b.txt", "src/sub/c.py", "z.py"]),
    ],
)
async def test_grep_include_with_a_slash_matches_the_relative_path(
    project: Path, include: str, files: list[str]
) -> None:
    result = await call("grep", {"pattern": "needle", "include": include})
    found = [line.split(":")[0].removeprefix(f"{project}/") for line in result.output.split("\n")]
    assert sorted(set(found)) == files


async def test_grep_returns_at_most_limit_lines_the_first_in_order(project: Path) -> None:
    result = await call("grep", {"pattern": "needle", "limit": 3})
    assert result.output.split("\n") == [
        f"{project}/src/a-b.py:1:needle dashed",
        f"{project}/src/a.py:2:needle = 2",
        f"{project}/src/b.txt:1:a needle in text",
    ]
    assert result.metadata == {"count": 3}


async def test_grep_with_no_match_returns_nothing(project: Path) -> None:
    assert await call("grep", {"pattern": "haystack"}) == ToolResult("", metadata={"count": 0})


@pytest.mark.parametrize(
    ("content", "lines"),
    [("a\n\nb\n", [2]), ("\n", [1]), ("a\n", []), ("", []), ("a\n\n", [2]), ("a", [])],
)
async def test_grep_numbers_lines_like_splitting_on_newlines(
    tmp_path: Path, content: str, lines: list[int]
) -> None:
    (tmp_path / "f.txt").write_text(content)
    result = await call("grep", {"pattern": "^$", "path": str(tmp_path)})
    assert result.output == "\n".join(f"{tmp_path}/f.txt:{n}:" for n in lines)


async def test_grep_skips_a_file_whose_bad_bytes_come_late(tmp_path: Path) -> None:
    tree(
        tmp_path, {"late.txt": b"needle\n" + b"x" * 20_000 + b"\n\xff needle\n", "ok.txt": "needle"}
    )
    result = await call("grep", {"pattern": "needle", "path": str(tmp_path)})
    assert result.output == f"{tmp_path}/ok.txt:1:needle"


async def test_grep_of_one_file(project: Path) -> None:
    result = await call("grep", {"pattern": "needle", "path": "src/b.txt"})
    assert result.output.split("\n") == [
        f"{project}/src/b.txt:1:a needle in text",
        f"{project}/src/b.txt:3:needle again",
    ]


async def test_an_invalid_regular_expression_is_an_error(project: Path) -> None:
    result = await call("grep", {"pattern": "needle("})
    assert result.is_error
    assert result.output.startswith("grep: invalid regular expression 'needle('")


async def test_grep_of_a_missing_folder_is_an_error_naming_it(project: Path) -> None:
    result = await call("grep", {"pattern": "x", "path": "nowhere"})
    assert result == ToolResult("grep: no such file or folder: nowhere", is_error=True)


async def test_grep_does_not_follow_a_symlinked_folder(project: Path, tmp_path: Path) -> None:
    (project / "link").symlink_to(project / "src", target_is_directory=True)
    result = await call("grep", {"pattern": "deep"})
    assert result.output == f"{project}/src/sub/c.py:1:needle deep"


async def test_grep_counts_lines_across_large_files(project: Path) -> None:
    body = "".join(f"row {n}\n" for n in range(300_000))  # spans several read chunks
    (project / "big.log").write_text(body + "the end needle")
    result = await call("grep", {"pattern": "needle|row 299999$", "include": "*.log"})
    assert result.output.split("\n") == [
        f"{project}/big.log:300000:row 299999",
        f"{project}/big.log:300001:the end needle",
    ]


async def test_grep_output_over_the_cap_keeps_the_head_and_says_truncated(
    project: Path,
) -> None:
    (project / "wide.txt").write_text(("needle " + "w" * 2_000 + "\n") * 200)
    result = await call("grep", {"pattern": "needle", "path": "wide.txt", "limit": 1000})
    assert not result.is_error
    assert result.metadata is not None
    assert result.metadata["truncated"] is True
    head, note = result.output[:100_000], result.output[100_000:]
    assert head.startswith(f"{project}/wide.txt:1:needle www")
    assert "truncated" in note
    assert result.metadata["count"] == head.count("\n") + 1


async def test_grep_stops_walking_once_limit_lines_are_found(tmp_path: Path) -> None:
    tree(tmp_path, {f"f{n:02d}.txt": "hit\nhit\n" for n in range(30)})
    with Watch(tmp_path) as watch:
        result = await call("grep", {"pattern": "hit", "path": str(tmp_path), "limit": 3})
    assert result.metadata == {"count": 3}
    assert watch.opened() == ["f00.txt", "f01.txt"]


async def test_a_cancelled_grep_stops_walking(tmp_path: Path) -> None:
    tree(tmp_path, {f"f{n:02d}.txt": "miss\n" for n in range(30)})
    with Watch(tmp_path, hold="f05.txt") as watch:
        search = asyncio.create_task(call("grep", {"pattern": "hit", "path": str(tmp_path)}))
        assert await asyncio.to_thread(watch.entered.wait, 5)
        search.cancel()
        with pytest.raises(asyncio.CancelledError):
            await search
        watch.release.set()
        await asyncio.get_running_loop().shutdown_default_executor()  # the walk has ended
    assert watch.opened() == [f"f{n:02d}.txt" for n in range(6)]


# glob ---------------------------------------------------------------------------------------------


async def test_glob_without_a_slash_matches_names_at_any_depth_sorted(project: Path) -> None:
    result = await call("glob", {"pattern": "*.py"})
    assert result == ToolResult(
        "bin/blob.py\nsrc/a-b.py\nsrc/a.py\nsrc/sub/c.py\nz.py", metadata={"count": 5}
    )


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("src/*", ["src/a-b.py", "src/a.py", "src/b.txt"]),
        ("./src/*.txt", ["src/b.txt"]),
        ("src/**", ["src/a-b.py", "src/a.py", "src/b.txt", "src/sub/c.py"]),
        ("**/*.txt", ["src/b.txt"]),
        ("**/*.py", ["bin/blob.py", "src/a-b.py", "src/a.py", "src/sub/c.py", "z.py"]),
        ("?.py", ["src/a.py", "src/sub/c.py", "z.py"]),
        ("src/?.py", ["src/a.py"]),
        ("[ab].py", ["src/a.py"]),
        ("[!a].py", ["src/sub/c.py", "z.py"]),
        ("*.PY", []),
    ],
)
async def test_glob_rules(project: Path, pattern: str, expected: list[str]) -> None:
    result = await call("glob", {"pattern": pattern})
    assert result == ToolResult("\n".join(expected), metadata={"count": len(expected)})


async def test_glob_limit_keeps_the_first_paths_in_sorted_order(project: Path) -> None:
    tree(project, {f"many/{n:03d}.md": "" for n in range(250)})
    result = await call("glob", {"pattern": "*.md"})
    assert result.output.split("\n") == [f"many/{n:03d}.md" for n in range(100)]
    assert result.metadata == {"count": 100}
    limited = await call("glob", {"pattern": "*.md", "limit": 2})
    assert limited == ToolResult("many/000.md\nmany/001.md", metadata={"count": 2})


async def test_glob_paths_are_relative_to_the_given_folder(project: Path) -> None:
    result = await call("glob", {"pattern": "*.py", "path": str(project / "src")})
    assert result.output == "a-b.py\na.py\nsub/c.py"


async def test_glob_sorts_like_strings_across_folder_boundaries(tmp_path: Path) -> None:
    tree(tmp_path, {"a/x.txt": "", "a.txt": "", "a-b.txt": "", "a0/y.txt": "", "B.txt": ""})
    result = await call("glob", {"pattern": "*.txt", "path": str(tmp_path)})
    names = ["B.txt", "a-b.txt", "a.txt", "a/x.txt", "a0/y.txt"]
    assert names == sorted(names)
    assert result.output.split("\n") == names


async def test_glob_of_a_file_or_a_missing_folder_is_an_error(project: Path) -> None:
    assert await call("glob", {"pattern": "*", "path": "z.py"}) == ToolResult(
        "glob: not a folder: z.py", is_error=True
    )
    assert await call("glob", {"pattern": "*", "path": "gone"}) == ToolResult(
        "glob: no such file or folder: gone", is_error=True
    )
