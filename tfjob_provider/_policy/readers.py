"""Defensive readers for API JSON that may be partial, null or oddly shaped; the engine never raises
on its input.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from types import MappingProxyType
from typing import Any, Final

#: Returned instead of a missing or malformed object, so chained ``.get`` calls stay safe.
EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})

_INTEGER_TEXT: Final = re.compile(r"[+-]?[0-9]+")


def as_mapping(value: object) -> Mapping[str, Any]:
    """``value`` when it is a JSON object, else an empty read-only mapping."""
    if type(value) is dict or isinstance(value, Mapping):
        return value
    return EMPTY


def as_list(value: object) -> Sequence[Any]:
    """``value`` when it is a JSON array (list or tuple), else an empty tuple.

    Strings and bytes are sequences in Python but never arrays in JSON, so they are refused.
    """
    if type(value) is list or type(value) is tuple:
        return value
    if value is None:
        return ()
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
        return value
    return ()


def as_str(value: object) -> str | None:
    """``value`` when it is a string, else None."""
    return value if isinstance(value, str) else None


def as_int(value: object) -> int | None:
    """An integer read leniently: ints, integral floats and decimal strings; None otherwise.

    Booleans are refused: ``True`` is an ``int`` in Python but never a count in the API.
    """
    if type(value) is int:
        return value
    if type(value) is str and value.isdigit() and value.isascii():
        return int(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return int(value)
        return None
    if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value):
        return int(value)
    return None


def as_count(value: object) -> int:
    """A non-negative count (restartCount, replica status counters); anything else reads as 0."""
    if type(value) is int:
        return value if value > 0 else 0
    number = as_int(value)
    return number if number is not None and number > 0 else 0


def is_true(value: object) -> bool:
    """A condition ``status`` (the API writes the string ``"True"``) or a plain boolean."""
    if value is True:
        return True
    return isinstance(value, str) and value.lower() == "true"


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 timestamp (``2024-05-01T12:00:00Z``) or a datetime, as an aware UTC datetime.

    Naive datetimes are taken to be UTC, as the API server only ever speaks UTC.  Anything
    unparseable reads as None.
    """
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str) and value:
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
    else:
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment
