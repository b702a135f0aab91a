"""How a finished wait ends the task, as a pure decision: :func:`conclude` turns a
:class:`~tfjob_provider._outcome.wait.WaitOutcome` into an :class:`Ending` (exception or result,
delete or keep, XComs; docs/adr/0008-when-the-task-deletes-its-tfjob.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, get_args

from tfjob_provider._outcome.outputs import XCOM_OUTPUTS, OutputsError, parse_outputs
from tfjob_provider._outcome.report import about_job, result_dict
from tfjob_provider._outcome.wait import WaitOutcome
from tfjob_provider.policy import Verdict

#: Who concludes: the operator owns its TFJob (and may delete it); the sensor never deletes.
Role = Literal["operator", "sensor"]
ROLES: Final[tuple[str, ...]] = get_args(Role)

#: What the operator does with its TFJob when the task ends (the operator's ``on_finish_action``).
OnFinishAction = Literal["keep", "delete_succeeded", "delete"]
ON_FINISH_ACTIONS: Final[tuple[str, ...]] = get_args(OnFinishAction)

#: How the task ends.  The Airflow side maps each kind to one exception (or a return value):
#: ``success`` → return :attr:`Ending.result`; ``failed`` → AirflowFailException (retries would be
#: burnt on a bug in the program or a bad image); ``retry`` → AirflowException; ``timeout`` →
#: AirflowTaskTimeout (operator) or AirflowSensorTimeout (sensor); ``skip`` → AirflowSkipException.
EndingKind = Literal["success", "failed", "retry", "timeout", "skip"]
ENDING_KINDS: Final[tuple[str, ...]] = get_args(EndingKind)

#: XCom key of :func:`failure_summary`, pushed by a task that fails because its TFJob failed.
XCOM_FAILURE: Final = "tfjob_failure"

#: ``reason`` in XCom ``tfjob_failure`` when the training succeeded but its outputs (the deciding
#: replica's termination message, :mod:`tfjob_provider._outcome.outputs`) are not JSON or were cut.
REASON_OUTPUTS_UNREADABLE: Final = "OutputsUnreadable"

#: Why the provider deletes a failed TFJob that the training operator has not finished off.
DELETE_UNFINISHED_FAILURE: Final = (
    "the task failed, and no replica may keep running (and holding GPUs) after it"
)


@dataclass(frozen=True, kw_only=True)
class Ending:
    """The decided end of a task: what to raise or return, whether to delete, what to push.

    :param kind: see :data:`EndingKind`.
    :param message: the exception message; for ``success`` the line logged at INFO.
    :param result: the task's return value (XCom ``return_value``) on success, else None.  A plain
        dict: callers may add keys before returning it (e.g. training outputs).
    :param delete_reason: delete the TFJob (if it is still ours) and log this reason; None keeps it.
    :param xcoms: XComs to push before ending (key → JSON-safe value).
    :param report: the failure report to log at ERROR before ending, if any.
    """

    kind: EndingKind
    message: str
    result: dict[str, Any] | None = None
    delete_reason: str | None = None
    xcoms: dict[str, Any] = field(default_factory=dict)
    report: str | None = None


def needs_report(outcome: WaitOutcome) -> bool:
    """Whether :func:`conclude` wants the culprit-first failure report (pods, logs, events) for
    ``outcome``: only a Failed verdict has culprits to report on."""
    return outcome.status == "failed" and outcome.verdict is not None


def needs_fresh_read(outcome: WaitOutcome) -> bool:
    """Whether the TFJob must be read again before :func:`conclude` may be trusted with ``outcome``.

    An ``error`` (the wait itself broke: an API outage, a killed task) says nothing about the
    training, and a ``timeout`` is followed by a deletion: in both cases the job may have finished
    meanwhile.  Reading it again (with the client's retry budget) lets a TFJob that succeeded end
    the task as a success instead of being deleted and trained again; pass what the read showed
    as the new outcome, or its failure as ``state_unread``.
    """
    return outcome.status in ("error", "timeout")


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


def replicas_still_running(verdict: Verdict) -> bool:
    """Whether any replica is still Pending or Running according to the verdict's counts."""
    return any(summary.active or summary.pending for summary in verdict.replicas.values())


def left_in_place_message(outcome: WaitOutcome, why: str) -> str:
    """The message of a try that could not read its TFJob before deleting it, so kept it."""
    said = about_job(outcome.message, name=outcome.name, namespace=outcome.namespace, verb="error")
    return (
        f"{said}; TFJob {outcome.namespace}/{outcome.name} was left in place because its state "
        f"could not be read ({why}); the next try adopts it"
    )


def conclude(
    outcome: WaitOutcome,
    *,
    role: Role,
    on_finish_action: OnFinishAction = "keep",
    soft_fail: bool = False,
    report: str | None = None,
    state_unread: str | None = None,
) -> Ending:
    """Decide how ``outcome`` ends the task.

    :param role: ``operator`` or ``sensor`` (the sensor never deletes; only it soft-fails).
    :param on_finish_action: the operator's choice for a TFJob that finished (ignored for the
        sensor): ``keep``, ``delete_succeeded`` or ``delete``.  A failed TFJob with anything still
        Pending or Running, or that only the provider judged failed, is deleted whatever it says.
    :param soft_fail: every negative ending skips the task instead (the sensor's ``soft_fail``).
    :param report: the failure report (:func:`needs_report`); logged and put in the XCom.
    :param state_unread: why the fresh read of :func:`needs_fresh_read` failed; the TFJob is then
        never deleted (its state is unknown — it may have succeeded) and the try fails retryable.
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {list(ROLES)}, got {role!r}")
    if on_finish_action not in ON_FINISH_ACTIONS:
        raise ValueError(
            f"on_finish_action must be one of {list(ON_FINISH_ACTIONS)}, got {on_finish_action!r}"
        )
    ending = _ending(outcome, on_finish_action=on_finish_action, report=report)
    if role == "sensor":  # the TFJob is not the sensor's own
        ending = replace(ending, delete_reason=None)
    if state_unread is not None and ending.kind != "success":
        ending = replace(
            ending, kind="retry", message=left_in_place_message(outcome, state_unread), delete_reason=None
        )
    if soft_fail and ending.kind != "success":
        ending = replace(ending, kind="skip", message=f"soft_fail: {ending.message}")
    return ending


def _unreadable_outputs(outcome: WaitOutcome, problem: str) -> Ending:
    """The training succeeded but left outputs nobody can read: a permanent failure (training
    again writes the same document), the TFJob kept whatever ``on_finish_action`` says so its
    pods and their messages can be inspected."""
    said = about_job(outcome.message, name=outcome.name, namespace=outcome.namespace, verb="succeeded")
    message = (
        f"{said} The training succeeded, but its outputs cannot be read: {problem}. "
        f"TFJob {outcome.namespace}/{outcome.name} is kept for inspection. "
        f"[{REASON_OUTPUTS_UNREADABLE}, permanent]"
    )
    return Ending(
        kind="failed",
        message=message,
        xcoms={
            XCOM_FAILURE: {
                "name": outcome.name,
                "namespace": outcome.namespace,
                "uid": outcome.uid,
                "reason": REASON_OUTPUTS_UNREADABLE,
                "retryable": False,
                "message": message,
                "culprits": [outcome.outputs_pod] if outcome.outputs_pod else [],
                "report": message,
            }
        },
    )


def _ending(outcome: WaitOutcome, *, on_finish_action: OnFinishAction, report: str | None) -> Ending:
    name, namespace, verdict = outcome.name, outcome.namespace, outcome.verdict
    if outcome.status == "success" and verdict is not None:
        try:
            outputs = parse_outputs(outcome.outputs_pod, outcome.outputs_message)
        except OutputsError as error:
            return _unreadable_outputs(outcome, str(error))
        delete = on_finish_action in ("delete", "delete_succeeded")
        return Ending(
            kind="success",
            message=about_job(outcome.message, name=name, namespace=namespace, verb="succeeded"),
            xcoms={XCOM_OUTPUTS: outputs},
            result=result_dict(
                name=name,
                namespace=namespace,
                uid=outcome.uid,
                verdict=verdict,
                start_time=outcome.start_time,
                completion_time=outcome.completion_time,
                recreations=outcome.recreations,
                outputs=outputs,
            ),
            delete_reason=f"on_finish_action={on_finish_action!r}" if delete else None,
        )
    if outcome.status == "failed" and verdict is not None:
        text = report if report is not None else outcome.message
        reason_kind = "retryable" if verdict.retryable else "permanent"
        said = about_job(outcome.message, name=name, namespace=namespace, verb="failed")
        delete_reason: str | None = None
        if not verdict.operator_finished or replicas_still_running(verdict):
            delete_reason = DELETE_UNFINISHED_FAILURE
        elif on_finish_action == "delete":
            delete_reason = "on_finish_action='delete'"
        return Ending(
            kind="retry" if verdict.retryable else "failed",
            message=f"{said} [{verdict.reason}, {reason_kind}]",
            delete_reason=delete_reason,
            xcoms={XCOM_FAILURE: failure_summary(outcome, text)},
            report=report,
        )
    if outcome.status == "timeout":
        return Ending(
            kind="timeout",
            message=about_job(outcome.message, name=name, namespace=namespace, verb="timed out"),
            delete_reason=outcome.message,
        )
    return Ending(
        kind="retry",
        message=about_job(outcome.message, name=name, namespace=namespace, verb="error"),
        delete_reason=f"the wait failed: {outcome.message}",
    )


__all__ = [
    "DELETE_UNFINISHED_FAILURE",
    "ENDING_KINDS",
    "ON_FINISH_ACTIONS",
    "REASON_OUTPUTS_UNREADABLE",
    "ROLES",
    "XCOM_FAILURE",
    "Ending",
    "EndingKind",
    "OnFinishAction",
    "Role",
    "conclude",
    "failure_summary",
    "left_in_place_message",
    "needs_fresh_read",
    "needs_report",
    "replicas_still_running",
]
