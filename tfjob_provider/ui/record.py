"""The ``tfjob_record`` XCom, bounded by :data:`MAX_RECORD_BYTES`: :func:`observe` where the pods
were watched, :func:`build_record` where the task concludes (docs/concepts/ui-data.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Final

from tfjob_provider.clipping import clip
from tfjob_provider.constants import KIND
from tfjob_provider.kube.instances import PodInstance, instance_of

XCOM_RECORD: Final = "tfjob_record"
XCOM_CONN_ID: Final = "tfjob_conn_id"
RECORD_VERSION: Final = 1

#: The record's size limit once serialised (JSON); what does not fit is cut, logs first.
MAX_RECORD_BYTES: Final = 64 * 1024
#: Pod instance rows kept (current pods first, then gone ones); the rest are counted.
MAX_RECORD_PODS: Final = 300
#: Events kept (newest first); the rest are counted.
MAX_RECORD_EVENTS: Final = 30
#: Pods whose last log lines are kept (the culprits, then the deciding replica), lines kept of
#: each, characters kept of a line.
MAX_RECORD_LOGS: Final = 3
MAX_RECORD_LOG_LINES: Final = 40
MAX_RECORD_LINE_CHARS: Final = 300
#: Characters kept of a message (verdict, condition, event).
MAX_MESSAGE_CHARS: Final = 500
#: TFJob conditions kept (the latest).
MAX_CONDITIONS: Final = 10

#: Positions in a pod row (a JSON array, to keep 300 of them small).
POD_FIELDS: Final = PodInstance._fields
#: Positions in an event row.
EVENT_FIELDS: Final = ("time", "type", "reason", "object", "message", "count")


def iso(seconds: int | None) -> str | None:
    """Epoch seconds as ``2026-01-02T03:04:05Z``."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_iso() -> str:
    """The current UTC time, as :func:`iso` writes it."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any, limit: int = MAX_MESSAGE_CHARS) -> str | None:
    return clip(value, limit) if isinstance(value, str) and value else None


def tfjob_summary(tfjob: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The TFJob's identity, times and conditions (no spec, no annotations)."""
    if not isinstance(tfjob, Mapping):
        return None
    metadata, status = _mapping(tfjob.get("metadata")), _mapping(tfjob.get("status"))
    raw = status.get("conditions")
    conditions = [
        [
            _text(item.get("type")),
            _text(item.get("status")),
            _text(item.get("reason")),
            _text(item.get("message")),
            _text(item.get("lastTransitionTime") or item.get("lastUpdateTime")),
        ]
        for item in (raw if isinstance(raw, list) else [])
        if isinstance(item, Mapping)
    ]
    return {
        "uid": _text(metadata.get("uid")),
        "created": _text(metadata.get("creationTimestamp")),
        "start": _text(status.get("startTime")),
        "end": _text(status.get("completionTime")),
        "conditions": conditions[-MAX_CONDITIONS:],
    }


def owned_by(pods: Iterable[Mapping[str, Any]], uid: str | None) -> list[Mapping[str, Any]]:
    """The pods whose controller is the TFJob with UID ``uid`` (all when None); a pod left over
    from an earlier TFJob of the same name has another owner."""
    kept = []
    for pod in pods:
        owners = _mapping(pod.get("metadata")).get("ownerReferences")
        controller = [
            owner.get("uid")
            for owner in (owners if isinstance(owners, list) else [])
            if isinstance(owner, Mapping) and owner.get("controller")
        ]
        if uid is None or not controller or controller[0] == uid:
            kept.append(pod)
    return kept


def instances_of(pods: Iterable[Mapping[str, Any]]) -> list[PodInstance]:
    return [found for found in (instance_of(pod) for pod in pods) if found is not None]


def observe(
    tfjob: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]],
    *,
    earlier: Sequence[PodInstance] = (),
    earlier_dropped: int = 0,
    decided_at: str | None = None,
) -> dict[str, Any]:
    """What the waiter saw when the wait ended: JSON, at most :data:`MAX_RECORD_PODS` rows."""
    rows = [list(item) for item in [*instances_of(pods), *earlier]]
    return {
        "tfjob": tfjob_summary(tfjob),
        "pods": rows[:MAX_RECORD_PODS],
        "pods_more": max(len(rows) - MAX_RECORD_PODS, 0),
        "earlier_dropped": earlier_dropped,
        "decided_at": decided_at,
    }


def refreshed(
    observed: Mapping[str, Any] | None,
    tfjob: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]],
    *,
    now: int,
) -> dict[str, Any]:
    """``observed`` brought up to date by a read at the end of the task: the pods' current states
    replace the observed ones, an observed pod that is gone now is marked gone (ended ``now`` if
    it had not ended), and the TFJob's newer conditions and times are taken when it still exists."""
    seen = dict(observed or observe(None, ()))
    fresh = [list(item) for item in instances_of(pods)]
    keys = {(row[2], row[3]) for row in fresh}
    gone_at = POD_FIELDS.index("gone")
    finished_at = POD_FIELDS.index("finished")
    rows = []
    for row in seen.get("pods") or []:
        if not isinstance(row, list) or len(row) != len(POD_FIELDS) or (row[2], row[3]) in keys:
            continue
        if not row[gone_at]:
            row = [*row]
            row[gone_at] = True
            row[finished_at] = row[finished_at] if row[finished_at] is not None else now
        rows.append(row)
    rows = fresh + rows
    summary = tfjob_summary(tfjob)
    return {
        **seen,
        "tfjob": summary if summary is not None else seen.get("tfjob"),
        "pods": rows[:MAX_RECORD_PODS],
        "pods_more": int(seen.get("pods_more") or 0) + max(len(rows) - MAX_RECORD_PODS, 0),
    }


def _event_time(event: Mapping[str, Any]) -> Any:
    return next(
        (event[key] for key in ("lastTimestamp", "eventTime", "firstTimestamp") if event.get(key)),
        _mapping(event.get("metadata")).get("creationTimestamp"),
    )


def event_row(event: Mapping[str, Any]) -> list[Any]:
    """One core/v1 event as ``[time, type, reason, "kind/name", message, count]``."""
    involved = _mapping(event.get("involvedObject"))
    count = event.get("count")
    return [
        _text(_event_time(event), 40),
        _text(event.get("type"), 40),
        _text(event.get("reason"), 80),
        f"{str(involved.get('kind') or '?').lower()}/{involved.get('name') or '?'}",
        _text(str(event.get("message") or "").strip()),
        count if isinstance(count, int) and not isinstance(count, bool) else 1,
    ]


def events_about(
    events: Iterable[Mapping[str, Any]], *, job: str, pods: Iterable[str], limit: int
) -> tuple[list[list[Any]], int]:
    """The rows of the events about the TFJob ``job`` and the named pods, newest first, at most
    ``limit``; and how many more there were."""
    names = set(pods)
    about = []
    for event in events:
        involved = _mapping(event.get("involvedObject"))
        kind, name = involved.get("kind"), involved.get("name")
        if (kind == KIND and name == job) or (kind == "Pod" and name in names):
            about.append(event)
    about.sort(key=lambda event: str(_event_time(event) or ""), reverse=True)
    return [event_row(event) for event in about[:limit]], max(len(about) - limit, 0)


def kept_lines(text: str) -> list[str]:
    """The last lines of a log, as the record keeps them."""
    lines = text.rstrip("\n").splitlines()[-MAX_RECORD_LOG_LINES:]
    return [clip(line, MAX_RECORD_LINE_CHARS) for line in lines]


def build_record(
    *,
    name: str,
    namespace: str,
    uid: str | None,
    status: str,
    message: str,
    verdict: Mapping[str, Any] | None,
    observed: Mapping[str, Any] | None,
    events: Sequence[Mapping[str, Any]] = (),
    logs: Mapping[str, str] | None = None,
    try_number: int | None = None,
    rules: Mapping[str, Any] | None = None,
    written_at: str | None = None,
) -> dict[str, Any]:
    """The ``tfjob_record`` value; at most :data:`MAX_RECORD_BYTES` as JSON.

    :param verdict: ``Verdict.to_dict()`` of the outcome, or None.
    :param observed: :func:`observe` output from the waiter (None: nothing was seen).
    :param events: core/v1 events of the namespace (filtered to the job and its pods here).
    :param logs: log tails by pod name (the culprits' first, then the deciding replica's), cut here.
    """
    seen = dict(observed or {})
    pods = [row for row in seen.get("pods") or [] if isinstance(row, list) and len(row) == len(POD_FIELDS)]
    pod_names = {str(row[2]) for row in pods} | set((verdict or {}).get("culprits") or [])
    event_rows, events_more = events_about(events, job=name, pods=pod_names, limit=MAX_RECORD_EVENTS)
    kept = {pod: kept_lines(text) for pod, text in list((logs or {}).items())[:MAX_RECORD_LOGS]}
    record: dict[str, Any] = {
        "version": RECORD_VERSION,
        "name": name,
        "namespace": namespace,
        "uid": uid,
        "try_number": try_number,
        "written_at": written_at,
        "status": status,
        "message": clip(message, 1000),
        "verdict": None
        if verdict is None
        else {
            "state": verdict.get("state"),
            "reason": verdict.get("reason"),
            "retryable": verdict.get("retryable"),
            "message": _text(verdict.get("message"), 1000),
            "culprits": list(verdict.get("culprits") or []),
        },
        "decided_at": seen.get("decided_at"),
        "tfjob": seen.get("tfjob"),
        "pods": pods,
        "pods_more": int(seen.get("pods_more") or 0),
        "earlier_dropped": int(seen.get("earlier_dropped") or 0),
        "events": event_rows,
        "events_more": events_more,
        "logs": kept,
        "rules": dict(rules) if rules is not None else None,
    }
    return fit(record)


def size_of(record: Mapping[str, Any]) -> int:
    return len(json.dumps(record, separators=(",", ":")).encode())


def fit(record: dict[str, Any], limit: int = MAX_RECORD_BYTES) -> dict[str, Any]:
    """``record`` cut until it fits in ``limit`` bytes: log lines, then events, then gone pods, then rows."""
    while size_of(record) > limit:
        logs = record["logs"]
        longest = max(logs, key=lambda pod: len(logs[pod]), default=None)
        if longest is not None and logs[longest]:
            logs[longest] = logs[longest][len(logs[longest]) // 2 + 1 :]
            if not logs[longest]:
                del logs[longest]
        elif record["events"]:
            record["events_more"] += len(record["events"]) - len(record["events"]) // 2
            record["events"] = record["events"][: len(record["events"]) // 2]
        elif record["pods"]:
            cut = max(len(record["pods"]) // 10, 1)
            record["pods"] = record["pods"][:-cut]
            record["pods_more"] += cut
        else:
            break
    return record


__all__ = [
    "EVENT_FIELDS",
    "MAX_RECORD_BYTES",
    "MAX_RECORD_EVENTS",
    "MAX_RECORD_LOGS",
    "MAX_RECORD_LOG_LINES",
    "MAX_RECORD_PODS",
    "POD_FIELDS",
    "RECORD_VERSION",
    "XCOM_CONN_ID",
    "XCOM_RECORD",
    "build_record",
    "event_row",
    "events_about",
    "fit",
    "instances_of",
    "iso",
    "kept_lines",
    "now_iso",
    "observe",
    "owned_by",
    "refreshed",
    "size_of",
    "tfjob_summary",
]
