"""Sets of completion indexes as ordered intervals, written like ``status.completedIndexes`` ("0,2-4")."""

from __future__ import annotations

from collections.abc import Iterable


def parse_indexes(text: str | None, completions: int) -> set[int]:
    """The indexes ``text`` names below ``completions``; malformed parts are skipped, as upstream does."""
    result: set[int] = set()
    for part in (text or "").split(","):
        first, dash, last = part.strip().partition("-")
        try:
            low = int(first)
            high = int(last) if dash else low
        except ValueError:
            continue
        if low < 0 or high < low:
            continue
        result.update(range(low, min(high, completions - 1) + 1))
    return result


def format_indexes(indexes: Iterable[int]) -> str:
    """``{0, 2, 3, 4, 7}`` → ``"0,2-4,7"``; two neighbours are written as a range too (``"5-6"``)."""
    parts: list[str] = []
    ordered = sorted(set(indexes))
    start = previous = None
    for index in ordered:
        if start is None:
            start = previous = index
        elif previous is not None and index == previous + 1:
            previous = index
        else:
            parts.append(_interval(start, previous))
            start = previous = index
    if start is not None:
        parts.append(_interval(start, previous))
    return ",".join(parts)


def _interval(start: int, end: int | None) -> str:
    return str(start) if end is None or end == start else f"{start}-{end}"
