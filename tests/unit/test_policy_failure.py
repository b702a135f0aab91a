"""What fails a job (R2, R7; docs/rules.md §2 and §8), the cause of each failure and its retry class."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.factories import NOW, condition, make_pod, make_tfjob
from tfjob_provider.policy import (
    MAX_CULPRITS,
    REASON_CONTAINER_CONFIG,
    REASON_DEADLINE,
    REASON_EVICTED,
    REASON_FAILED,
    REASON_IMAGE_PULL,
    REASON_NODE_LOST,
    REASON_OOM_KILLED,
    REASON_PERMANENT_EXIT_CODE,
    REASON_POD_DELETED,
    REASON_POD_REJECTED,
    REASON_PREEMPTED,
    REASON_REPLICA_FAILED,
    REASON_RETRYABLE_EXIT_CODE,
    Rules,
    VerdictState,
    decide,
)

FAILED = VerdictState.FAILED
JOB = make_tfjob({"Chief": 1, "Worker": 2})


def with_worker1(**pod: Any) -> list[dict[str, Any]]:
    return [make_pod("Chief"), make_pod("Worker", 0), make_pod("Worker", 1, **pod)]


# (pod arguments, reason, retryable, words the message must contain)
CAUSES: list[tuple[dict[str, Any], str, bool, tuple[str, ...]]] = [
    ({"phase": "Failed", "exit_code": 1}, REASON_PERMANENT_EXIT_CODE, False, ("exited with code 1",)),
    ({"phase": "Failed", "exit_code": 143}, REASON_RETRYABLE_EXIT_CODE, True, ("143", "SIGTERM")),
    (
        {"phase": "Failed", "exit_code": 137, "terminated_reason": "OOMKilled"},
        REASON_OOM_KILLED,
        True,
        ("OOMKilled",),
    ),
    (
        {
            "phase": "Failed",
            "exit_code": None,
            "pod_reason": "Evicted",
            "pod_message": "The node was low on memory.",
        },
        REASON_EVICTED,
        True,
        ("Evicted", "low on memory"),
    ),
    ({"phase": "Failed", "exit_code": 137, "pod_reason": "Evicted"}, REASON_EVICTED, True, ("Evicted",)),
    (
        {"phase": "Failed", "exit_code": None, "pod_reason": "Preempting"},
        REASON_PREEMPTED,
        True,
        ("Preempting",),
    ),
    (
        {
            "phase": "Failed",
            "exit_code": 143,
            "pod_reason": "Terminated",
            "pod_message": "imminent node shutdown",
        },
        REASON_NODE_LOST,
        True,
        ("node shutdown",),
    ),
    (
        {"phase": "Failed", "exit_code": None, "pod_reason": "OutOfnvidia.com/gpu"},
        REASON_POD_REJECTED,
        True,
        (),
    ),
    (
        {"phase": "Failed", "exit_code": None, "pod_reason": "UnexpectedAdmissionError"},
        REASON_POD_REJECTED,
        True,
        (),
    ),
    ({"phase": "Failed", "exit_code": 137, "pod_reason": "DeadlineExceeded"}, REASON_DEADLINE, False, ()),
    (
        {"phase": "Failed", "exit_code": None, "disruption": "PreemptionByScheduler"},
        REASON_PREEMPTED,
        True,
        ("PreemptionByScheduler",),
    ),
    (
        {
            "phase": "Failed",
            "exit_code": 128,
            "terminated_reason": "StartError",
            "terminated_message": "exec: not found",
        },
        REASON_CONTAINER_CONFIG,
        False,
        ("not found",),
    ),
    (
        {"phase": "Failed", "exit_code": None, "init_exit_code": 3},
        REASON_PERMANENT_EXIT_CODE,
        False,
        ("fetch-data",),
    ),
    ({"phase": "Failed", "exit_code": None}, REASON_REPLICA_FAILED, True, ("without an exit code",)),
    ({"deleting": True}, REASON_POD_DELETED, True, ("deleted while running",)),
    (
        {"deleting": True, "disruption": "DeletionByTaintManager"},
        REASON_NODE_LOST,
        True,
        ("DeletionByTaintManager",),
    ),
    (
        {"deleting": True, "disruption": "EvictionByEvictionAPI"},
        REASON_EVICTED,
        True,
        ("EvictionByEvictionAPI",),
    ),
]


@pytest.mark.parametrize(("pod", "reason", "retryable", "words"), CAUSES)
def test_failure_cause_and_retry_class(
    pod: dict[str, Any], reason: str, retryable: bool, words: tuple[str, ...]
) -> None:
    verdict = decide(JOB, with_worker1(**pod), now=NOW)
    assert (verdict.state, verdict.reason, verdict.retryable) == (FAILED, reason, retryable)
    assert verdict.culprits == ("mnist-worker-1",)
    assert "Worker replica 1 (pod mnist-worker-1)" in verdict.message
    for word in words:
        assert word in verdict.message


@pytest.mark.parametrize("policy", ["Never", "OnFailure", "Always", "ExitCode"])
def test_a_running_pod_being_deleted_fails_the_job_under_every_policy(policy: str) -> None:
    """R2 / kubeflow/trainer#2124: counted failed, not restarted by the operator."""
    job = make_tfjob({"Chief": 1, "Worker": 2}, restart_policy=policy)
    verdict = decide(job, with_worker1(deleting=True), now=NOW)
    assert (verdict.state, verdict.reason, verdict.retryable) == (FAILED, REASON_POD_DELETED, True)


def test_pending_or_succeeded_pod_being_deleted_is_not_a_failure() -> None:
    assert decide(JOB, with_worker1(phase="Pending", deleting=True), now=NOW).state is VerdictState.RUNNING
    assert decide(JOB, with_worker1(phase="Succeeded", deleting=True), now=NOW).state is VerdictState.RUNNING


def test_worker_failure_fails_a_job_in_chief_mode() -> None:
    """R8: the operator's test of this case is named as if the job stays Running; it does not."""
    verdict = decide(JOB, with_worker1(phase="Failed", exit_code=1), now=NOW)
    assert verdict.state is FAILED


@pytest.mark.parametrize("helper", ["PS", "Evaluator"])
def test_ps_and_evaluator_failures_fail_the_job(helper: str) -> None:
    job = make_tfjob({"Chief": 1, helper: 1})
    verdict = decide(job, [make_pod("Chief"), make_pod(helper, phase="Failed", exit_code=2)], now=NOW)
    assert (verdict.state, verdict.culprits) == (FAILED, (f"mnist-{helper.lower()}-0",))


def test_a_permanent_cause_makes_the_whole_failure_permanent() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 3, "PS": 1})
    pods = [
        make_pod("Chief"),
        make_pod("PS", phase="Failed", exit_code=None, pod_reason="Evicted"),
        make_pod("Worker", 0),
        make_pod("Worker", 1, phase="Failed", exit_code=137),
        make_pod("Worker", 2, phase="Failed", exit_code=2),
    ]
    verdict = decide(job, pods, now=NOW)
    assert (verdict.reason, verdict.retryable) == (REASON_PERMANENT_EXIT_CODE, False)
    assert verdict.culprits == ("mnist-ps-0", "mnist-worker-1", "mnist-worker-2")  # operator walk order
    assert "exited with code 2" in verdict.message
    assert "2 other replica pod(s) failed" in verdict.message


def test_only_retryable_causes_make_a_retryable_failure() -> None:
    pods = [make_pod("Chief"), make_pod("Worker", 0, phase="Failed", exit_code=137)]
    pods.append(make_pod("Worker", 1, phase="Failed", exit_code=None, pod_reason="Evicted"))
    verdict = decide(JOB, pods, now=NOW)
    assert (verdict.state, verdict.retryable) == (FAILED, True)
    assert verdict.reason == REASON_RETRYABLE_EXIT_CODE  # the first cause leads when all are retryable


def test_culprits_are_capped() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 50})
    pods = [make_pod("Chief")] + [make_pod("Worker", index, phase="Failed") for index in range(50)]
    verdict = decide(job, pods, now=NOW)
    assert len(verdict.culprits) == MAX_CULPRITS
    assert "49 other replica pod(s)" in verdict.message


def test_unknown_phase_is_not_counted() -> None:
    verdict = decide(JOB, with_worker1(phase="Unknown"), now=NOW)
    assert verdict.state is VerdictState.RUNNING
    assert verdict.replicas["Worker"].failed == 0


# --- replicas that can never start: the provider fails fast (the operator waits forever) ----


@pytest.mark.parametrize(
    ("waiting", "reason"),
    [
        ("ErrImagePull", REASON_IMAGE_PULL),
        ("ImagePullBackOff", REASON_IMAGE_PULL),
        ("InvalidImageName", REASON_IMAGE_PULL),
        ("CreateContainerConfigError", REASON_CONTAINER_CONFIG),
    ],
)
def test_replica_that_cannot_start_fails_fast_and_permanently(waiting: str, reason: str) -> None:
    pods = with_worker1(phase="Pending", waiting=waiting, waiting_message='secret "s3-creds" not found')
    verdict = decide(JOB, pods, now=NOW)
    assert (verdict.state, verdict.reason, verdict.retryable) == (FAILED, reason, False)
    assert verdict.operator_finished is False
    assert waiting in verdict.message
    relaxed = decide(JOB, pods, now=NOW, rules=Rules(image_pull_fail_fast=False))
    assert relaxed.state is VerdictState.RUNNING


def test_an_init_container_waiting_on_its_image_also_fails_fast() -> None:
    pod = make_pod("Worker", 1, phase="Pending")
    pod["status"]["initContainerStatuses"] = [
        {"name": "fetch", "image": "busybx", "state": {"waiting": {"reason": "ErrImagePull"}}}
    ]
    verdict = decide(JOB, [make_pod("Chief"), make_pod("Worker", 0), pod], now=NOW)
    assert (verdict.reason, verdict.retryable) == (REASON_IMAGE_PULL, False)
    assert "'fetch'" in verdict.message


def test_a_slow_image_pull_is_not_a_failure() -> None:
    verdict = decide(JOB, with_worker1(phase="Pending", waiting="ContainerCreating"), now=NOW)
    assert verdict.state is VerdictState.RUNNING


def test_image_pull_failure_does_not_undo_a_success() -> None:
    pods = [
        make_pod("Chief", phase="Succeeded"),
        make_pod("Worker", 0, phase="Pending", waiting="ErrImagePull"),
    ]
    assert decide(JOB, pods, now=NOW).state is VerdictState.SUCCEEDED


# --- a Failed condition already on the TFJob (R1) ----------------------------------------


def failed_job(message: str, **kwargs: Any) -> dict[str, Any]:
    return make_tfjob(
        {"Chief": 1, "Worker": 2},
        conditions=[
            condition("Created"),
            condition("Running", "False"),
            condition("Failed", message=message),
        ],
        **kwargs,
    )


def test_failed_condition_is_explained_by_the_pods() -> None:
    job = failed_job("TFJob ml/mnist has failed because 1 Worker replica(s) failed.")
    verdict = decide(job, with_worker1(phase="Failed", exit_code=137, terminated_reason="OOMKilled"), now=NOW)
    assert (verdict.state, verdict.reason, verdict.retryable) == (FAILED, REASON_OOM_KILLED, True)
    assert verdict.operator_finished is True


def test_failed_condition_without_visible_cause_is_left_to_airflow_retries() -> None:
    job = failed_job("TFJob ml/mnist has failed because 1 Worker replica(s) failed.")
    verdict = decide(job, [], now=NOW)
    assert (verdict.state, verdict.reason, verdict.retryable, verdict.operator_finished) == (
        FAILED,
        REASON_FAILED,
        True,
        True,
    )
    assert "1 Worker replica(s) failed" in verdict.message


def test_failed_condition_from_the_deadline_is_permanent() -> None:
    job = failed_job("Job mnist has failed because it was active longer than specified deadline")
    verdict = decide(job, with_worker1(phase="Failed", exit_code=143), now=NOW)
    assert (verdict.reason, verdict.retryable, verdict.operator_finished) == (REASON_DEADLINE, False, True)


def test_failed_condition_freezes_everything() -> None:
    """R8: nothing changes a job once Failed=True, not even a chief that succeeds later."""
    job = failed_job("TFJob ml/mnist has failed because 1 PS replica(s) failed.")
    assert decide(job, [make_pod("Chief", phase="Succeeded")], now=NOW).state is FAILED


def test_pods_deleted_by_cleanup_after_the_failure_are_not_its_cause() -> None:
    """cleanPodPolicy deletes the running pods once the job failed; the failed pod may be gone first."""
    job = failed_job("TFJob ml/mnist has failed because 1 Worker replica(s) failed.")  # failed 5 minutes ago
    verdict = decide(job, [make_pod("Chief", deleting=True), make_pod("Worker", 0, deleting=True)], now=NOW)
    assert (verdict.reason, verdict.culprits) == (REASON_FAILED, ())


def test_a_deletion_requested_before_the_failure_is_its_cause() -> None:
    """kubeflow/trainer#2124 seen after the fact: the pod deleted under the job is why it failed."""
    job = failed_job("TFJob ml/mnist has failed because 1 Worker replica(s) failed.")
    pod = make_pod("Worker", 1, deleting=True)
    pod["metadata"]["deletionTimestamp"] = "2025-03-01T11:55:20Z"  # grace 30 s: requested 11:54:50
    verdict = decide(job, [make_pod("Chief"), pod], now=NOW)
    assert (verdict.reason, verdict.culprits, verdict.retryable) == (
        REASON_POD_DELETED,
        ("mnist-worker-1",),
        True,
    )
