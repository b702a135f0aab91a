"""Reading :func:`~tfjob_provider.manifest.build_tfjob`'s parameters: :class:`ParameterReader` turns
each into the shape the manifest needs (text from Jinja included) and records a :class:`Problem` for
each one it cannot use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tfjob_provider._manifest.build_parameters import REPLICA_KEYS, EnvInput, ReplicaInput, ReplicaSpec
from tfjob_provider._manifest.problems import Problem, child, did_you_mean
from tfjob_provider.clipping import shown

_INTEGER_TEXT = re.compile(r"\s*[+-]?\d{1,30}\s*")  # longer numbers are left for the validator to refuse


def integer_or_as_given(value: Any) -> Any:
    """``"4"`` → ``4`` (Jinja renders integers as text); anything else is left for the validator."""
    if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value):
        return int(value)
    return value


def boolean_or_as_given(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value


class ParameterReader:
    """Collects problems with the parameters themselves while assembling the manifest."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, field: str, message: str, fix: str) -> None:
        self.problems.append(Problem(field, message, fix))

    def replica(self, param: str, value: ReplicaInput) -> ReplicaSpec | None:
        """Turn one of ``chief``/``worker``/``ps``/``evaluator`` into a ReplicaSpec (None = not present)."""
        value = integer_or_as_given(value)
        if value is None:
            return None
        if isinstance(value, ReplicaSpec):
            spec = value
        elif isinstance(value, int) and not isinstance(value, bool):
            spec = ReplicaSpec(value)
        elif isinstance(value, Mapping):
            unknown = [key for key in value if key not in REPLICA_KEYS]
            for key in unknown:
                hint = did_you_mean(key, REPLICA_KEYS) if isinstance(key, str) else ""
                self.add(
                    child(param, key),
                    f"is not a replica setting{hint}.",
                    f"Use only {', '.join(REPLICA_KEYS)}.",
                )
            known = {key: item for key, item in value.items() if key in REPLICA_KEYS}
            known["replicas"] = integer_or_as_given(known.get("replicas", 1))
            spec = ReplicaSpec(**known)
        else:
            self.add(
                param,
                f"must be a replica count, a ReplicaSpec or a dict, not {shown(value)}.",
                f"Pass e.g. {param}=2 or {param}={{'replicas': 2, 'restart_policy': 'OnFailure'}}.",
            )
            return ReplicaSpec()  # stand-in so that no follow-on "no Worker" problem is reported
        return None if spec.replicas == 0 else spec

    def string_list(self, param: str, value: Sequence[Any] | None) -> list[Any] | None:
        if value is None:
            return None
        if isinstance(value, str) or not isinstance(value, Sequence):
            self.add(
                param,
                f"must be a list of strings, not {shown(value)}.",
                f'Split it into a list, e.g. {param}=["python", "train.py"].',
            )
            return None
        # Numbers are written as text (["--epochs", 10] is meant as "10"); anything odder is left as is
        # so that the validator names it.
        return [
            str(item) if isinstance(item, int | float) and not isinstance(item, bool) else item
            for item in value
        ]

    def mapping(self, param: str, value: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """A copy of a dict parameter (labels, resources, …); None when not given or not a mapping."""
        if value is None:
            return None
        if not isinstance(value, Mapping):
            self.add(
                param,
                f"must be a mapping, not {shown(value)}.",
                f'Pass a dict, e.g. {param}={{"key": "value"}}.',
            )
            return None
        return dict(value)

    def mappings(self, param: str, value: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
        """Copies of a list-of-dicts parameter (volumes, tolerations, …); None when not given or wrong."""
        if value is None:
            return None
        if isinstance(value, str | Mapping) or not isinstance(value, Sequence):
            self.add(
                param, f"must be a list of mappings, not {shown(value)}.", f"Pass a list of dicts as {param}."
            )
            return None
        wrong = [index for index, item in enumerate(value) if not isinstance(item, Mapping)]
        for index in wrong[:3]:
            self.add(
                child(param, index), f"must be a mapping, not {shown(value[index])}.", "Pass a dict here."
            )
        return None if wrong else [dict(item) for item in value]

    def names(self, param: str, value: Sequence[str] | None) -> list[str] | None:
        """A list of names (image_pull_secrets)."""
        if value is None:
            return None
        if (
            isinstance(value, str)
            or not isinstance(value, Sequence)
            or not all(isinstance(v, str) for v in value)
        ):
            self.add(
                param, f"must be a list of names, not {shown(value)}.", f'Pass e.g. {param}=["regcred"].'
            )
            return None
        return list(value)

    def env(self, param: str, value: EnvInput | None) -> list[dict[str, Any]]:
        if value is None:
            return []
        if isinstance(value, Mapping):
            variables: list[dict[str, Any]] = []
            for name, item in value.items():
                if isinstance(item, Mapping):
                    variables.append({"name": name, "valueFrom": dict(item)})
                elif isinstance(item, bool):
                    variables.append({"name": name, "value": "true" if item else "false"})
                elif isinstance(item, str | int | float):
                    variables.append({"name": name, "value": str(item)})
                elif item is None:
                    variables.append({"name": name})
                else:
                    self.add(
                        child(param, name),
                        f"must be text, a number, a boolean or a valueFrom mapping, not {shown(item)}.",
                        "Give the value as text.",
                    )
            return variables
        is_list = isinstance(value, Sequence) and not isinstance(value, str)
        if is_list and all(isinstance(item, Mapping) for item in value):
            return [dict(item) for item in value]
        self.add(
            param,
            f"must be a mapping of name to value or a list of {{name, value}} dicts, not {shown(value)}.",
            f'Pass e.g. {param}={{"EPOCHS": "10"}}.',
        )
        return []


__all__ = ["ParameterReader", "boolean_or_as_given", "integer_or_as_given"]
