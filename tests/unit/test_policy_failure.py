"""What fails a job (R2, R7; docs/concepts/rules.md §2, §8), each failure's cause and its retry class."""

from __future__ import annotations

from datetime import timedelta
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


IMAGE = "registry.example.com/team/tf:2.15"
PULL = f'rpc error: code = {{code}} desc = failed to pull and unpack image "{IMAGE}": {{detail}}'
RESOLVE = f'failed to resolve reference "{IMAGE}": '
HEAD = 'failed to do request: Head "https://registry.example.com/v2/team/tf/manifests/2.15": '

# Pull errors as containerd and the kubelet word them: (reason, waiting message, permanent).
PULL_ERRORS: list[tuple[str, str, bool]] = [
    ("ErrImagePull", PULL.format(code="NotFound", detail=f"{RESOLVE}{IMAGE}: not found"), True),
    (
        "ErrImagePull",
        PULL.format(code="Unknown", detail=f"{RESOLVE}registry.example.com/team/tf:2.15: manifest unknown"),
        True,
    ),
    (
        "ErrImagePull",
        PULL.format(
            code="Unknown",
            detail=f"{RESOLVE}pull access denied, repository does not exist or may require authorization: "
            "server message: insufficient_scope: authorization failed",
        ),
        True,
    ),
    (
        "ErrImagePull",
        PULL.format(
            code="Unknown",
            detail=f"{RESOLVE}failed to authorize: failed to fetch oauth token: unexpected status from "
            "POST request to https://registry.example.com/token: 401 Unauthorized",
        ),
        True,
    ),
    (
        "InvalidImageName",
        f'Failed to apply default image tag "{IMAGE}!": couldn\'t parse image name "{IMAGE}!": '
        "invalid reference format",
        True,
    ),
    (
        "ImagePullBackOff",
        f'Back-off pulling image "{IMAGE}": ErrImagePull: '
        + PULL.format(code="NotFound", detail=f"{RESOLVE}{IMAGE}: not found"),
        True,
    ),
    (
        "ErrImagePull",
        PULL.format(
            code="Unknown",
            detail="failed to copy: httpReadSeeker: failed open: unexpected status code "
            "https://registry.example.com/v2/team/tf/manifests/sha256:0a1b: 429 Too Many Requests - "
            "Server message: toomanyrequests: You have reached your pull rate limit",
        ),
        False,
    ),
    (
        "ErrImagePull",
        PULL.format(
            code="Unknown",
            detail=f"{RESOLVE}unexpected status from HEAD request to "
            "https://registry.example.com/v2/team/tf/manifests/2.15: 503 Service Unavailable",
        ),
        False,
    ),
    (
        "ErrImagePull",
        PULL.format(code="Unknown", detail=f"{RESOLVE}{HEAD}dial tcp 10.0.0.7:443: i/o timeout"),
        False,
    ),
    (
        "ErrImagePull",
        PULL.format(
            code="Unknown", detail=f"{RESOLVE}{HEAD}dial tcp 10.0.0.7:443: connect: connection refused"
        ),
        False,
    ),
    (
        "ErrImagePull",
        PULL.format(code="Unknown", detail=f"{RESOLVE}{HEAD}net/http: TLS handshake timeout"),
        False,
    ),
    (
        "ImagePullBackOff",
        f'Back-off pulling image "{IMAGE}": ErrImagePull: '
        + PULL.format(code="Unknown", detail=f"{RESOLVE}{HEAD}dial tcp 10.0.0.7:443: i/o timeout"),
        False,
    ),
    ("ImagePullBackOff", f'Back-off pulling image "{IMAGE}"', False),  # kubelets before 1.32
    ("ErrImagePull", "", False),
    ("RegistryUnavailable", f"image pull failed for {IMAGE} because the registry is unavailable", False),
]


def pulling_worker1(reason: str, message: str, *, minutes: float) -> list[dict[str, Any]]:
    created = NOW - timedelta(minutes=minutes)
    return with_worker1(phase="Pending", waiting=reason, waiting_message=message or None, created=created)


@pytest.mark.parametrize(("reason", "message", "permanent"), PULL_ERRORS)
def test_pull_errors_are_permanent_only_when_the_image_cannot_exist_or_be_pulled(
    reason: str, message: str, permanent: bool
) -> None:
    early = decide(JOB, pulling_worker1(reason, message, minutes=1), now=NOW)
    late = decide(JOB, pulling_worker1(reason, message, minutes=6), now=NOW)  # past the default 300 s
    if permanent:
        for verdict in (early, late):
            assert (verdict.state, verdict.reason, verdict.retryable) == (FAILED, REASON_IMAGE_PULL, False)
        return
    assert early.state is VerdictState.RUNNING  # the kubelet is still retrying the registry
    assert (late.state, late.reason, late.retryable) == (FAILED, REASON_IMAGE_PULL, True)
    assert late.culprits == ("mnist-worker-1",)
    assert "longer than Rules.image_pull_timeout=300s" in late.message
    assert reason in late.message and message.rstrip(".") in late.message


@pytest.mark.parametrize(
    ("rules", "minutes", "state"),
    [
        (Rules(image_pull_timeout=60), 1.5, FAILED),
        (Rules(image_pull_timeout=600), 6, VerdictState.RUNNING),
        (Rules(image_pull_timeout=None), 600, VerdictState.RUNNING),
        (Rules(image_pull_fail_fast=False), 600, VerdictState.RUNNING),
        (Rules(image_pull_timeout=None, pending_timeout=300), 6, FAILED),  # PendingTimeout still applies
    ],
)
def test_image_pull_timeout_bounds_the_wait_on_a_transient_pull_error(
    rules: Rules, minutes: float, state: VerdictState
) -> None:
    message = PULL.format(code="Unknown", detail="429 Too Many Requests - Server message: toomanyrequests")
    verdict = decide(JOB, pulling_worker1("ErrImagePull", message, minutes=minutes), now=NOW, rules=rules)
    assert verdict.state is state
    if state is FAILED:
        assert verdict.retryable is True


def test_a_failed_pod_whose_image_pull_was_transient_is_a_retryable_failure() -> None:
    pod = make_pod(
        "Worker",
        1,
        phase="Failed",
        waiting="ErrImagePull",
        waiting_message="dial tcp 10.0.0.7:443: i/o timeout",
    )
    verdict = decide(JOB, [make_pod("Chief"), make_pod("Worker", 0), pod], now=NOW)
    assert (verdict.state, verdict.reason, verdict.retryable) == (FAILED, REASON_IMAGE_PULL, True)


def test_an_init_container_waiting_on_its_image_also_fails_fast() -> None:
    pod = make_pod("Worker", 1, phase="Pending")
    pod["status"]["initContainerStatuses"] = [
        {
            "name": "fetch",
            "image": "busybx",
            "state": {"waiting": {"reason": "ErrImagePull", "message": "busybx:latest: not found"}},
        }
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
