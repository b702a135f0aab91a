"""The one decision from a finished wait to the task's ending, table by table, without Airflow."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from tests.unit.factories import JOB_NAME, JOB_UID, NAMESPACE
from tfjob_provider._outcome.outputs import XCOM_OUTPUTS
from tfjob_provider._outcome.task_ending import (
    DELETE_UNFINISHED_FAILURE,
    REASON_OUTPUTS_UNREADABLE,
    XCOM_FAILURE,
    Ending,
    conclude,
    needs_fresh_read,
    needs_report,
)
from tfjob_provider._outcome.wait import WaitOutcome
from tfjob_provider.policy import (
    REASON_CHIEF_SUCCEEDED,
    REASON_PERMANENT_EXIT_CODE,
    REASON_RETRYABLE_EXIT_CODE,
    ReplicaSummary,
    Verdict,
    VerdictState,
)

WHERE = f"{NAMESPACE}/{JOB_NAME}"


def outcome(
    status: str,
    *,
    retryable: bool = False,
    finished: bool = True,
    running: int = 0,
    verdict: bool = True,
) -> WaitOutcome:
    """An outcome about the test job: ``status`` with a matching verdict (or none)."""
    made: Verdict | None = None
    if verdict and status == "success":
        made = Verdict(
            state=VerdictState.SUCCEEDED,
            retryable=False,
            reason=REASON_CHIEF_SUCCEEDED,
            message="chief succeeded",
            culprits=("mnist-chief-0",),
            replicas={"Chief": ReplicaSummary(succeeded=1), "Worker": ReplicaSummary(active=running)},
            operator_finished=finished,
        )
    elif verdict and status == "failed":
        made = Verdict(
            state=VerdictState.FAILED,
            retryable=retryable,
            reason=REASON_RETRYABLE_EXIT_CODE if retryable else REASON_PERMANENT_EXIT_CODE,
            message="worker 0 exited",
            culprits=("mnist-worker-0",),
            replicas={"Worker": ReplicaSummary(failed=1, active=running)},
            operator_finished=finished,
        )
    elif verdict and status == "timeout":
        made = Verdict(
            state=VerdictState.RUNNING, retryable=False, reason="TFJobRunning", message="still running"
        )
    return WaitOutcome(
        status=status,  # type: ignore[arg-type]
        name=JOB_NAME,
        namespace=NAMESPACE,
        uid=JOB_UID,
        message=f"{status} message",
        verdict=made,
    )


@dataclass(frozen=True)
class Row:
    """One line of the table: given these, the ending has this kind and deletes (or not)."""

    what: str
    outcome: WaitOutcome
    role: str
    kind: str
    delete: str | None
    on_finish_action: str = "delete_succeeded"
    soft_fail: bool = False
    state_unread: str | None = None


TABLE = [
    # --- success: returned; deleted only by the operator, as on_finish_action says
    Row("success, delete_succeeded", outcome("success"), "operator", "success", "on_finish_action"),
    Row("success, delete", outcome("success"), "operator", "success", "on_finish_action", "delete"),
    Row("success, keep", outcome("success"), "operator", "success", None, "keep"),
    Row("sensor success", outcome("success"), "sensor", "success", None),
    Row("success beats an unread state", outcome("success"), "operator", "success", None, "keep", False, "x"),
    Row("soft_fail never skips a success", outcome("success"), "sensor", "success", None, soft_fail=True),
    # --- failed: permanent or retryable by the verdict; deleted when something could still run
    Row("permanent, finished", outcome("failed"), "operator", "failed", None),
    Row("permanent, finished, delete", outcome("failed"), "operator", "failed", "on_finish_action", "delete"),
    Row("retryable, finished", outcome("failed", retryable=True), "operator", "retry", None),
    Row(
        "judged by the provider",
        outcome("failed", finished=False),
        "operator",
        "failed",
        DELETE_UNFINISHED_FAILURE,
        "keep",
    ),
    Row(
        "replicas still running",
        outcome("failed", retryable=True, running=2),
        "operator",
        "retry",
        DELETE_UNFINISHED_FAILURE,
        "keep",
    ),
    Row("sensor never deletes", outcome("failed", finished=False), "sensor", "failed", None),
    Row("sensor soft_fail", outcome("failed"), "sensor", "skip", None, soft_fail=True),
    # --- timeout: the operator deletes what it timed out on
    Row("operator timeout", outcome("timeout"), "operator", "timeout", "timeout message", "keep"),
    Row("sensor timeout", outcome("timeout"), "sensor", "timeout", None),
    Row("sensor timeout, soft_fail", outcome("timeout"), "sensor", "skip", None, soft_fail=True),
    # --- error: the wait broke; retryable
    Row("operator error", outcome("error"), "operator", "retry", "the wait failed: error message", "keep"),
    Row("sensor error", outcome("error"), "sensor", "retry", None),
    Row("failed without verdict", outcome("failed", verdict=False), "operator", "retry", "the wait failed"),
    # --- the fresh read before a deletion failed: never delete, retry (the next try adopts)
    Row("error, state unread", outcome("error"), "operator", "retry", None, "delete", False, "503"),
    Row("timeout, state unread", outcome("timeout"), "operator", "retry", None, "delete", False, "503"),
]


@pytest.mark.parametrize("row", TABLE, ids=[row.what for row in TABLE])
def test_the_ending_of_every_outcome(row: Row) -> None:
    ending = conclude(
        row.outcome,
        role=row.role,  # type: ignore[arg-type]
        on_finish_action=row.on_finish_action,  # type: ignore[arg-type]
        soft_fail=row.soft_fail,
        state_unread=row.state_unread,
    )
    assert ending.kind == row.kind
    if row.delete is None:
        assert ending.delete_reason is None
    else:
        assert ending.delete_reason is not None
        assert row.delete in ending.delete_reason
    assert (ending.result is not None) == (row.kind == "success")
    failed_with_verdict = row.outcome.status == "failed" and row.outcome.verdict is not None
    assert (XCOM_FAILURE in ending.xcoms) == failed_with_verdict


def test_success_returns_the_result_dict_and_says_so() -> None:
    ending = conclude(outcome("success"), role="operator", on_finish_action="keep")
    assert ending.result is not None
    assert (ending.result["name"], ending.result["uid"], ending.result["state"]) == (
        JOB_NAME,
        JOB_UID,
        "Succeeded",
    )
    assert ending.result["deciding_pods"] == ["mnist-chief-0"]
    assert ending.message == f"TFJob {WHERE} succeeded: success message"
    assert ending.result["outputs"] is None and ending.xcoms == {XCOM_OUTPUTS: None}


def test_the_deciding_replicas_json_message_is_the_outputs() -> None:
    written = replace(outcome("success"), outputs_pod="mnist-chief-0", outputs_message='{"loss": 0.5}')
    ending = conclude(written, role="sensor")
    assert ending.kind == "success" and ending.result is not None
    assert ending.result["outputs"] == {"loss": 0.5} and ending.xcoms == {XCOM_OUTPUTS: {"loss": 0.5}}


@pytest.mark.parametrize(
    ("message", "problem"),
    [("loss=0.5", "is not JSON"), ('"' + "x" * 4094 + '"', "at Kubernetes' 4096-byte limit")],
)
@pytest.mark.parametrize("on_finish_action", ["delete_succeeded", "delete"])
def test_unreadable_outputs_fail_permanently_and_keep_the_tfjob(
    message: str, problem: str, on_finish_action: str
) -> None:
    written = replace(outcome("success"), outputs_pod="mnist-chief-0", outputs_message=message)
    ending = conclude(written, role="operator", on_finish_action=on_finish_action)  # type: ignore[arg-type]
    assert ending.kind == "failed" and ending.result is None and ending.delete_reason is None
    assert "pod mnist-chief-0" in ending.message and problem in ending.message
    assert "The training succeeded" in ending.message and "kept for inspection" in ending.message
    summary = ending.xcoms[XCOM_FAILURE]
    assert (summary["reason"], summary["retryable"]) == (REASON_OUTPUTS_UNREADABLE, False)
    assert conclude(written, role="sensor", soft_fail=True).kind == "skip"


def test_a_failure_names_its_reason_and_class_and_carries_the_report() -> None:
    ending = conclude(outcome("failed"), role="operator", report="REPORT")
    assert ending.message == f"TFJob {WHERE} failed: failed message [{REASON_PERMANENT_EXIT_CODE}, permanent]"
    assert ending.report == "REPORT"
    summary = ending.xcoms[XCOM_FAILURE]
    assert (summary["reason"], summary["retryable"], summary["report"]) == (
        REASON_PERMANENT_EXIT_CODE,
        False,
        "REPORT",
    )
    assert summary["culprits"] == ["mnist-worker-0"]
    retry = conclude(outcome("failed", retryable=True), role="sensor")
    assert retry.message.endswith(f"[{REASON_RETRYABLE_EXIT_CODE}, retryable]")
    assert retry.xcoms[XCOM_FAILURE]["report"] == "failed message"  # no report gathered


def test_an_unread_state_keeps_the_tfjob_and_says_why() -> None:
    ending = conclude(outcome("error"), role="operator", state_unread="503 ServiceUnavailable")
    assert ending == Ending(kind="retry", message=ending.message)
    assert "was left in place because its state could not be read (503 ServiceUnavailable)" in ending.message
    assert "the next try adopts it" in ending.message


def test_soft_fail_keeps_the_message_of_what_went_wrong() -> None:
    ending = conclude(outcome("timeout"), role="sensor", soft_fail=True)
    assert ending.message == f"soft_fail: TFJob {WHERE} timed out: timeout message"


@pytest.mark.parametrize(
    ("status", "fresh", "report"),
    [("success", False, False), ("failed", False, True), ("timeout", True, False), ("error", True, False)],
)
def test_which_evidence_a_decision_needs(status: str, fresh: bool, report: bool) -> None:
    assert needs_fresh_read(outcome(status)) is fresh
    assert needs_report(outcome(status)) is report
    assert not needs_report(outcome("failed", verdict=False))


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="role"):
        conclude(outcome("success"), role="trigger")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="on_finish_action"):
        conclude(outcome("success"), role="operator", on_finish_action="purge")  # type: ignore[arg-type]
