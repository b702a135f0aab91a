"""Server-side printing (``as=Table``): the columns ``kubectl get`` shows for the served types."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from tfjob_sandbox.api.resource_types import (
    EVENTS,
    JOBS,
    JOBSETS,
    NAMESPACES,
    PODS,
    SERVICES,
    TFJOBS,
    ResourceType,
)

Column = dict[str, Any]
CellsFn = Callable[[dict[str, Any], datetime], list[Any]]


def wants_table(accept: str) -> bool:
    """Whether an ``Accept`` header prefers a meta.k8s.io Table (as kubectl's does)."""
    first = accept.split(",")[0]
    return "as=Table" in first and "g=meta.k8s.io" in first


def human_duration(seconds: float) -> str:
    """kube's ``duration.HumanDuration``: ``45s``, ``3m20s``, ``17m``, ``5h10m``, ``3d4h``, ``2y10d``."""
    if seconds < -1:
        return "<invalid>"
    total = max(0, int(seconds))
    minutes, hours, days = total // 60, total // 3600, total // 86400
    if total < 120:
        return f"{total}s"
    if minutes < 10:
        return f"{minutes}m{total % 60}s" if total % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 192:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 730:
        return f"{days}d"
    years = days // 365
    if years < 8:
        return f"{years}y{days % 365}d"
    return f"{years}y"


def _age(timestamp: str | None, now: datetime) -> str:
    if not timestamp:
        return "<unknown>"
    moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return human_duration((now - moment).total_seconds())


def _column(name: str, *, kind: str = "string", priority: int = 0, fmt: str = "") -> Column:
    return {"name": name, "type": kind, "format": fmt, "description": "", "priority": priority}


def _pod_status(pod: dict[str, Any]) -> str:
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or "Pending"
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        if state.get("waiting", {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif state.get("terminated"):
            terminated = state["terminated"]
            reason = terminated.get("reason") or f"ExitCode:{terminated.get('exitCode')}"
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return str(reason)


def _pod_cells(pod: dict[str, Any], now: datetime) -> list[Any]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    total = len((pod.get("spec") or {}).get("containers") or [])
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    meta = pod["metadata"]
    return [
        meta["name"],
        f"{ready}/{total}",
        _pod_status(pod),
        restarts,
        _age(meta.get("creationTimestamp"), now),
        (pod.get("status") or {}).get("podIP") or "<none>",
        (pod.get("spec") or {}).get("nodeName") or "<none>",
    ]


def _service_cells(service: dict[str, Any], now: datetime) -> list[Any]:
    spec = service.get("spec") or {}
    ports = (
        ",".join(f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in spec.get("ports") or []) or "<none>"
    )
    meta = service["metadata"]
    return [
        meta["name"],
        spec.get("type", "ClusterIP"),
        spec.get("clusterIP", "<none>"),
        "<none>",
        ports,
        _age(meta.get("creationTimestamp"), now),
    ]


def _namespace_cells(namespace: dict[str, Any], now: datetime) -> list[Any]:
    meta = namespace["metadata"]
    return [
        meta["name"],
        (namespace.get("status") or {}).get("phase", "Active"),
        _age(meta.get("creationTimestamp"), now),
    ]


def _event_cells(event: dict[str, Any], now: datetime) -> list[Any]:
    involved = event.get("involvedObject") or {}
    return [
        _age(event.get("lastTimestamp") or event["metadata"].get("creationTimestamp"), now),
        event.get("type", ""),
        event.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        event.get("message", ""),
    ]


def _tfjob_state(job: dict[str, Any]) -> str:
    conditions = (job.get("status") or {}).get("conditions") or []
    return str(conditions[-1].get("type", "")) if conditions else ""


def _tfjob_cells(job: dict[str, Any], now: datetime) -> list[Any]:
    meta = job["metadata"]
    return [meta["name"], _tfjob_state(job), _age(meta.get("creationTimestamp"), now)]


def _job_state(job: dict[str, Any]) -> str:
    """kubectl's STATUS of a Job: the terminal or interim condition that is True, else Running."""
    conditions = {c.get("type"): c.get("status") for c in (job.get("status") or {}).get("conditions") or []}
    for state in ("Complete", "Failed", "FailureTarget", "SuccessCriteriaMet", "Suspended"):
        if conditions.get(state) == "True":
            return state
    return "Running"


def _job_cells(job: dict[str, Any], now: datetime) -> list[Any]:
    meta, spec, status = job["metadata"], job.get("spec") or {}, job.get("status") or {}
    completions = spec.get("completions")
    succeeded = status.get("succeeded", 0)
    shown = (
        f"{succeeded}/{completions}"
        if completions is not None
        else f"{succeeded}/1 of {spec.get('parallelism', 1)}"
    )
    start, end = status.get("startTime"), status.get("completionTime")
    duration = ""
    if start:
        finish = datetime.fromisoformat(end.replace("Z", "+00:00")) if end else now
        duration = human_duration(
            (finish - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds()
        )
    return [meta["name"], _job_state(job), shown, duration, _age(meta.get("creationTimestamp"), now)]


def _jobset_cells(jobset: dict[str, Any], now: datetime) -> list[Any]:
    """JobSet's printer columns (its CRD's): TerminalState, Restarts, Completed, Suspended, Age."""
    meta, spec, status = jobset["metadata"], jobset.get("spec") or {}, jobset.get("status") or {}
    completed = next(
        (c.get("status") for c in status.get("conditions") or [] if c.get("type") == "Completed"), None
    )
    restarts = status.get("restarts")
    suspend = spec.get("suspend")
    return [
        meta["name"],
        status.get("terminalState"),
        None if restarts is None else str(restarts),
        completed,
        None if suspend is None else str(suspend).lower(),
        _age(meta.get("creationTimestamp"), now),
    ]


def _default_cells(obj: dict[str, Any], now: datetime) -> list[Any]:
    meta = obj["metadata"]
    return [meta["name"], _age(meta.get("creationTimestamp"), now)]


_NAME = _column("Name", fmt="name")
_AGE = _column("Age")
_LAYOUTS: dict[ResourceType, tuple[list[Column], CellsFn]] = {
    PODS: (
        [
            _NAME,
            _column("Ready"),
            _column("Status"),
            _column("Restarts", kind="integer"),
            _AGE,
            _column("IP", priority=1),
            _column("Node", priority=1),
        ],
        _pod_cells,
    ),
    SERVICES: (
        [_NAME, _column("Type"), _column("Cluster-IP"), _column("External-IP"), _column("Port(s)"), _AGE],
        _service_cells,
    ),
    NAMESPACES: ([_NAME, _column("Status"), _AGE], _namespace_cells),
    EVENTS: (
        [_column("Last Seen"), _column("Type"), _column("Reason"), _column("Object"), _column("Message")],
        _event_cells,
    ),
    TFJOBS: ([_NAME, _column("State"), _AGE], _tfjob_cells),
    JOBS: ([_NAME, _column("Status"), _column("Completions"), _column("Duration"), _AGE], _job_cells),
    JOBSETS: (
        [_NAME, *(_column(n) for n in ("TerminalState", "Restarts", "Completed", "Suspended")), _AGE],
        _jobset_cells,
    ),
}


def _partial_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def render_table(
    rt: ResourceType,
    objects: list[dict[str, Any]],
    *,
    list_metadata: dict[str, Any],
    include_object: str = "Metadata",
) -> dict[str, Any]:
    """A ``meta.k8s.io/v1`` Table of ``objects`` (``include_object``: ``None``/``Metadata``/``Object``)."""
    columns, cells = _LAYOUTS.get(rt, ([_NAME, _AGE], _default_cells))
    now = datetime.now(timezone.utc)
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": cells(obj, now)}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = _partial_metadata(obj)
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {
            key: value for key, value in list_metadata.items() if key in ("resourceVersion", "continue")
        },
        "columnDefinitions": columns,
        "rows": rows,
    }
