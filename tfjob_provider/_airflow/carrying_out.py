"""Carrying out a task's ending in Airflow, for the operator and the sensor: the fresh read, the
failure report, the deletion and the exception (:func:`decide_ending`, :func:`carry_out`), as
:func:`tfjob_provider._outcome.task_ending.conclude` decides (docs/adr/0007-one-decision-for-every-waiter.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from airflow.providers.common.compat.sdk import (
    AirflowException,
    AirflowFailException,
    AirflowSensorTimeout,
    AirflowSkipException,
    AirflowTaskTimeout,
)

from tfjob_provider._outcome.report import MAX_CULPRIT_LOGS, failure_report, logs_to_fetch
from tfjob_provider._outcome.task_ending import (
    Ending,
    OnFinishAction,
    Role,
    conclude,
    needs_fresh_read,
    needs_report,
)
from tfjob_provider._outcome.wait import WaitOutcome, WaitTarget, has_succeeded, uid_of, utc_now
from tfjob_provider.kube.errors import (
    ForbiddenError,
    InvalidError,
    KubeApiError,
    NotFoundError,
    TFJobNotServedError,
)
from tfjob_provider.kube.kinds import TFJOB, JobKind, kind_of_engine
from tfjob_provider.ui.record import XCOM_RECORD
from tfjob_provider.ui.recording import gather_record

if TYPE_CHECKING:
    from tfjob_provider.kube.sync_client import SyncTFJobClient


class TaskLog(Protocol):
    """The logger shape needed here: Airflow 3 hands tasks a structlog logger, not a
    :class:`logging.Logger`; both accept ``info``/``warning`` with %-style arguments."""

    def info(self, event: str, *args: Any) -> Any: ...

    def warning(self, event: str, *args: Any) -> Any: ...

    def error(self, event: str, *args: Any) -> Any: ...


def outcome_from_event(task_id: str, event: Mapping[str, Any]) -> WaitOutcome:
    """The trigger's event as a :class:`WaitOutcome`; an unreadable one (a trigger of another
    provider version, a hand-made event) fails the try with retries, naming the task and event."""
    try:
        return WaitOutcome.from_event(event)
    except ValueError as error:
        raise AirflowException(f"{task_id}: unreadable TFJob trigger event {event!r}: {error}") from None


def read_job(
    client: SyncTFJobClient, *, name: str, namespace: str, kind: JobKind = TFJOB
) -> tuple[Mapping[str, Any] | None, list[dict[str, Any]]]:
    """The TFJob (None if absent) and its pods, straight from the API server, pods first
    (:data:`~tfjob_provider._outcome.wait.FRESH_READ_ORDER`); a JobSet as its TFJob view."""
    return client.run(kind.read(client.session, name, namespace=namespace))


def judge_confirmed(
    client: SyncTFJobClient,
    target: WaitTarget,
    tfjob: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]],
    *,
    deleted: bool = False,
) -> WaitOutcome | None:
    """``target.judge`` a state, confirmed on a fresh read when the outcome could be stream skew
    (:meth:`~tfjob_provider._outcome.wait.WaitTarget.needs_confirmation`) — for every sync waiter."""
    outcome = target.judge(tfjob, pods, now=utc_now(), deleted=deleted)
    if target.needs_confirmation(outcome):
        kind = kind_of_engine(target.engine)
        tfjob, pods = read_job(client, name=target.name, namespace=target.namespace, kind=kind)
        outcome = target.confirm(outcome, tfjob, pods, now=utc_now())
    return outcome


class translated_api_errors:
    """Map Kubernetes API errors raised in the block to the Airflow exception that fits: the ones
    a retry cannot fix (TFJobs not served, forbidden, object rejected) to AirflowFailException,
    the rest to AirflowException (retryable)."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _tb: TracebackType | None
    ) -> None:
        if not isinstance(error, KubeApiError):
            return
        if isinstance(error, (TFJobNotServedError, ForbiddenError, InvalidError)):
            raise AirflowFailException(f"{self.task_id}: {error.message}") from error
        raise AirflowException(f"{self.task_id}: Kubernetes API request failed: {error.message}") from error


def gather_failure_report(
    client: SyncTFJobClient,
    outcome: WaitOutcome,
    *,
    log_tail_lines: int,
    kept_logs: dict[str, str] | None = None,
    kind: JobKind = TFJOB,
) -> str:
    """Fetch pods, culprit log tails and events, and word the culprit-first failure report;
    the log tails are also put in ``kept_logs`` (for the ``tfjob_record``)."""
    assert outcome.verdict is not None
    verdict = outcome.verdict
    notes: list[str] = []
    try:
        pods = client.run(kind.list_pods(client.session, outcome.name, namespace=outcome.namespace))
    except KubeApiError as error:
        pods = []
        notes.append(f"(could not list the pods: {error.message})")
    logs: dict[str, str] = {}
    if log_tail_lines > 0:
        for wanted in logs_to_fetch(verdict, pods):
            try:
                logs[wanted.pod] = client.read_log_tail(
                    wanted.pod,
                    namespace=outcome.namespace,
                    tail_lines=log_tail_lines,
                    previous=wanted.previous,
                )
            except KubeApiError as error:
                notes.append(f"(could not read the log of {wanted.pod}: {error.message})")
    if kept_logs is not None:
        kept_logs.update(logs)
    try:
        events = client.list_events(
            namespace=outcome.namespace,
            involved_names=[outcome.name, *verdict.culprits[:MAX_CULPRIT_LOGS]],
        )
    except KubeApiError as error:
        events = []
        notes.append(f"(could not list the events: {error.message})")
    report = failure_report(
        name=outcome.name, namespace=outcome.namespace, verdict=verdict, pods=pods, events=events, logs=logs
    )
    return "\n".join([report, *notes])


def delete_if_ours(
    client: SyncTFJobClient,
    *,
    name: str,
    namespace: str,
    uid: str | None,
    log: TaskLog,
    why: str,
    keep_succeeded: bool = True,
    kind: JobKind = TFJOB,
) -> bool:
    """Delete the TFJob unless another object (another UID) has taken its name; True if deleted.

    The TFJob is read first (through the client's retry budget).  With ``keep_succeeded`` — every
    deletion that follows an error, a timeout or a kill — a TFJob the training operator marked
    ``Succeeded`` is kept: its training is done, and the next try adopts it instead of training
    again.  A TFJob whose state cannot be read is never deleted.

    Errors are logged, not raised: deleting is the cleanup after an outcome that is already
    decided, and must not hide it.
    """
    try:
        current = client.run(kind.get(client.session, name, namespace=namespace))
        if uid is not None and uid_of(current) != uid:
            log.info(
                "Not deleting %s %s/%s: it is another object now (uid %s)",
                kind.noun,
                namespace,
                name,
                uid_of(current),
            )
            return False
        if keep_succeeded and has_succeeded(current):
            log.info(
                "Not deleting %s %s/%s (%s): %s marked it %s",
                kind.noun,
                namespace,
                name,
                why,
                "the training operator" if kind is TFJOB else "the JobSet controller",
                "Succeeded" if kind is TFJOB else "Completed",
            )
            return False
        deleted = client.run(kind.delete(client.session, name, namespace=namespace))
    except NotFoundError:
        return False
    except KubeApiError as error:
        log.warning("Could not delete %s %s/%s (%s): %s", kind.noun, namespace, name, why, error.message)
        return False
    if deleted:
        log.info("Deleted %s %s/%s (uid %s): %s", kind.noun, namespace, name, uid, why)
    return deleted


def settle(
    client: SyncTFJobClient, target: WaitTarget, outcome: WaitOutcome
) -> tuple[WaitOutcome, str | None]:
    """The outcome to conclude, and why the TFJob could not be read (None if it could).

    After an ``error`` or a ``timeout`` (:func:`~tfjob_provider._outcome.task_ending.needs_fresh_read`) the
    TFJob is read again, pods first, through the client's retry budget: a job that finished
    meanwhile — during an API outage, say — ends the task by its own verdict (a success is a
    success, never deleted, never trained again).  If that read fails too, the reason is returned
    so the ending keeps the TFJob in place.
    """
    if not needs_fresh_read(outcome):
        return outcome, None
    try:
        kind = kind_of_engine(target.engine)
        tfjob, pods = read_job(client, name=target.name, namespace=target.namespace, kind=kind)
    except KubeApiError as error:
        return outcome, error.message
    fresh = target.judge(tfjob, pods, now=utc_now())
    if fresh is not None and fresh.status in ("success", "failed"):
        return fresh, None
    return outcome, None


def decide_ending(
    client: SyncTFJobClient,
    target: WaitTarget,
    outcome: WaitOutcome,
    *,
    role: Role,
    on_finish_action: OnFinishAction = "keep",
    soft_fail: bool = False,
    log_tail_lines: int = 100,
    observed: Mapping[str, Any] | None = None,
    try_number: int | None = None,
) -> tuple[WaitOutcome, Ending]:
    """Gather what :func:`~tfjob_provider._outcome.task_ending.conclude` needs (fresh read, failure
    report) and decide; returns the outcome actually concluded (it may be newer than ``outcome``).
    The ending's XComs include the ``tfjob_record`` (``observed``: what the waiter last saw)."""
    outcome, unread = settle(client, target, outcome)
    logs: dict[str, str] = {}
    report = (
        gather_failure_report(
            client, outcome, log_tail_lines=log_tail_lines, kept_logs=logs, kind=kind_of_engine(target.engine)
        )
        if needs_report(outcome)
        else None
    )
    ending = conclude(
        outcome,
        role=role,
        on_finish_action=on_finish_action,
        soft_fail=soft_fail,
        report=report,
        state_unread=unread,
    )
    record = gather_record(
        client,
        target,
        outcome,
        observed=observed,
        logs=logs,
        try_number=try_number,
        cluster_readable=unread is None,
    )
    return outcome, replace(ending, xcoms={**ending.xcoms, XCOM_RECORD: record})


def exception_for(ending: Ending, *, role: Role) -> BaseException:
    """The Airflow exception that ends a task as ``ending.kind`` says (not for ``success``)."""
    if ending.kind == "failed":
        return AirflowFailException(ending.message)
    if ending.kind == "timeout":
        return (
            AirflowTaskTimeout(ending.message) if role == "operator" else AirflowSensorTimeout(ending.message)
        )
    if ending.kind == "skip":
        return AirflowSkipException(ending.message)
    return AirflowException(ending.message)


def carry_out(
    client: SyncTFJobClient,
    outcome: WaitOutcome,
    ending: Ending,
    *,
    role: Role,
    ti: Any,
    log: TaskLog,
    kind: JobKind = TFJOB,
) -> dict[str, Any] | None:
    """Log, push the XComs, delete if decided, then return the result or raise the exception."""
    if ending.report is not None:
        log.error("%s", ending.report)
    elif ending.kind == "success":
        log.info("%s", ending.message)
    for key, value in ending.xcoms.items():
        ti.xcom_push(key=key, value=value)
    if ending.delete_reason is not None:
        delete_if_ours(
            client,
            name=outcome.name,
            namespace=outcome.namespace,
            uid=outcome.uid,
            log=log,
            why=ending.delete_reason,
            keep_succeeded=ending.kind != "success",
            kind=kind,
        )
    if ending.kind == "success":
        return ending.result
    raise exception_for(ending, role=role)


__all__ = [
    "TaskLog",
    "carry_out",
    "decide_ending",
    "delete_if_ours",
    "exception_for",
    "gather_failure_report",
    "judge_confirmed",
    "read_job",
    "settle",
    "translated_api_errors",
]
