"""HTML to readable text for ``webfetch``: scripts, styles and tags removed, blank runs
collapsed; in markdown form headings, links, list items and preformatted blocks keep their
shape (``#``, ``[text](url)``, ``-``/``1.``, fenced code)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin

__all__ = ["html_to_text"]

_HIDDEN = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "object"})
_PARAGRAPHS = frozenset(
    {
        "address", "article", "aside", "blockquote", "details", "dialog", "div", "dl",
        "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "main", "nav",
        "ol", "p", "pre", "section", "summary", "table", "ul", "title",
        "h1", "h2", "h3", "h4", "h5", "h6",
    }
)  # fmt: skip
_LINES = frozenset({"br", "li", "tr", "dt", "dd", "caption", "thead", "tbody", "option"})
_CELLS = frozenset({"td", "th"})
_SPACES = re.compile(r"\s+")
_SPACE_RUNS = re.compile(r" {2,}")
_STEP = 64 * 1024
"""Characters of markup fed to the parser at a time (so a long page can stop early)."""
_INDENT = "\x01"
"""Stands for a space of list indentation while flowing text is tidied (it survives that)."""
_LINE_EDGES = re.compile(r"[ \t]*\n[ \t]*")
_BLANK_RUNS = re.compile(r"\n{3,}")


def html_to_text(
    html: str, *, markdown: bool = False, base_url: str = "", limit: int | None = None
) -> tuple[str, bool]:
    """The readable text of ``html``, and whether all of it was read. With ``markdown``,
    structure is kept as Markdown and links are made absolute against ``base_url``. With a
    ``limit``, reading stops soon after that many characters of text were produced (the text
    is then longer than ``limit`` and the flag ``False``)."""
    renderer = _Renderer(markdown, base_url)
    html = html.replace("\x00", "").replace(_INDENT, "")
    for start in range(0, len(html), _STEP):
        renderer.feed(html[start : start + _STEP])
        if limit is not None and renderer.size > limit:
            return renderer.text(), False
    renderer.close()
    return renderer.text(), True


class _Renderer(HTMLParser):
    def __init__(self, markdown: bool, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.markdown = markdown
        self.base_url = base_url
        self.parts: list[tuple[str, bool]] = []  # (text, verbatim)
        self.hidden: list[str] = []
        self.pre = 0
        self.links: list[str | None] = []
        self.lists: list[list[int]] = []  # [ordered, count] per open list
        self.breaks = 0  # newlines owed before the next text (0, 1 or 2)
        self.size = 0  # characters emitted so far

    def emit(self, text: str, verbatim: bool = False) -> None:
        if self.breaks:
            if self.parts:
                self.parts.append(("\n" * self.breaks, False))
            self.breaks = 0
        self.parts.append((text, verbatim))
        self.size += len(text)

    def line_break(self, newlines: int) -> None:
        """End the current line (1) or paragraph (2) before whatever text comes next."""
        self.breaks = max(self.breaks, newlines)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN:
            self.hidden.append(tag)
            return
        if self.hidden:
            return
        nested_list = tag in ("ul", "ol") and bool(self.lists)
        if tag in _PARAGRAPHS and not nested_list:
            self.line_break(2)
        elif tag in _LINES or nested_list:
            self.line_break(1)
        if tag == "pre":
            self.pre += 1
        if tag in ("ul", "ol"):
            self.lists.append([tag == "ol", 0])
        if self.markdown:
            self._markdown_start(tag, dict(attrs))

    def _markdown_start(self, tag: str, attrs: dict[str, str | None]) -> None:
        if len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self.emit("#" * int(tag[1]) + " ")
        elif tag == "li":
            depth = max(len(self.lists), 1)
            marker = "- "
            if self.lists and self.lists[-1][0]:
                self.lists[-1][1] += 1
                marker = f"{self.lists[-1][1]}. "
            self.emit(_INDENT * 2 * (depth - 1) + marker)
        elif tag == "pre":
            self.emit("```\n", verbatim=True)
        elif tag == "code" and not self.pre:
            self.emit("`")
        elif tag == "hr":
            self.emit("---")
            self.line_break(2)
        elif tag == "blockquote":
            self.emit("> ")
        elif tag == "a":
            href = (attrs.get("href") or "").strip()
            keep = href and not href.startswith(("#", "javascript:"))
            absolute = href.startswith(("http://", "https://"))
            self.links.append(
                (href if absolute else urljoin(self.base_url, href)) if keep else None
            )
            if keep:
                self.emit("[")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            if tag in self.hidden:
                while self.hidden.pop() != tag:
                    pass
            return
        if self.hidden:
            return
        if self.markdown:
            self._markdown_end(tag)
        if tag == "pre":
            self.pre = max(self.pre - 1, 0)
        if tag in ("ul", "ol") and self.lists:
            self.lists.pop()
            if self.lists:  # the end of a nested list ends a line, not a paragraph
                self.line_break(1)
                return
        if tag in _PARAGRAPHS:
            self.line_break(2)
        elif tag in _CELLS:
            self.emit(" ")

    def _markdown_end(self, tag: str) -> None:
        if tag == "pre":
            self.emit("\n```", verbatim=True)
        elif tag == "code" and not self.pre:
            self.emit("`")
        elif tag == "a" and self.links:
            href = self.links.pop()
            if href is not None:
                self.emit(f"]({href})")

    def handle_data(self, data: str) -> None:
        if self.hidden:
            return
        if self.pre:
            self.emit(data, verbatim=True)
        elif not data.isspace() or not (self.breaks or not self.parts):
            self.emit(_SPACES.sub(" ", data))  # (blank text beside a break is dropped)

    def text(self) -> str:
        out: list[str] = []
        flowing: list[str] = []
        for text, verbatim in self.parts:
            if verbatim:
                out.append(_tidy("".join(flowing)))
                flowing = []
                out.append(text)
            else:
                flowing.append(text)
        out.append(_tidy("".join(flowing)))
        return "".join(out).strip().replace(_INDENT, " ")


def _tidy(text: str) -> str:
    """Flowing text: single spaces, none at line edges, at most one blank line in a row."""
    return _BLANK_RUNS.sub("\n\n", _LINE_EDGES.sub("\n", _SPACE_RUNS.sub(" ", text)))
