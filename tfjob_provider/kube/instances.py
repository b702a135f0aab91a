"""A pod instance as a small tuple (:class:`PodInstance`: no spec, env or message, whole epoch
seconds) and the bounded list of the instances a waiter saw go, for the TFJob tab's bars.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Final, NamedTuple

from tfjob_provider.constants import DEFAULT_CONTAINER_NAME, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE

#: Gone pod instances one wait remembers (the most recent are kept, the rest only counted):
#: about 250 bytes each in the tracker, so a crash-looping job costs a waiter at most ~6 KiB.
MAX_EARLIER_INSTANCES: Final = 24

_CANONICAL_TYPES: Final = {name.lower(): name for name in ("Chief", "Master", "Worker", "PS", "Evaluator")}


class PodInstance(NamedTuple):
    """One pod instance: which slot, when it was created/started/ended, and how it ended.

    ``gone`` is True for an instance that no longer exists (replaced or deleted).
    """

    replica_type: str
    replica_index: int
    name: str
    created: int | None
    started: int | None
    finished: int | None
    phase: str | None
    exit_code: int | None
    reason: str | None
    restarts: int
    node: str | None
    gone: bool = False


def epoch_seconds(value: Any) -> int | None:
    """``2026-01-02T03:04:05Z`` (RFC 3339, fractions and offsets allowed) as epoch seconds."""
    if not isinstance(value, str) or not value:
        return None
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp())


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _container(status: Mapping[str, Any]) -> Mapping[str, Any]:
    statuses = status.get("containerStatuses")
    if not isinstance(statuses, list):
        return {}
    found = [item for item in statuses if isinstance(item, Mapping)]
    named = [item for item in found if item.get("name") == DEFAULT_CONTAINER_NAME]
    return (named or found or [{}])[0]


def instance_of(
    pod: Mapping[str, Any], *, gone: bool = False, seen_gone_at: int | None = None
) -> PodInstance | None:
    """The instance a pod object describes; None for a pod without replica labels.

    :param gone: the pod no longer exists; an unfinished one ends at its ``deletionTimestamp``,
        else at ``seen_gone_at``.
    """
    metadata = _mapping(pod.get("metadata"))
    labels = _mapping(metadata.get("labels"))
    raw_type, raw_index = labels.get(LABEL_REPLICA_TYPE), labels.get(LABEL_REPLICA_INDEX)
    try:
        index = int(str(raw_index))
    except ValueError:
        return None
    if not raw_type:
        return None
    status = _mapping(pod.get("status"))
    container = _container(status)
    state = _mapping(container.get("state"))
    terminated = _mapping(state.get("terminated"))
    running = _mapping(state.get("running"))
    last = _mapping(_mapping(container.get("lastState")).get("terminated"))
    ended = terminated or ({} if running else last)
    finished = epoch_seconds(terminated.get("finishedAt"))
    if finished is None and gone:
        finished = epoch_seconds(metadata.get("deletionTimestamp")) or seen_gone_at
    restarts = _int(container.get("restartCount")) or 0
    return PodInstance(
        replica_type=_CANONICAL_TYPES.get(str(raw_type).lower(), str(raw_type)),
        replica_index=index,
        name=str(metadata.get("name") or "?"),
        created=epoch_seconds(metadata.get("creationTimestamp")),
        started=epoch_seconds(
            running.get("startedAt") or terminated.get("startedAt") or last.get("startedAt")
        ),
        finished=finished,
        phase=_text(status.get("phase")),
        exit_code=_int(ended.get("exitCode")),
        reason=_text(ended.get("reason"))
        or _text(_mapping(state.get("waiting")).get("reason"))
        or _text(status.get("reason")),
        restarts=restarts,
        node=_text(_mapping(pod.get("spec")).get("nodeName")),
        gone=gone,
    )


class EarlierInstances:
    """The gone instances of one job's pods, newest :data:`MAX_EARLIER_INSTANCES` kept, each with
    the UID of the TFJob that owned it (a job recreated under the same name starts afresh)."""

    __slots__ = ("dropped", "items")

    def __init__(self) -> None:
        self.items: list[tuple[str, PodInstance]] = []
        self.dropped = 0

    def add(self, owner: str, pod: Mapping[str, Any]) -> None:
        instance = instance_of(pod, gone=True, seen_gone_at=int(time.time()))
        if instance is None:
            return
        self.items.append((owner, instance))
        if len(self.items) > MAX_EARLIER_INSTANCES:
            del self.items[0]
            self.dropped += 1

    def of(self, owner: str | None) -> tuple[PodInstance, ...]:
        """The instances of the job with UID ``owner`` (all when None), oldest first."""
        return tuple(item for uid, item in self.items if owner is None or uid in ("", owner))


__all__ = ["MAX_EARLIER_INSTANCES", "EarlierInstances", "PodInstance", "epoch_seconds", "instance_of"]
