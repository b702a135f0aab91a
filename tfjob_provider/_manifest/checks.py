"""Building blocks of manifest validation: each check records a :class:`Problem` and returns the
usable value or None, so one walk reports every problem.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
from typing import Any, Final

from tfjob_provider._manifest.problems import Problem, child, did_you_mean, one_of
from tfjob_provider.clipping import MAX_QUOTED_CHARS, clip, describe_int, shown

INT32_MAX: Final = 2**31 - 1
INT64_MAX: Final = 2**63 - 1


def as_text(value: Any) -> str:
    """A wrong value as a user would write it in a fix (``8080``, ``2024-01-31``), cut to a bounded length."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return describe_int(value)
    if isinstance(value, str | float | datetime.date):
        return clip(str(value), MAX_QUOTED_CHARS)
    return shown(value)


def describe(value: Any) -> str:
    """How a wrong value reads in a message: ``the string "2"``, ``true (a boolean)``, ``a list``."""
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, str):
        return f'the string "{as_text(value)}"'
    if isinstance(value, int | float):
        return f"{as_text(value)} (a number)"
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


class ProblemCollector:
    """The problems of one validation pass; each check records what is wrong and returns the usable value."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self._opaque: list[str] = []  # paths already reported as non-JSON values; nothing below them again

    # -- reporting -------------------------------------------------------------------------------

    def add(self, field: str, message: str, fix: str) -> None:
        if any(field == path or field.startswith((f"{path}.", f"{path}[")) for path in self._opaque):
            return
        self.problems.append(Problem(field, message, fix))

    # -- generic value checks --------------------------------------------------------------------

    def json_values(
        self, path: str, value: Any, *, annotations: bool = False, free_text: bool = False
    ) -> None:
        """Values a JSON request body cannot carry (YAML dates, NaN, non-string keys) anywhere in the tree.

        Also NUL characters, except in annotation values (*free_text*; *annotations* marks the
        mapping that holds them): Kubernetes stores those as given, and the provider's own
        identity annotations copy Airflow ids verbatim.
        """
        if isinstance(value, Mapping):
            for key, item in value.items():
                if not isinstance(key, str):
                    self.add(
                        path or "document",
                        f"has the key {describe(key)}; keys must be strings.",
                        f'Quote the key ("{as_text(key)}").',
                    )
                    self._opaque.append(child(path, key))
                    continue
                if "\x00" in key:
                    self._nul(path or "document", f"has the key {describe(key)}, which")
                    self._opaque.append(child(path, key))
                    continue
                self.json_values(
                    child(path, key), item, annotations=key == "annotations", free_text=annotations
                )
        elif isinstance(value, list | tuple):
            for index, item in enumerate(value):
                self.json_values(child(path, index), item)
        elif isinstance(value, str) and "\x00" in value and not free_text:
            self._nul(path, "")
        elif isinstance(value, float) and not math.isfinite(value):
            self.add(
                path, f"is {value}, which JSON cannot carry.", "Use a finite number, or quote it as a string."
            )
            self._opaque.append(path)
        elif isinstance(value, datetime.date | datetime.datetime):
            message = f"is a {type(value).__name__} (YAML reads an unquoted {value} that way), not a string."
            self.add(path, message, f'Quote it: "{as_text(value)}".')
            self._opaque.append(path)
        elif not isinstance(value, str | int | float | bool) and value is not None:
            self.add(
                path,
                f"is {describe(value)}, which a Kubernetes manifest cannot carry.",
                "Use strings, numbers, booleans, lists and mappings only.",
            )
            self._opaque.append(path)

    def _nul(self, path: str, subject: str) -> None:
        """A NUL character: no name, label, argument or environment variable can carry one."""
        self.add(
            path,
            f"{subject or 'is a string that'} contains a NUL character (\\x00); no Kubernetes name, "
            "label, argument or environment variable can carry one.",
            "Remove the NUL character (it often comes from a file read in binary or UTF-16).",
        )
        self._opaque.append(path)

    def mapping(self, path: str, value: Any, *, what: str) -> Mapping[str, Any] | None:
        if isinstance(value, Mapping):
            return value
        self.add(
            path,
            f"must be a mapping ({what}), not {describe(value)}.",
            f"Write {path} as a mapping of fields.",
        )
        return None

    def integer(self, path: str, value: Any, *, minimum: int, maximum: int = INT32_MAX) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
                fix = f"Write {as_text(value.strip())} without quotes."
            elif isinstance(value, float) and value.is_integer():
                fix = f"Write {describe_int(int(value))} (a whole number, no decimal point or exponent)."
            else:
                fix = f"Use a whole number of at least {minimum}."
            self.add(path, f"must be an integer, not {describe(value)}.", fix)
            return None
        if not minimum <= value <= maximum:
            self.add(
                path,
                f"is {describe_int(value)}; it must be between {minimum} and {maximum}.",
                f"Use a whole number from {minimum} to {maximum}.",
            )
            return None
        return value

    def string(self, path: str, value: Any, *, allow_empty: bool = True) -> str | None:
        if not isinstance(value, str):
            self.add(
                path, f"must be a string, not {describe(value)}.", f'Quote the value: "{as_text(value)}".'
            )
            return None
        if not allow_empty and not value.strip():
            self.add(path, "is empty.", "Give it a non-empty value.")
            return None
        return value

    def boolean(self, path: str, value: Any) -> None:
        if not isinstance(value, bool):
            self.add(
                path, f"must be true or false, not {describe(value)}.", "Write true or false without quotes."
            )

    def choice(self, path: str, value: Any, choices: tuple[str, ...], *, what: str) -> str | None:
        if not isinstance(value, str) or value not in choices:
            quoted = describe(value) if not isinstance(value, str) else f'"{as_text(value)}"'
            hint = did_you_mean(value, choices) if isinstance(value, str) else ""
            self.add(path, f"{quoted} is not a valid {what}.", f"Use {one_of(choices)}{hint}.")
            return None
        return value
