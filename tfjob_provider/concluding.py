"""Turning a finished wait into Airflow's language: a report in the log, a deletion, an exception.

Why a module of its own: the operator concludes in two places (in its worker after a
synchronous wait, and in ``execute_complete`` after its trigger fired) and the sensor in three
(poke, reschedule, deferrable); they must read the same evidence, word it the same way
(:mod:`tfjob_provider.reporting`) and map it — and any API error on the way — to the same
exceptions.  It sits beside the ``operators`` and ``sensors`` packages rather than in either,
because the import-linter contract keeps those two independent of each other:

* Failed and not retryable → :class:`~airflow.sdk.exceptions.AirflowFailException` (retries are
  not burnt on a bug in the training program or a bad image);
* Failed and retryable → :class:`~airflow.sdk.exceptions.AirflowException` (Airflow retries).

Evidence gathering is best effort and bounded: at most :data:`~tfjob_provider.reporting.MAX_CULPRIT_LOGS`
log tails of ``log_tail_lines`` lines, one events list per culprit; an API error while gathering
is noted in the report, never allowed to replace the real failure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException

from tfjob_provider.kube import operations as ops
from tfjob_provider.kube.errors import (
    ForbiddenError,
    InvalidError,
    KubeApiError,
    NotFoundError,
    TFJobNotServedError,
)
from tfjob_provider.reporting import MAX_CULPRIT_LOGS, about_job, failure_report, logs_to_fetch
from tfjob_provider.wait_outcome import WaitOutcome, WaitTarget, uid_of, utc_now

if TYPE_CHECKING:
    from tfjob_provider.kube.sync_client import SyncTFJobClient


class TaskLog(Protocol):
    """The logger shape needed here: Airflow 3 hands tasks a structlog logger, not a
    :class:`logging.Logger`; both accept ``info``/``warning`` with %-style arguments."""

    def info(self, event: str, *args: Any) -> Any: ...

    def warning(self, event: str, *args: Any) -> Any: ...


def outcome_from_event(task_id: str, event: Mapping[str, Any]) -> WaitOutcome:
    """The trigger's event as a :class:`WaitOutcome`; an unreadable one (a trigger of another
    provider version, a hand-made event) fails the try with retries, naming the task and event."""
    try:
        return WaitOutcome.from_event(event)
    except ValueError as error:
        raise AirflowException(f"{task_id}: unreadable TFJob trigger event {event!r}: {error}") from None


def read_job(
    client: SyncTFJobClient, *, name: str, namespace: str
) -> tuple[Mapping[str, Any] | None, list[dict[str, Any]]]:
    """The TFJob (None if absent) and its pods, straight from the API server, pods first
    (:data:`~tfjob_provider.wait_outcome.FRESH_READ_ORDER`)."""
    return client.run(ops.read_job(client.session, name, namespace=namespace))


def judge_confirmed(
    client: SyncTFJobClient,
    target: WaitTarget,
    tfjob: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]],
    *,
    deleted: bool = False,
) -> WaitOutcome | None:
    """``target.judge`` a state, confirmed on a fresh read when the outcome could be stream skew
    (:meth:`~tfjob_provider.wait_outcome.WaitTarget.needs_confirmation`) — for every sync waiter."""
    outcome = target.judge(tfjob, pods, now=utc_now(), deleted=deleted)
    if target.needs_confirmation(outcome):
        tfjob, pods = read_job(client, name=target.name, namespace=target.namespace)
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


def gather_failure_report(client: SyncTFJobClient, outcome: WaitOutcome, *, log_tail_lines: int) -> str:
    """Fetch pods, culprit log tails and events, and word the culprit-first failure report."""
    assert outcome.verdict is not None
    verdict = outcome.verdict
    notes: list[str] = []
    try:
        pods = client.list_job_pods(outcome.name, namespace=outcome.namespace)
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


#: XCom key of :func:`failure_summary`, pushed by a task that fails because its TFJob failed.
XCOM_FAILURE = "tfjob_failure"


def failure_summary(outcome: WaitOutcome, report: str) -> dict[str, Any]:
    """The machine-readable side of a failure, for XCom ``tfjob_failure``: downstream tasks
    (``trigger_rule="all_done"``) and failure callbacks can route on ``reason``/``retryable``
    without parsing logs."""
    verdict = outcome.verdict
    return {
        "name": outcome.name,
        "namespace": outcome.namespace,
        "uid": outcome.uid,
        "reason": verdict.reason if verdict is not None else None,
        "retryable": verdict.retryable if verdict is not None else True,
        "message": outcome.message,
        "culprits": list(verdict.culprits) if verdict is not None else [],
        "report": report,
    }


def failure_exception(outcome: WaitOutcome) -> AirflowException:
    """AirflowFailException for a permanent failure, AirflowException for a retryable one."""
    verdict = outcome.verdict
    retryable = verdict is None or verdict.retryable
    reason = verdict.reason if verdict is not None else "Unknown"
    kind = "retryable" if retryable else "permanent"
    said = about_job(outcome.message, name=outcome.name, namespace=outcome.namespace, verb="failed")
    message = f"{said} [{reason}, {kind}]"
    return AirflowException(message) if retryable else AirflowFailException(message)


def delete_if_ours(
    client: SyncTFJobClient, *, name: str, namespace: str, uid: str | None, log: TaskLog, why: str
) -> bool:
    """Delete the TFJob unless another object (another UID) has taken its name; True if deleted.

    Errors are logged, not raised: deleting is the cleanup after an outcome that is already
    decided, and must not hide it.
    """
    try:
        current = client.get_tfjob(name, namespace=namespace)
        if uid is not None and uid_of(current) != uid:
            log.info(
                "Not deleting TFJob %s/%s: it is another object now (uid %s)",
                namespace,
                name,
                uid_of(current),
            )
            return False
        deleted = client.delete_tfjob(name, namespace=namespace)
    except NotFoundError:
        return False
    except KubeApiError as error:
        log.warning("Could not delete TFJob %s/%s (%s): %s", namespace, name, why, error.message)
        return False
    if deleted:
        log.info("Deleted TFJob %s/%s (uid %s): %s", namespace, name, uid, why)
    return deleted


__all__ = [
    "XCOM_FAILURE",
    "TaskLog",
    "delete_if_ours",
    "failure_exception",
    "failure_summary",
    "gather_failure_report",
    "judge_confirmed",
    "read_job",
    "translated_api_errors",
]
