"""What a finished wait tells the user: the result dict of a success (:func:`result_dict`) and the
culprit-first report of a failure (:func:`failure_report`), from API dicts already fetched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from tfjob_provider.clipping import clip
from tfjob_provider.constants import (
    CHIEF_TYPES,
    DEFAULT_CONTAINER_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
)
from tfjob_provider.policy import Verdict

#: Culprits whose logs are fetched for a failure report; more would only repeat the same story.
MAX_CULPRIT_LOGS: Final = 3
#: Events shown in a failure report (the most recent ones).
MAX_REPORT_EVENTS: Final = 20

#: Event reasons worth showing even when the event type is Normal: they explain a pod's end.
_TELLING_NORMAL_REASONS: Final = frozenset({"Killing", "Preempting", "ExitedWithCode", "TFJobRestarting"})

_CANONICAL_TYPES: Final = {name.lower(): name for name in ("Chief", "Master", "Worker", "PS", "Evaluator")}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def pod_name(pod: Mapping[str, Any]) -> str:
    return str(_mapping(pod.get("metadata")).get("name") or "?")


def replica_of(pod: Mapping[str, Any]) -> tuple[str, int | None]:
    """``("Worker", 1)`` from the training operator's labels; ``("?", None)`` when they are missing."""
    labels = _mapping(_mapping(pod.get("metadata")).get("labels"))
    raw_type = str(labels.get(LABEL_REPLICA_TYPE) or "?")
    replica_type = _CANONICAL_TYPES.get(raw_type.lower(), raw_type)
    try:
        index: int | None = int(str(labels.get(LABEL_REPLICA_INDEX)))
    except ValueError:
        index = None
    return replica_type, index


def _tensorflow_status(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    statuses = _mapping(pod.get("status")).get("containerStatuses")
    if not isinstance(statuses, list):
        return {}
    for status in statuses:
        if isinstance(status, Mapping) and status.get("name") == DEFAULT_CONTAINER_NAME:
            return status
    return {}


@dataclass(frozen=True)
class PodFailure:
    """How one pod ended (or why it never started), as far as its status tells.

    :param replica: ``"Worker 1"`` — replica type and index.
    :param exit_code: the ``tensorflow`` container's exit code (current or last termination).
    :param reason: the Kubernetes reason: container ``terminated``/``waiting`` reason, else the
        pod's own (``Evicted``, ``NodeLost``, ``DeadlineExceeded``…).
    :param restarted_in_place: the container has been restarted by the kubelet since the failure
        shown, so its *previous* log holds the crash.
    """

    pod: str
    replica: str
    phase: str | None
    exit_code: int | None
    reason: str | None
    message: str | None
    restarts: int
    restarted_in_place: bool
    finished_at: str | None


def describe_pod(pod: Mapping[str, Any]) -> PodFailure:
    """Read the facts a failure report needs from one pod, defensively (missing fields are None)."""
    replica_type, index = replica_of(pod)
    status = _mapping(pod.get("status"))
    container = _tensorflow_status(pod)
    state = _mapping(container.get("state"))
    terminated = _mapping(state.get("terminated"))
    last_terminated = _mapping(_mapping(container.get("lastState")).get("terminated"))
    restarted_in_place = not terminated and bool(last_terminated)
    ended = terminated or last_terminated
    waiting = _mapping(state.get("waiting"))
    exit_code = ended.get("exitCode")
    reason = _text(ended.get("reason")) or _text(waiting.get("reason")) or _text(status.get("reason"))
    message = _text(ended.get("message")) or _text(waiting.get("message")) or _text(status.get("message"))
    restarts = container.get("restartCount")
    return PodFailure(
        pod=pod_name(pod),
        replica=replica_type if index is None else f"{replica_type} {index}",
        phase=_text(status.get("phase")),
        exit_code=exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None,
        reason=reason,
        message=message,
        restarts=restarts if isinstance(restarts, int) and not isinstance(restarts, bool) else 0,
        restarted_in_place=restarted_in_place,
        finished_at=_text(ended.get("finishedAt")),
    )


@dataclass(frozen=True)
class LogRequest:
    """A bounded log read the caller should make for the report: which pod, and whether the crash
    is in the *previous* container instance (restarted in place since)."""

    pod: str
    previous: bool


def logs_to_fetch(verdict: Verdict, pods: Sequence[Mapping[str, Any]]) -> list[LogRequest]:
    """The culprits whose log tails belong in the report, at most :data:`MAX_CULPRIT_LOGS`.

    Culprits whose pod no longer exists are skipped: there is no log left to read.
    """
    by_name = {pod_name(pod): pod for pod in pods}
    requests: list[LogRequest] = []
    for culprit in verdict.culprits:
        pod = by_name.get(culprit)
        if pod is None:
            continue
        requests.append(LogRequest(culprit, describe_pod(pod).restarted_in_place))
        if len(requests) == MAX_CULPRIT_LOGS:
            break
    return requests


def log_pod_for(pods: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The pod whose log the sync operator streams: Chief/Master 0, else Worker 0 (the operator's
    "job-role master"), else None."""
    by_replica = {replica_of(pod): pod for pod in pods}
    for replica_type in (*CHIEF_TYPES, "Worker"):
        pod = by_replica.get((replica_type, 0))
        if pod is not None:
            return pod
    return None


def _event_line(event: Mapping[str, Any]) -> str:
    involved = _mapping(event.get("involvedObject"))
    when = next(
        (str(event[key]) for key in ("lastTimestamp", "eventTime", "firstTimestamp") if event.get(key)), "?"
    )
    kind = str(involved.get("kind") or "?").lower()
    count = event.get("count")
    repeated = f" (x{count})" if isinstance(count, int) and count > 1 else ""
    message = clip(str(event.get("message") or "").strip())
    return f"{when} {kind}/{involved.get('name', '?')} {event.get('reason', '?')}{repeated}: {message}"


def relevant_events(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Warnings, plus the Normal events that explain a pod's end; the most recent last, bounded."""
    kept = [
        event
        for event in events
        if event.get("type") == "Warning" or event.get("reason") in _TELLING_NORMAL_REASONS
    ]
    return kept[-MAX_REPORT_EVENTS:]


def _replica_lines(verdict: Verdict) -> list[str]:
    lines = []
    for replica_type, summary in verdict.replicas.items():
        counts = summary.to_dict()
        lines.append(f"  {replica_type}: " + ", ".join(f"{key} {value}" for key, value in counts.items()))
    return lines


def _culprit_lines(number: int, facts: PodFailure, log_tail: str | None) -> list[str]:
    lines = [f"Culprit {number}: {facts.replica} — pod {facts.pod}"]
    lines.append(f"  exit code: {facts.exit_code if facts.exit_code is not None else 'none recorded'}")
    lines.append(f"  Kubernetes reason: {facts.reason or 'none recorded'}")
    if facts.message:
        lines.append(f"  termination message: {clip(facts.message.strip())}")
    if facts.phase:
        lines.append(f"  pod phase: {facts.phase}; container restarts: {facts.restarts}")
    if log_tail is not None:
        body = log_tail.rstrip("\n").splitlines()
        which = "previous container's" if facts.restarted_in_place else "container"
        lines.append(f"  last {len(body)} line(s) of the {which} log:")
        lines.extend(f"    | {clip(line)}" for line in body)
    return lines


def about_job(message: str, *, name: str, namespace: str, verb: str) -> str:
    """``message`` as is when it already names the TFJob, else ``"TFJob <ns>/<name> <verb>: <message>"``."""
    if f"{namespace}/{name}" in message:
        return message
    return f"TFJob {namespace}/{name} {verb}: {message}"


def failure_report(
    *,
    name: str,
    namespace: str,
    verdict: Verdict,
    pods: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]] = (),
    logs: Mapping[str, str] | None = None,
) -> str:
    """A culprit-first, multi-line account of why a TFJob failed, for the task log.

    :param verdict: the Failed verdict (its culprits come first, in the verdict's order).
    :param pods: the job's pods as the API returned them (culprits missing here are still named).
    :param events: the job's and its culprits' events, oldest first.
    :param logs: log tails by pod name, as already fetched (bounded) by the caller.
    """
    logs = logs or {}
    retry = "retryable — Airflow may retry the task" if verdict.retryable else "permanent — not retried"
    lines = [
        clip(about_job(verdict.message, name=name, namespace=namespace, verb="failed")),
        f"  reason {verdict.reason}; {retry}",
    ]
    by_name = {pod_name(pod): pod for pod in pods}
    for number, culprit in enumerate(verdict.culprits, start=1):
        pod = by_name.get(culprit)
        if pod is None:
            lines.append(f"Culprit {number}: pod {culprit} (no longer exists)")
            continue
        lines.extend(_culprit_lines(number, describe_pod(pod), logs.get(culprit)))
    if verdict.replicas:
        lines.append("Replicas:")
        lines.extend(_replica_lines(verdict))
    shown = relevant_events(events)
    if shown:
        lines.append("Events (most recent last):")
        lines.extend(f"  {_event_line(event)}" for event in shown)
    return "\n".join(lines)


def _status_time(tfjob: Mapping[str, Any] | None, key: str) -> str | None:
    return _text(_mapping(_mapping(tfjob).get("status")).get(key))


def job_times(
    tfjob: Mapping[str, Any] | None, *, verdict: Verdict | None, pods: Sequence[Mapping[str, Any]] = ()
) -> tuple[str | None, str | None]:
    """``(start_time, completion_time)`` as RFC 3339 strings.

    The training operator's ``status.startTime``/``completionTime`` when it has written them; a
    terminal verdict is often reached before the operator writes ``completionTime``, so the
    latest ``finishedAt`` of the deciding pods stands in for it then.
    """
    start = _status_time(tfjob, "startTime")
    completion = _status_time(tfjob, "completionTime")
    if completion is None and verdict is not None and verdict.terminal:
        finished = [
            facts.finished_at
            for facts in (describe_pod(pod) for pod in pods)
            if facts.pod in verdict.culprits and facts.finished_at
        ]
        completion = max(finished) if finished else None
    return start, completion


def result_dict(
    *,
    name: str,
    namespace: str,
    uid: str | None,
    verdict: Verdict,
    start_time: str | None = None,
    completion_time: str | None = None,
    outputs: Any = None,
    recreations: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The JSON-safe dict a successful task returns (its ``return_value`` XCom).

    Keys: ``name``, ``namespace``, ``uid``, ``state``, ``reason``, ``message``, ``start_time``,
    ``completion_time``, ``replicas`` (per replica type: active, succeeded, failed, pending,
    restarts), ``restart_count`` (in-place container restarts of the pods that exist now),
    ``recreations`` (per replica type: pods the training operator deleted and created again while
    the task watched — a recreated pod's ``restartCount`` starts at 0, so ``restart_count``
    cannot show them), ``recreation_count`` (their total), ``deciding_pods`` and ``outputs`` (the
    deciding replica's JSON termination message, :mod:`tfjob_provider._outcome.outputs`; None without one).
    """
    replicas = {replica_type: summary.to_dict() for replica_type, summary in verdict.replicas.items()}
    recreated = {replica_type: 0 for replica_type in replicas}
    for replica_type, count in (recreations or {}).items():
        recreated[replica_type] = recreated.get(replica_type, 0) + int(count)
    return {
        "name": name,
        "namespace": namespace,
        "uid": uid,
        "state": verdict.state.value,
        "reason": verdict.reason,
        "message": verdict.message,
        "start_time": start_time,
        "completion_time": completion_time,
        "replicas": replicas,
        "restart_count": sum(summary["restarts"] for summary in replicas.values()),
        "recreations": recreated,
        "recreation_count": sum(recreated.values()),
        "deciding_pods": list(verdict.culprits),
        "outputs": outputs,
    }


__all__ = [
    "MAX_CULPRIT_LOGS",
    "MAX_REPORT_EVENTS",
    "LogRequest",
    "PodFailure",
    "about_job",
    "describe_pod",
    "failure_report",
    "job_times",
    "log_pod_for",
    "logs_to_fetch",
    "pod_name",
    "relevant_events",
    "replica_of",
    "result_dict",
]
