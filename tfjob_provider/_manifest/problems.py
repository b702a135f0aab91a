""":class:`Problem` (field, message, fix) and :class:`ManifestError`, which lists every problem."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from tfjob_provider.clipping import clip, shown

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Characters kept of a problem's field path, message and fix; a report lists problems up to
#: :data:`MAX_REPORT_CHARS` and counts the rest, so no error message grows with its input.
_MAX_FIELD_CHARS: Final = 200
_MAX_MESSAGE_CHARS: Final = 400
_MAX_FIX_CHARS: Final = 300
#: Longest ``str()`` of a :class:`ManifestError` (the problems themselves all stay in ``problems``).
MAX_REPORT_CHARS: Final = 4000
#: Words longer than this get no "did you mean": no field name is that long, and difflib's cost
#: grows with the word.
_MAX_GUESSED_CHARS: Final = 64


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a manifest: where (a dotted path), what, and how to fix it."""

    field: str
    message: str
    fix: str

    def __post_init__(self) -> None:
        # Messages quote user values; whatever a caller built, a problem stays a few hundred
        # characters long.
        object.__setattr__(self, "field", clip(self.field, _MAX_FIELD_CHARS))
        object.__setattr__(self, "message", clip(self.message, _MAX_MESSAGE_CHARS))
        object.__setattr__(self, "fix", clip(self.fix, _MAX_FIX_CHARS))

    def __str__(self) -> str:
        return f"{self.field}: {self.message} Fix: {self.fix}"


class ManifestError(ValueError):
    """A TFJob manifest (or the typed parameters meant to build one) cannot be submitted.

    ``problems`` holds every problem found, in the order the manifest was walked; ``str()`` lists
    them one per line, each naming the field path and the fix — as many as fit in
    :data:`MAX_REPORT_CHARS`, followed by the count of the others.
    """

    def __init__(self, problems: Sequence[Problem]) -> None:
        if not problems:
            raise ValueError("ManifestError needs at least one problem")
        self.problems: list[Problem] = list(problems)
        super().__init__(self._render())

    def _render(self) -> str:
        count = len(self.problems)
        lines = [f"TFJob manifest is invalid ({count} problem{'s' if count != 1 else ''}):"]
        length = len(lines[0])
        for index, problem in enumerate(self.problems):
            line = f"  - {problem}"
            if length + len(line) > MAX_REPORT_CHARS:
                rest = count - index
                lines.append(f"  … and {rest} more problem{'s' if rest != 1 else ''} (fix these first).")
                break
            lines.append(line)
            length += len(line) + 1
        return "\n".join(lines)

    def __reduce__(self) -> tuple[type[ManifestError], tuple[list[Problem]]]:
        # Exceptions are pickled by their args; ours are built from the problem list instead.
        return (type(self), (self.problems,))


def child(path: str, key: object) -> str:
    """The field path of *key* under *path*: ``spec.runPolicy`` or ``metadata.labels["a/b"]``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    text = clip(str(key), 60) if isinstance(key, str) else shown(key, 60)
    if _IDENTIFIER.fullmatch(text):
        return f"{path}.{text}" if path else text
    return f'{path}["{text}"]'


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate *word* was most likely meant to be (case-insensitive first), or None."""
    if len(word) > _MAX_GUESSED_CHARS:
        return None
    options = list(candidates)
    for option in options:
        if option.lower() == word.lower():
            return option
    by_lower = {option.lower(): option for option in options}
    matches = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.75)
    return by_lower[matches[0]] if matches else None


def one_of(values: Iterable[str]) -> str:
    """``"Never, OnFailure, Always or ExitCode"`` for a fix sentence."""
    quoted = [f'"{value}"' for value in values]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean "restartPolicy"?)`` or an empty string when nothing is close."""
    guess = closest(word, candidates)
    return f' (did you mean "{guess}"?)' if guess is not None else ""
