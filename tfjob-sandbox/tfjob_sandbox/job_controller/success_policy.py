"""``successPolicy`` matching (success_policy.go): the first rule the succeeded indexes satisfy."""

from __future__ import annotations

from typing import Any

from tfjob_sandbox.job_controller.intervals import parse_indexes


def match_success_policy(policy: dict[str, Any] | None, completions: int, succeeded: set[int]) -> str | None:
    """The SuccessCriteriaMet message (``Matched rules at index N``), or ``None`` if no rule is met."""
    if not policy or not succeeded:
        return None
    for index, rule in enumerate(policy.get("rules") or []):
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            required = parse_indexes(rule["succeededIndexes"], completions)
            if not required:
                continue
            matched = len(required & succeeded)
            if (count is None and matched == len(required)) or (count is not None and matched >= count):
                return f"Matched rules at index {index}"
        elif count is not None and len(succeeded) >= count:
            return f"Matched rules at index {index}"
    return None
