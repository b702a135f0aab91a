"""The TFJob tab's VIEW JSON, from the task's record, a live read, or both merged. Pure.

:class:`JobData` is what is known of one TFJob (every pod instance as a
:class:`~tfjob_provider.kube.instances.PodInstance`); :func:`from_record` and :func:`with_live`
make one, :func:`view` turns it into the dict ``/api/view`` returns. A live read adds to the
record and never removes from it, so a finished TFJob looks the same either way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from tfjob_provider.kube.instances import PodInstance, epoch_seconds, instance_of
from tfjob_provider.policy import Rules, decide
from tfjob_provider.ui.record import EVENT_FIELDS, POD_FIELDS, events_about, iso, owned_by, tfjob_summary

#: Replica types in the order the tab lists them.
TYPE_ORDER: Final = ("Chief", "Master", "PS", "Worker", "Evaluator")
#: Kubernetes reasons of a pod that ended for a cause outside the program (retryable).
_RETRYABLE_REASONS: Final = frozenset({"Evicted", "Preempted", "NodeLost", "Shutdown", "Terminated"})
OUTCOMES: Final = ("succeeded", "failed_permanent", "failed_retryable", "deleted", "running")
VIEW_STATUSES: Final = ("no_tfjob", "not_submitted", "live", "record")


@dataclass(frozen=True, kw_only=True)
class JobData:
    """Everything the tab shows about one TFJob, whatever it was read from."""

    namespace: str
    name: str
    uid: str | None = None
    try_number: int | None = None
    tfjob: Mapping[str, Any] | None = None
    instances: tuple[PodInstance, ...] = ()
    verdict: Mapping[str, Any] | None = None
    decided_at: str | None = None
    events: tuple[Sequence[Any], ...] = ()
    events_more: int = 0
    logs_kept: Mapping[str, Sequence[str]] = field(default_factory=dict)
    live_pods: frozenset[str] = frozenset()
    rules: Rules = field(default_factory=Rules)
    dashboard_url: str | None = None
    earlier_dropped: int = 0
    written_at: str | None = None


def _row_instance(row: Any) -> PodInstance | None:
    if not isinstance(row, list) or len(row) != len(POD_FIELDS):
        return None
    try:
        return PodInstance(*row)
    except TypeError:
        return None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _rules(raw: Any) -> Rules:
    try:
        return Rules.from_dict(raw) if isinstance(raw, Mapping) else Rules()
    except (TypeError, ValueError):
        return Rules()


def from_record(record: Mapping[str, Any], *, dashboard_url: str | None = None) -> JobData:
    """The data a ``tfjob_record`` XCom holds (malformed parts are left out, never raised on)."""
    rows = _list(record.get("pods"))
    instances = tuple(found for found in map(_row_instance, rows) if found is not None)
    events = _list(record.get("events"))
    raw_logs = record.get("logs")
    logs: Mapping[str, Any] = raw_logs if isinstance(raw_logs, Mapping) else {}
    try_number = record.get("try_number")
    return JobData(
        namespace=str(record.get("namespace") or ""),
        name=str(record.get("name") or ""),
        uid=record.get("uid") if isinstance(record.get("uid"), str) else None,
        try_number=try_number if isinstance(try_number, int) else None,
        tfjob=record.get("tfjob") if isinstance(record.get("tfjob"), Mapping) else None,
        instances=instances,
        verdict=record.get("verdict") if isinstance(record.get("verdict"), Mapping) else None,
        decided_at=record.get("decided_at") if isinstance(record.get("decided_at"), str) else None,
        events=tuple(row for row in events if isinstance(row, list) and len(row) == len(EVENT_FIELDS)),
        events_more=int(record.get("events_more") or 0),
        logs_kept={
            str(pod): [str(line) for line in lines] for pod, lines in logs.items() if isinstance(lines, list)
        },
        rules=_rules(record.get("rules")),
        dashboard_url=dashboard_url,
        earlier_dropped=int(record.get("earlier_dropped") or 0),
        written_at=record.get("written_at") if isinstance(record.get("written_at"), str) else None,
    )


def _gone(items: Sequence[PodInstance], data: JobData) -> list[PodInstance]:
    """``items`` (recorded instances the cluster no longer has) marked gone; one that had not
    ended ends when the record was written (when it was last seen), else at the verdict."""
    last_seen = epoch_seconds(data.written_at) or epoch_seconds(data.decided_at)
    return [
        item
        if item.gone
        else item._replace(gone=True, finished=item.finished if item.finished is not None else last_seen)
        for item in items
    ]


def without_its_tfjob(data: JobData) -> JobData:
    """``data`` once its TFJob is gone (deleted, or another object under its name): the pods went
    with it, so every recorded instance is gone."""
    return dataclasses.replace(data, instances=tuple(_gone(data.instances, data)))


def with_live(
    base: JobData,
    *,
    tfjob: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]] | None,
    max_events: int = 100,
) -> JobData:
    """``base`` with what a live read showed: live pods replace their recorded instances (same
    name and creation time), recorded ones the API no longer has stay, as gone; without a
    recorded verdict the verdict is judged from the live state."""
    uid = base.uid or (tfjob_summary(tfjob) or {}).get("uid")
    live = [found for found in (instance_of(pod) for pod in owned_by(pods, uid)) if found is not None]
    keys = {(item.name, item.created) for item in live}
    kept = _gone([item for item in base.instances if (item.name, item.created) not in keys], base)
    instances = tuple(sorted([*kept, *live], key=lambda item: (item.created or 0, item.name)))
    verdict = base.verdict
    if verdict is None:
        judged = decide(tfjob, pods, rules=base.rules)
        verdict = {
            key: judged.to_dict()[key] for key in ("state", "reason", "retryable", "message", "culprits")
        }
    names = {item.name for item in instances}
    event_rows: tuple[Sequence[Any], ...] = base.events
    events_more = base.events_more
    if events is not None:
        rows, events_more = events_about(events, job=base.name, pods=names, limit=max_events)
        event_rows = tuple(rows)
    summary = tfjob_summary(tfjob)
    return dataclasses.replace(
        base,
        uid=base.uid or (summary or {}).get("uid"),
        tfjob=summary,
        instances=instances,
        verdict=verdict,
        events=event_rows,
        events_more=events_more,
        live_pods=frozenset(item.name for item in live),
    )


# --- the view ---------------------------------------------------------------------------------


def outcome_of(item: PodInstance, rules: Rules) -> str:
    """How a pod instance ended, as the timeline colours it (see :data:`OUTCOMES`)."""
    if item.exit_code == 0 or item.phase == "Succeeded":
        return "succeeded"
    failed = item.exit_code is not None or item.phase == "Failed"
    if not failed:
        if item.gone:
            return "deleted"
        return "running" if item.finished is None else "deleted"
    if item.reason == "OOMKilled":
        retryable = rules.oom_is_retryable
    elif item.reason in _RETRYABLE_REASONS:
        retryable = True
    else:
        retryable = item.exit_code is None or rules.is_retryable_exit_code(item.exit_code)
    return "failed_retryable" if retryable else "failed_permanent"


def _type_rank(replica_type: str) -> int:
    return TYPE_ORDER.index(replica_type) if replica_type in TYPE_ORDER else len(TYPE_ORDER)


def _slots(instances: Sequence[PodInstance]) -> dict[tuple[str, int], list[PodInstance]]:
    slots: dict[tuple[str, int], list[PodInstance]] = {}
    for item in sorted(instances, key=lambda item: (item.created or 0, item.gone is False)):
        slots.setdefault((item.replica_type, item.replica_index), []).append(item)
    return dict(sorted(slots.items(), key=lambda entry: (_type_rank(entry[0][0]), entry[0][0], entry[0][1])))


def _seconds_between(start: str | None, end: str | None) -> int | None:
    begun, ended = epoch_seconds(start), epoch_seconds(end)
    return None if begun is None or ended is None else max(ended - begun, 0)


def _header(data: JobData) -> dict[str, Any]:
    summary = data.tfjob or {}
    start = summary.get("start") or summary.get("created")
    end = summary.get("end")
    return {
        "namespace": data.namespace,
        "name": data.name,
        "uid": data.uid or summary.get("uid"),
        "try_number": data.try_number,
        "start": start,
        "end": end,
        "duration_seconds": _seconds_between(start, end),
        "conditions": [
            dict(zip(("type", "status", "reason", "message", "time"), item, strict=False))
            for item in summary.get("conditions") or []
            if isinstance(item, list)
        ],
        "dashboard_url": data.dashboard_url,
    }


def _verdict(data: JobData) -> dict[str, Any] | None:
    if data.verdict is None:
        return None
    return {
        "state": data.verdict.get("state"),
        "reason": data.verdict.get("reason"),
        "retryable": data.verdict.get("retryable"),
        "message": data.verdict.get("message"),
        "decided_at": data.decided_at,
        "deciding": list(data.verdict.get("culprits") or []),
    }


def _row_phase(item: PodInstance, rules: Rules, job_end: int | None) -> tuple[str | None, str | None]:
    """The phase a replica row shows and a note on it: a pod whose bar is ``deleted`` (it was
    removed before it ended by itself) says so, "after the job ended" when it went at or after
    ``job_end``, instead of the phase it had when it was last seen."""
    if outcome_of(item, rules) != "deleted":
        return item.phase, None
    ended_after = job_end is not None and item.finished is not None and item.finished >= job_end
    return "Deleted", "after the job ended" if ended_after else None


def _replicas(
    slots: Mapping[tuple[str, int], list[PodInstance]],
    *,
    deciding: set[str],
    failed: bool,
    max_rows: int,
    rules: Rules,
    job_end: int | None,
) -> dict[str, Any]:
    groups: dict[str, dict[str, Any]] = {}
    shown = 0
    for (replica_type, index), items in slots.items():
        group = groups.setdefault(replica_type, {"type": replica_type, "count": 0, "rows": []})
        group["count"] += 1
        if shown >= max_rows:
            continue
        shown += 1
        last = items[-1]
        phase, phase_note = _row_phase(last, rules, job_end)
        group["rows"].append(
            {
                "type": replica_type,
                "index": index,
                "pod": last.name,
                "phase": phase,
                "phase_note": phase_note,
                "exit_code": last.exit_code,
                "reason": last.reason,
                "restarts": last.restarts,
                "recreations": len(items) - 1,
                "node": last.node,
                "start": iso(last.started),
                "end": iso(last.finished),
                "deciding": last.name in deciding,
                "culprit": failed and last.name in deciding,
            }
        )
    return {"groups": list(groups.values()), "more": max(len(slots) - max_rows, 0)}


def _timeline(data: JobData, slots: Mapping[tuple[str, int], list[PodInstance]]) -> dict[str, Any]:
    lanes = []
    starts: list[int] = []
    ends: list[int] = []
    for (replica_type, index), items in slots.items():
        bars = []
        for item in items:
            starts.extend(moment for moment in (item.created, item.started) if moment is not None)
            ends.extend(moment for moment in (item.finished,) if moment is not None)
            bars.append(
                {
                    "pod": item.name,
                    "created": iso(item.created),
                    "running": iso(item.started),
                    "end": iso(item.finished),
                    "outcome": outcome_of(item, data.rules),
                    "exit_code": item.exit_code,
                    "reason": item.reason,
                    "restarts": item.restarts,
                }
            )
        lanes.append({"type": replica_type, "index": index, "bars": bars})
    decided = epoch_seconds(data.decided_at)
    if decided is not None:
        ends.append(decided)
    return {
        "start": iso(min(starts)) if starts else None,
        "end": iso(max(ends)) if ends else None,
        "verdict_at": data.decided_at,
        "lanes": lanes,
    }


def view(
    data: JobData,
    *,
    status: str,
    message: str | None,
    running: bool,
    max_rows: int = 500,
    max_events: int = 100,
) -> dict[str, Any]:
    """The VIEW JSON of ``data`` (``status`` ``live`` or ``record``)."""
    slots = _slots(data.instances)
    deciding = set((data.verdict or {}).get("culprits") or [])
    failed = (data.verdict or {}).get("state") == "Failed"
    events = [dict(zip(EVENT_FIELDS, row, strict=False)) for row in data.events[:max_events]]
    for item in events:
        item.pop("count", None)
    latest = [(key, items[-1]) for key, items in slots.items()]
    log_pods = [
        {"type": replica_type, "index": index, "pod": last.name, "live": last.name in data.live_pods}
        for (replica_type, index), last in latest
    ]
    return {
        "status": status,
        "message": message,
        "running": running,
        "tfjob": _header(data),
        "verdict": _verdict(data),
        "replicas": _replicas(
            slots,
            deciding=deciding,
            failed=failed,
            max_rows=max_rows,
            rules=data.rules,
            job_end=epoch_seconds((data.tfjob or {}).get("end")) or epoch_seconds(data.decided_at),
        ),
        "timeline": _timeline(data, slots),
        "events": {
            "items": events,
            "more": data.events_more + max(len(data.events) - max_events, 0),
        },
        "logs": {
            "pods": log_pods[:max_rows],
            "kept": {pod: list(lines) for pod, lines in data.logs_kept.items()},
        },
    }


def empty_view(status: str, message: str, *, running: bool = False) -> dict[str, Any]:
    """The VIEW JSON of a task without a TFJob to show (``no_tfjob``, ``not_submitted``)."""
    return {
        "status": status,
        "message": message,
        "running": running,
        "tfjob": None,
        "verdict": None,
        "replicas": {"groups": [], "more": 0},
        "timeline": {"start": None, "end": None, "verdict_at": None, "lanes": []},
        "events": {"items": [], "more": 0},
        "logs": {"pods": [], "kept": {}},
    }


__all__ = [
    "OUTCOMES",
    "TYPE_ORDER",
    "VIEW_STATUSES",
    "JobData",
    "empty_view",
    "from_record",
    "outcome_of",
    "view",
    "with_live",
    "without_its_tfjob",
]
