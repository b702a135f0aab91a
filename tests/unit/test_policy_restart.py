"""Restart policies by exit-code classes (R3, R4, R7, R14) and the Restarting condition (rules.md §8.3).

Each row states what the training operator does with a replica pod in phase Failed and what the
verdict therefore is.  The exit-code classes are the ones users meet: 0 (a clean exit in a failed
pod), 1/2/127 (the program's own error), 128 (could not start), 130/137/143 (signals), 255
(exit(-1)) and a missing container status (the operator's magic 48879).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.factories import NOW, condition, make_pod, make_tfjob
from tfjob_provider.policy import (
    REASON_PERMANENT_EXIT_CODE,
    REASON_REPLICA_FAILED,
    REASON_RESTARTING,
    REASON_RETRYABLE_EXIT_CODE,
    REASON_RUNNING,
    REASON_WORKER_FAILED,
    Rules,
    VerdictState,
    decide,
)

PERMANENT_CODES = (0, 1, 2, 127)
RETRYABLE_CODES = (128, 130, 137, 143, 255)
MISSING = None  # the pod finished without a status for the tensorflow container

FAILED, RESTARTING = VerdictState.FAILED, VerdictState.RESTARTING

# (restart policy, exit code) -> (state, reason, retryable).  R4: OnFailure/Always always restart;
# ExitCode restarts codes >= 128 (and the missing-status 48879) and fails the job on the rest;
# Never leaves the pod to R7, which fails the job.
ROWS: list[tuple[str, int | None, VerdictState, str, bool]] = [
    *[("Never", code, FAILED, REASON_PERMANENT_EXIT_CODE, False) for code in PERMANENT_CODES],
    *[("Never", code, FAILED, REASON_RETRYABLE_EXIT_CODE, True) for code in RETRYABLE_CODES],
    ("Never", MISSING, FAILED, REASON_REPLICA_FAILED, True),
    *[
        ("OnFailure", code, RESTARTING, REASON_RESTARTING, False)
        for code in (*PERMANENT_CODES, *RETRYABLE_CODES)
    ],
    ("OnFailure", MISSING, RESTARTING, REASON_RESTARTING, False),
    *[
        ("Always", code, RESTARTING, REASON_RESTARTING, False)
        for code in (*PERMANENT_CODES, *RETRYABLE_CODES)
    ],
    ("Always", MISSING, RESTARTING, REASON_RESTARTING, False),
    *[("ExitCode", code, FAILED, REASON_PERMANENT_EXIT_CODE, False) for code in PERMANENT_CODES],
    *[("ExitCode", code, RESTARTING, REASON_RESTARTING, False) for code in RETRYABLE_CODES],
    ("ExitCode", MISSING, RESTARTING, REASON_RESTARTING, False),
]


@pytest.mark.parametrize(("policy", "exit_code", "state", "reason", "retryable"), ROWS)
def test_failed_worker_pod_under_each_restart_policy(
    policy: str, exit_code: int | None, state: VerdictState, reason: str, retryable: bool
) -> None:
    job = make_tfjob({"Chief": 1, "Worker": 2}, restart_policy={"Worker": policy})
    pods = [
        make_pod("Chief"),
        make_pod("Worker", 0),
        make_pod("Worker", 1, phase="Failed", exit_code=exit_code, restart_policy=policy),
    ]
    verdict = decide(job, pods, now=NOW)
    assert (verdict.state, verdict.reason, verdict.retryable) == (state, reason, retryable)
    assert verdict.culprits == ("mnist-worker-1",)
    assert verdict.operator_finished is False
    if exit_code is not None:
        assert str(exit_code) in verdict.message


@pytest.mark.parametrize("replica_type", ["Chief", "Master", "PS", "Evaluator", "Worker"])
@pytest.mark.parametrize(
    ("policy", "exit_code", "state"),
    [
        ("Never", 1, FAILED),
        ("ExitCode", 1, FAILED),
        ("ExitCode", 137, RESTARTING),
        ("OnFailure", 1, RESTARTING),
    ],
)
def test_every_replica_type_follows_its_restart_policy(
    replica_type: str, policy: str, exit_code: int, state: VerdictState
) -> None:
    chief = "Master" if replica_type == "Master" else "Chief"
    replicas = {chief: 1, "Worker": 1}
    if replica_type in ("PS", "Evaluator"):
        replicas[replica_type] = 1
    job = make_tfjob(replicas, restart_policy={replica_type: policy})
    pods = [make_pod(kind) for kind in replicas if kind != replica_type]
    pods.append(make_pod(replica_type, 0, phase="Failed", exit_code=exit_code))
    verdict = decide(job, pods, now=NOW)
    assert verdict.state is state
    assert verdict.culprits == (f"mnist-{replica_type.lower()}-0",)


def test_restart_policy_defaults_to_never_when_left_out() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 1}, restart_policy=None)
    verdict = decide(job, [make_pod("Chief"), make_pod("Worker", phase="Failed", exit_code=137)], now=NOW)
    assert verdict.state is FAILED


def test_unknown_restart_policy_behaves_as_never() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 1}, restart_policy={"Worker": "onfailure"})
    verdict = decide(job, [make_pod("Chief"), make_pod("Worker", phase="Failed", exit_code=137)], now=NOW)
    assert verdict.state is FAILED


def test_only_the_tensorflow_container_carries_the_exit_code() -> None:
    pod = make_pod("Worker", 1, phase="Failed", exit_code=143)
    sidecar = {"name": "log-shipper", "restartCount": 0, "state": {"terminated": {"exitCode": 2}}}
    pod["status"]["containerStatuses"].insert(0, sidecar)
    job = make_tfjob({"Chief": 1, "Worker": 2}, restart_policy={"Worker": "ExitCode"})
    verdict = decide(job, [make_pod("Chief"), make_pod("Worker", 0), pod], now=NOW)
    assert verdict.state is RESTARTING  # 143 from tensorflow, not the sidecar's 2


def test_exit_code_of_a_previous_run_is_not_used() -> None:
    """R3: only the current terminated state counts; lastState is ignored by the operator."""
    pod = make_pod("Worker", 1, phase="Failed", exit_code=None, last_exit_code=1)
    job = make_tfjob({"Chief": 1, "Worker": 2}, restart_policy={"Worker": "ExitCode"})
    verdict = decide(job, [make_pod("Chief"), make_pod("Worker", 0), pod], now=NOW)
    assert verdict.state is RESTARTING  # 48879, retryable


# --- the Restarting condition (R7 step 1; docs/concepts/rules.md §8.3) ------------------------------


def restarting_job(**kwargs: Any) -> dict[str, Any]:
    message = "TFJob mnist is restarting because Worker replica(s) failed."
    return make_tfjob(
        conditions=[condition("Created"), condition("Restarting", reason="TFJobRestarting", message=message)],
        **kwargs,
    )


def test_restarting_condition_masks_a_pod_being_deleted() -> None:
    """A deleted Never pod will be recreated (R15) once gone, so the mask is honest here."""
    job = restarting_job(replicas={"Chief": 1, "Worker": 2})
    pods = [make_pod("Chief"), make_pod("Worker", 0), make_pod("Worker", 1, deleting=True)]
    verdict = decide(job, pods, now=NOW)
    assert verdict.state is RESTARTING
    assert verdict.culprits == ("mnist-worker-1",)


def test_restarting_condition_does_not_hide_a_failed_never_replica() -> None:
    """docs/concepts/rules.md §8.3: the operator would stay Restarting forever; the provider fails the job."""
    job = restarting_job(replicas={"Chief": 1, "Worker": 2, "PS": 1}, restart_policy={"Worker": "OnFailure"})
    pods = [
        make_pod("Chief"),
        make_pod("Worker", 0),
        make_pod("Worker", 1),
        make_pod("PS", 0, phase="Failed", exit_code=1),
    ]
    verdict = decide(job, pods, now=NOW)
    assert (verdict.state, verdict.reason, verdict.retryable) == (FAILED, REASON_PERMANENT_EXIT_CODE, False)
    assert verdict.culprits == ("mnist-ps-0",)
    assert verdict.operator_finished is False


def test_restart_in_this_pass_also_masks_but_never_failure_still_fails() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 2, "PS": 1}, restart_policy={"Worker": "OnFailure"})
    pods = [
        make_pod("Chief"),
        make_pod("Worker", 0),
        make_pod("Worker", 1, phase="Failed", pod_reason="Evicted", exit_code=None),
        make_pod("PS", 0, phase="Failed", exit_code=137),
    ]
    verdict = decide(job, pods, now=NOW)
    assert verdict.state is FAILED
    assert verdict.culprits == ("mnist-ps-0",)
    assert verdict.retryable is True


def test_unmasked_never_failure_beside_a_chief_success_is_failed() -> None:
    """The operator would end Succeeded here (Restarting re-asserted after Succeeded); the provider
    treats the unmasked failure as R8 treats success and failure in one pass: Failed."""
    job = restarting_job(replicas={"Chief": 1, "Worker": 2})
    pods = [
        make_pod("Chief", phase="Succeeded"),
        make_pod("Worker", 0),
        make_pod("Worker", 1, phase="Failed"),
    ]
    verdict = decide(job, pods, now=NOW)
    assert (verdict.state, verdict.culprits) == (FAILED, ("mnist-worker-1",))


def test_running_chief_replaces_a_stale_restarting_condition() -> None:
    """R8: Running and Restarting are exclusive; the chief being active sets Running again."""
    job = restarting_job(replicas={"Chief": 1, "Worker": 2})
    verdict = decide(job, [make_pod("Chief"), make_pod("Worker", 0), make_pod("Worker", 1)], now=NOW)
    assert (verdict.state, verdict.reason) == (VerdictState.RUNNING, REASON_RUNNING)


def test_restarting_condition_stays_while_decider_is_not_running() -> None:
    job = restarting_job(replicas={"Chief": 1, "Worker": 2})
    verdict = decide(job, [make_pod("Chief", phase="Pending"), make_pod("Worker", 0)], now=NOW)
    assert verdict.state is RESTARTING
    assert "restarting because Worker" in verdict.message


# --- in-place restarts (docs/concepts/rules.md §8.7) and Rules.fail_on_worker_failure ---------------


def crash_looping(
    last_exit_code: int, policy: str = "OnFailure"
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    job = make_tfjob({"Chief": 1, "Worker": 2}, restart_policy=policy)
    pods = [
        make_pod("Chief"),
        make_pod("Worker", 0),
        make_pod("Worker", 1, restarts=3, last_exit_code=last_exit_code),
    ]
    return job, pods


def test_in_place_restarts_are_invisible_to_the_operator() -> None:
    job, pods = crash_looping(1)
    verdict = decide(job, pods, now=NOW)
    assert verdict.state is VerdictState.RUNNING
    assert verdict.replicas["Worker"].restarts == 3


@pytest.mark.parametrize(("last_exit_code", "retryable"), [(1, False), (137, True)])
def test_fail_on_worker_failure_fails_at_an_in_place_restart(last_exit_code: int, retryable: bool) -> None:
    job, pods = crash_looping(last_exit_code)
    verdict = decide(job, pods, now=NOW, rules=Rules(fail_on_worker_failure=True))
    assert (verdict.state, verdict.reason, verdict.retryable) == (FAILED, REASON_WORKER_FAILED, retryable)
    assert verdict.culprits == ("mnist-worker-1",)
    assert verdict.operator_finished is False


def test_fail_on_worker_failure_ignores_always_restarts_after_a_clean_exit() -> None:
    job, pods = crash_looping(0, policy="Always")
    verdict = decide(job, pods, now=NOW, rules=Rules(fail_on_worker_failure=True))
    assert verdict.state is VerdictState.RUNNING


@pytest.mark.parametrize("policy", ["OnFailure", "Always", "ExitCode"])
def test_fail_on_worker_failure_refuses_operator_restarts(policy: str) -> None:
    job = make_tfjob({"Chief": 1, "Worker": 2}, restart_policy=policy)
    pods = [make_pod("Chief"), make_pod("Worker", 0), make_pod("Worker", 1, phase="Failed", exit_code=137)]
    assert decide(job, pods, now=NOW).state is RESTARTING
    verdict = decide(job, pods, now=NOW, rules=Rules(fail_on_worker_failure=True))
    assert (verdict.state, verdict.reason, verdict.retryable) == (FAILED, REASON_WORKER_FAILED, True)


def test_a_mass_eviction_is_one_restart_verdict_with_a_bounded_list_of_culprits() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 60}, restart_policy={"Worker": "OnFailure"})
    evicted = [
        make_pod("Worker", index, phase="Failed", exit_code=None, pod_reason="Evicted") for index in range(60)
    ]
    verdict = decide(job, [make_pod("Chief"), *evicted], now=NOW)
    assert (verdict.state, verdict.reason) == (RESTARTING, REASON_RESTARTING)
    assert verdict.culprits == tuple(f"mnist-worker-{index}" for index in range(20))
    assert "and 59 other pod(s)" in verdict.message
    strict = decide(job, [make_pod("Chief"), *evicted], now=NOW, rules=Rules(fail_on_worker_failure=True))
    assert (strict.state, strict.retryable) == (FAILED, True)
    assert "59 other replica pod(s) failed" in strict.message
