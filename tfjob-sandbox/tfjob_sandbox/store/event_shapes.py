"""Conversion between the core/v1 and the events.k8s.io/v1 shapes of one stored Event."""

from __future__ import annotations

from typing import Any

_RENAMES_CORE_TO_V1 = {
    "involvedObject": "regarding",
    "message": "note",
    "reportingComponent": "reportingController",
    "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp",
    "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount",
}
_RENAMES_V1_TO_CORE = {new: old for old, new in _RENAMES_CORE_TO_V1.items()}


def core_to_events_v1(event: dict[str, Any]) -> dict[str, Any]:
    """The events.k8s.io/v1 view of a stored core/v1 Event (a new dict; the input is not modified)."""
    converted: dict[str, Any] = {}
    for key, value in event.items():
        converted[_RENAMES_CORE_TO_V1.get(key, key)] = value
    converted["apiVersion"] = "events.k8s.io/v1"
    converted["kind"] = "Event"
    return converted


def events_v1_to_core(event: dict[str, Any]) -> dict[str, Any]:
    """The core/v1 shape of an events.k8s.io/v1 Event body (for creates through that API)."""
    converted: dict[str, Any] = {}
    for key, value in event.items():
        converted[_RENAMES_V1_TO_CORE.get(key, key)] = value
    converted["apiVersion"] = "v1"
    converted["kind"] = "Event"
    return converted
