"""One quoting helper for every message that repeats outside text: bounded whatever the value."""

from __future__ import annotations

from typing import Any

import pytest

from tfjob_provider.clipping import MAX_QUOTED_CHARS, clip, describe_int, shown


def _nested(levels: int) -> dict[str, Any]:
    top: dict[str, Any] = {}
    current = top
    for _ in range(levels):
        current["a"] = {}
        current = current["a"]
    return top


def _self_containing() -> list[Any]:
    items: list[Any] = [1]
    items.append(items)
    return items


def test_clip_keeps_short_text_and_says_how_much_was_cut() -> None:
    assert clip("short", 10) == "short"
    assert clip("x" * 25, 10) == "xxxxxxxxxx… (15 more characters)"


def test_describe_int_prints_ordinary_integers_and_sizes_huge_ones() -> None:
    assert describe_int(-42) == "-42"
    assert describe_int(10**5000) == "an integer of about 5001 digits"  # str() would raise ValueError


@pytest.mark.parametrize(
    "value",
    [
        "x" * 1_000_000,
        list(range(1_000_000)),
        {f"k{i}": i for i in range(100_000)},
        _nested(5000),
        _self_containing(),
        10**100_000,
        b"\x00" * 1_000_000,
        ("t" * 1000,) * 1000,
    ],
    ids=[
        "long-string",
        "long-list",
        "big-dict",
        "nested-5000",
        "self-containing",
        "huge-int",
        "bytes",
        "tuple",
    ],
)
def test_shown_is_bounded_whatever_the_value(value: Any) -> None:
    text = shown(value)
    assert len(text) <= MAX_QUOTED_CHARS + 40  # the cut note included


def test_shown_reads_like_repr_for_small_values() -> None:
    assert shown("a b") == "'a b'"
    assert shown([1, "x"]) == "[1, 'x']"
    assert shown({"a": 1}) == "{'a': 1}"
    assert shown(None) == "None" and shown(2.5) == "2.5"
