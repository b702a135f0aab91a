"""The documentation pages as the tests read them: code blocks, sections, tables, links, anchors."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```$", flags=re.MULTILINE | re.DOTALL)
_HEADING = re.compile(r"^(#+) (.*)$")
_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")
_INLINE_CODE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")


def pages() -> list[Path]:
    """README.md, DEVELOPMENT.md and every page under docs/, relative to the repository."""
    found = [ROOT / "README.md", ROOT / "DEVELOPMENT.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [page.relative_to(ROOT) for page in found]


@dataclass(frozen=True)
class Block:
    """One fenced code block: its page, the line it starts on, its language and its text."""

    page: Path
    line: int
    language: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(page: Path, language: str | None = None) -> list[Block]:
    text = (ROOT / page).read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        if language is None or match.group(1) == language:
            line = text.count("\n", 0, match.start()) + 1
            found.append(Block(page, line, match.group(1), match.group(2)))
    return found


def prose(page: Path) -> str:
    """The page without its fenced code blocks (links and inline code are read from this)."""
    return _FENCE.sub("", (ROOT / page).read_text(encoding="utf-8"))


def section(page: Path, heading: str) -> str:
    """The text under a Markdown heading, up to the next heading of the same or a higher level."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    in_fence = False
    start: int | None = None
    level = 0
    for number, line in enumerate(lines):
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        match = None if in_fence else _HEADING.match(line)
        if match is None:
            continue
        if start is None and match.group(2).strip() == heading:
            start, level = number + 1, len(match.group(1))
        elif start is not None and len(match.group(1)) <= level:
            return "\n".join(lines[start:number])
    assert start is not None, f"{page} has no section {heading!r}"
    return "\n".join(lines[start:])


def table_rows(text: str) -> list[list[str]]:
    """The cells of every Markdown table row in ``text``, without header and separator rows."""
    rows: list[list[str]] = []
    header_next = True
    for line in text.splitlines():
        if not line.startswith("|"):
            header_next = True
            continue
        if set(line) <= set("|-: "):
            continue
        if header_next:
            header_next = False
            continue
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def table_header(text: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith("|"))
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    kept = "".join(c for c in heading.strip().lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    in_fence = False
    for line in (ROOT / page).read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        match = None if in_fence else _HEADING.match(line)
        if match is not None:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    """The targets of the page's Markdown links (outside code)."""
    text = _INLINE_CODE.sub("", prose(page))
    return _LINK.findall(text)


def inline_code(page: Path) -> list[str]:
    return _INLINE_CODE.findall(prose(page))
