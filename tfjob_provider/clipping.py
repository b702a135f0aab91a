"""Quote outside text in messages at a bounded length: :func:`clip` for text, :func:`shown` for any
value.
"""

from __future__ import annotations

import reprlib
from typing import Any, Final

#: Characters kept of one log line or message in a report, so one binary line cannot flood the log.
MAX_LINE_CHARS: Final = 1000
#: Characters kept of a user value quoted inside an error message.
MAX_QUOTED_CHARS: Final = 80
#: Integers longer than this many bits are described by their size, never printed: Python refuses
#: to print one of more than 4,300 digits, and nobody reads one of 300.
_MAX_PRINTED_INT_BITS: Final = 200


def clip(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """*text* cut to *limit* characters, saying how many were left out."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} more characters)"


def describe_int(value: int) -> str:
    """``42``, or ``an integer of about 5000 digits`` when printing it would be useless (or refused)."""
    if value.bit_length() <= _MAX_PRINTED_INT_BITS:
        return str(value)
    return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"


class _BoundedRepr(reprlib.Repr):
    """``reprlib`` limits on nesting and on elements shown; huge integers by their size."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxstring = limit
        self.maxother = limit
        self.maxlong = limit
        self.maxdict = self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = 4

    def repr_int(self, x: int, _level: int) -> str:
        return describe_int(x)


def shown(value: Any, limit: int = MAX_QUOTED_CHARS) -> str:
    """A ``repr``-like rendering of *value* of at most about *limit* characters, whatever it holds.

    Nesting is shown three levels deep and four elements per collection, so a deeply nested or
    self-containing value is printed safely; strings are quoted and cut.
    """
    if isinstance(value, str):
        return repr(clip(value, limit))
    return clip(_BoundedRepr(limit).repr(value), limit)


__all__ = ["MAX_LINE_CHARS", "MAX_QUOTED_CHARS", "clip", "describe_int", "shown"]
