"""The ``extra`` of a succeeded TFJob task's asset events, and the output URIs that become assets.

Keys (docs/guides/assets-and-lineage.md): ``tfjob`` (namespace, name, uid, state, reason, start_time,
completion_time, replicas, recreations, recreation_count), ``outputs`` (the parsed termination
message, under 4096 bytes by :mod:`tfjob_provider._outcome.outputs`) and, on an event an ``AssetAlias``
received for one output URI, ``output_key``.  JSON values only; never a pod spec or an env value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

#: The result-dict keys copied into ``extra["tfjob"]``: the TFJob's identity and how it ended.
IDENTITY_KEYS: Final = (
    "namespace",
    "name",
    "uid",
    "state",
    "reason",
    "start_time",
    "completion_time",
    "replicas",
    "recreations",
    "recreation_count",
)
#: ``extra`` key of the asset event an ``AssetAlias`` received: which output key held the URI.
OUTPUT_KEY: Final = "output_key"


def asset_extra(result: Mapping[str, Any]) -> dict[str, Any]:
    """``{"tfjob": {...identity and outcome...}, "outputs": ...}`` from a task's result dict
    (:func:`tfjob_provider._outcome.report.result_dict`)."""
    return {
        "tfjob": {key: result.get(key) for key in IDENTITY_KEYS},
        "outputs": result.get("outputs"),
    }


def check_asset_keys(value: Any, *, field: str, task_id: str) -> tuple[str, ...]:
    """``output_asset_keys`` / ``input_asset_keys`` as a tuple of names; ValueError naming the
    field and the fix for anything else (a bare string would be read letter by letter)."""
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValueError(
            f"{task_id}: {field} must be a list of output keys, e.g. {field}=['model_uri'], got {value!r}"
        )
    keys = tuple(value)
    bad = [key for key in keys if not isinstance(key, str) or not key]
    if bad:
        raise ValueError(f"{task_id}: {field} holds {bad!r}; every item must be an output key (a string)")
    return keys


@dataclass(frozen=True)
class OutputUri:
    """A URI the training reported under output ``key``."""

    key: str
    uri: str


def output_uris(outputs: Any, keys: Sequence[str]) -> tuple[list[OutputUri], list[str]]:
    """The URIs under ``keys`` of the outputs (a string, or a list of strings, per key), and a
    problem per key that is missing or holds anything else (the caller logs and skips those)."""
    found: list[OutputUri] = []
    problems: list[str] = []
    if not keys:
        return found, problems
    if not isinstance(outputs, Mapping):
        return found, [f"the outputs are not a JSON object, so they hold no {list(keys)}"]
    for key in keys:
        value = outputs.get(key)
        values = value if isinstance(value, list) else [value]
        if value is None:
            problems.append(f"output {key!r} is missing")
            continue
        for item in values:
            if isinstance(item, str) and item.strip():
                found.append(OutputUri(key, item))
            else:
                problems.append(f"output {key!r} holds {str(item)[:80]!r}, not a URI")
    return found, problems


__all__ = ["IDENTITY_KEYS", "OUTPUT_KEY", "OutputUri", "asset_extra", "check_asset_keys", "output_uris"]
