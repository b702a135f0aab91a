"""runPolicy: backoffLimit (R9), activeDeadlineSeconds (R10; docs/concepts/rules.md §8.2), suspend."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.unit.factories import NOW, condition, make_pod, make_tfjob, pods_for
from tfjob_provider.constants import MANAGED_BY_MULTIKUEUE, MANAGED_BY_TRAINING_OPERATOR
from tfjob_provider.policy import (
    REASON_BACKOFF_LIMIT,
    REASON_DEADLINE,
    REASON_FAILED,
    REASON_MANAGED_EXTERNALLY,
    REASON_NOT_RECONCILED,
    REASON_RESTARTING,
    REASON_SUSPENDED,
    VerdictState,
    decide,
)

FAILED, RUNNING = VerdictState.FAILED, VerdictState.RUNNING


# --- backoffLimit ---------------------------------------------------------------------------


def backoff_job(limit: int, policy: str = "OnFailure", **kwargs: Any) -> dict[str, Any]:
    return make_tfjob(
        {"Chief": 1, "Worker": 2}, restart_policy=policy, run_policy={"backoffLimit": limit}, **kwargs
    )


def restarted_workers(first: int, second: int, *, last_exit_code: int = 1) -> list[dict[str, Any]]:
    return [
        make_pod("Chief"),
        make_pod("Worker", 0, restarts=first, last_exit_code=last_exit_code if first else None),
        make_pod("Worker", 1, restarts=second, last_exit_code=last_exit_code if second else None),
    ]


@pytest.mark.parametrize(
    ("limit", "first", "second", "state"),
    [
        (3, 1, 1, RUNNING),
        (3, 2, 1, FAILED),  # restarts summed over pods: 3 >= 3
        (3, 3, 0, FAILED),
        (1, 1, 0, FAILED),  # N fails the job at the N-th restart
        (0, 1, 0, FAILED),  # 0 and 1 behave the same for restarts
        (0, 0, 0, RUNNING),
        (5, 4, 0, RUNNING),
    ],
)
def test_backoff_limit_counts_in_place_restarts_of_running_pods(
    limit: int, first: int, second: int, state: VerdictState
) -> None:
    verdict = decide(backoff_job(limit), restarted_workers(first, second), now=NOW)
    assert verdict.state is state
    if state is FAILED:
        assert (verdict.reason, verdict.operator_finished) == (REASON_BACKOFF_LIMIT, False)
        assert f"backoffLimit of {limit}" in verdict.message


def test_backoff_restarts_of_never_replicas_are_not_counted() -> None:
    verdict = decide(backoff_job(1, policy="Never"), restarted_workers(2, 2), now=NOW)
    assert verdict.state is RUNNING


def test_backoff_counts_init_container_restarts() -> None:
    pods = restarted_workers(0, 0)
    pods[1]["status"]["initContainerStatuses"] = [
        {"name": "fetch", "restartCount": 2, "state": {"terminated": {"exitCode": 0}}}
    ]
    assert decide(backoff_job(2), pods, now=NOW).state is FAILED


def test_backoff_ignores_restarts_of_pods_no_longer_running() -> None:
    pods = [make_pod("Chief"), make_pod("Worker", 0, phase="Succeeded", restarts=5, last_exit_code=1)]
    assert decide(backoff_job(2), pods, now=NOW).state is RUNNING


def test_exit_code_restarts_never_reach_the_backoff_limit() -> None:
    """R9 / kubeflow/trainer#2045: ExitCode replaces pods, so restartCount stays 0."""
    job = backoff_job(1, policy="ExitCode")
    pods = [make_pod("Chief"), make_pod("Worker", 0), make_pod("Worker", 1, phase="Failed", exit_code=137)]
    verdict = decide(job, pods, now=NOW)
    assert (verdict.state, verdict.reason) == (VerdictState.RESTARTING, REASON_RESTARTING)


def test_always_counts_restarts_after_a_clean_exit() -> None:
    verdict = decide(backoff_job(2, policy="Always"), restarted_workers(2, 0, last_exit_code=0), now=NOW)
    assert (verdict.state, verdict.retryable) == (FAILED, False)


@pytest.mark.parametrize(("last_exit_codes", "retryable"), [((137, 143), True), ((137, 1), False)])
def test_backoff_is_retryable_only_when_every_restart_was_a_signal(
    last_exit_codes: tuple[int, int], retryable: bool
) -> None:
    pods = [
        make_pod("Chief"),
        make_pod("Worker", 0, restarts=1, last_exit_code=last_exit_codes[0]),
        make_pod("Worker", 1, restarts=1, last_exit_code=last_exit_codes[1]),
    ]
    verdict = decide(backoff_job(2), pods, now=NOW)
    assert (verdict.reason, verdict.retryable) == (REASON_BACKOFF_LIMIT, retryable)
    assert set(verdict.culprits) == {"mnist-worker-0", "mnist-worker-1"}


def test_backoff_restarts_of_unknown_cause_are_not_retryable() -> None:
    pods = [make_pod("Chief"), make_pod("Worker", 0, restarts=2)]
    verdict = decide(backoff_job(2), pods, now=NOW)
    assert (verdict.reason, verdict.retryable) == (REASON_BACKOFF_LIMIT, False)


@pytest.mark.parametrize("policy", ["Never", "OnFailure", "ExitCode"])
def test_backoff_limit_zero_fails_at_the_first_new_failed_pod(policy: str) -> None:
    """R9 (b): the no-op work queue makes this fire for backoffLimit 0 only, whatever the policy."""
    pods = [
        make_pod("Chief"),
        make_pod("Worker", 0),
        make_pod("Worker", 1, phase="Failed", exit_code=137, pod_reason="Evicted"),
    ]
    verdict = decide(backoff_job(0, policy=policy), pods, now=NOW)
    assert (verdict.state, verdict.reason, verdict.retryable) == (FAILED, REASON_BACKOFF_LIMIT, True)
    assert verdict.culprits == ("mnist-worker-1",)


def test_backoff_limit_zero_ignores_failures_already_recorded_in_status() -> None:
    job = backoff_job(0, policy="OnFailure", replica_statuses={"Worker": {"active": 1, "failed": 1}})
    pods = [make_pod("Chief"), make_pod("Worker", 0), make_pod("Worker", 1, phase="Failed", exit_code=137)]
    assert decide(job, pods, now=NOW).state is VerdictState.RESTARTING


def test_backoff_limit_zero_ignores_a_failed_pod_while_every_replica_is_active() -> None:
    """R9 (b) also needs the active pods (Pending included) to differ from the total replicas."""
    pods = [make_pod("Chief"), make_pod("Worker", 0), make_pod("Worker", 1, phase="Pending")]
    pods.append(make_pod("Worker", 5, phase="Failed", exit_code=137))  # left over from a scale-down
    verdict = decide(backoff_job(0), pods, now=NOW)
    assert (verdict.state, verdict.reason) == (VerdictState.RESTARTING, REASON_RESTARTING)


def test_backoff_limit_one_does_not_count_failed_pods() -> None:
    pods = [make_pod("Chief"), make_pod("Worker", 0), make_pod("Worker", 1, phase="Failed", exit_code=137)]
    assert decide(backoff_job(1), pods, now=NOW).state is VerdictState.RESTARTING


def test_backoff_failure_written_by_the_operator() -> None:
    message = "Job mnist has failed because it has reached the specified backoff limit"
    job = backoff_job(2, conditions=[condition("Created"), condition("Failed", message=message)])
    verdict = decide(job, restarted_workers(1, 1, last_exit_code=137), now=NOW)
    assert (verdict.reason, verdict.retryable, verdict.operator_finished) == (
        REASON_BACKOFF_LIMIT,
        True,
        True,
    )


# --- activeDeadlineSeconds -----------------------------------------------------------------


def deadline_job(seconds: int, started_ago: timedelta | None, **kwargs: Any) -> dict[str, Any]:
    start = None if started_ago is None else NOW - started_ago
    return make_tfjob(
        {"Chief": 1, "Worker": 1}, run_policy={"activeDeadlineSeconds": seconds}, start_time=start, **kwargs
    )


@pytest.mark.parametrize(
    ("seconds", "started_ago", "state"),
    [
        (600, timedelta(seconds=599), RUNNING),
        (600, timedelta(seconds=600), FAILED),  # now - start >= deadline
        (600, timedelta(hours=9), FAILED),  # no event needed (kubeflow/trainer#3358)
        (0, timedelta(seconds=0), FAILED),  # 0 is already past once startTime exists
        (600, None, RUNNING),  # not reconciled yet: no startTime, no deadline
    ],
)
def test_active_deadline_is_measured_against_now(
    seconds: int, started_ago: timedelta | None, state: VerdictState
) -> None:
    verdict = decide(deadline_job(seconds, started_ago), pods_for({"Chief": 1, "Worker": 1}), now=NOW)
    assert verdict.state is state
    if state is FAILED:
        assert (verdict.reason, verdict.retryable, verdict.operator_finished) == (
            REASON_DEADLINE,
            False,
            False,
        )


def test_deadline_uses_the_now_argument() -> None:
    job = deadline_job(600, timedelta(seconds=300))
    pods = pods_for({"Chief": 1, "Worker": 1})
    assert decide(job, pods, now=NOW).state is RUNNING
    assert decide(job, pods, now=NOW + timedelta(seconds=300)).state is FAILED
    naive = (NOW + timedelta(seconds=300)).replace(tzinfo=None)
    assert decide(job, pods, now=naive).state is FAILED


def test_success_before_the_deadline_stands_when_observed_after_it() -> None:
    job = deadline_job(600, timedelta(seconds=700))
    before = make_pod("Chief", phase="Succeeded", finished_at=NOW - timedelta(seconds=200))
    assert decide(job, [before, make_pod("Worker")], now=NOW).state is VerdictState.SUCCEEDED
    after = make_pod("Chief", phase="Succeeded", finished_at=NOW - timedelta(seconds=50))
    assert decide(job, [after, make_pod("Worker")], now=NOW).reason == REASON_DEADLINE


def test_failure_before_the_deadline_keeps_its_own_cause() -> None:
    job = deadline_job(600, timedelta(seconds=700))
    pod = make_pod("Worker", phase="Failed", exit_code=137, finished_at=NOW - timedelta(seconds=200))
    verdict = decide(job, [make_pod("Chief"), pod], now=NOW)
    assert (verdict.reason, verdict.retryable) == ("RetryableExitCode", True)


def test_backoff_is_checked_before_the_deadline() -> None:
    job = make_tfjob(
        {"Chief": 1, "Worker": 1},
        restart_policy="OnFailure",
        run_policy={"activeDeadlineSeconds": 60, "backoffLimit": 1},
        start_time=NOW - timedelta(hours=1),
    )
    pods = [make_pod("Chief"), make_pod("Worker", restarts=1, last_exit_code=137)]
    assert decide(job, pods, now=NOW).reason == REASON_BACKOFF_LIMIT


def test_a_resumed_job_is_not_judged_by_its_old_start_time() -> None:
    """R13: on resume the operator resets startTime; until it has, no deadline can be past."""
    conditions = [condition("Created"), condition("Suspended")]
    job = deadline_job(600, timedelta(hours=2), conditions=conditions)
    assert decide(job, [], now=NOW).state is VerdictState.PENDING


# --- suspend ---------------------------------------------------------------------------------


def test_suspended_job() -> None:
    job = make_tfjob(run_policy={"suspend": True}, conditions=[condition("Created"), condition("Suspended")])
    verdict = decide(job, [], now=NOW)
    assert (verdict.state, verdict.reason, verdict.retryable) == (
        VerdictState.SUSPENDED,
        REASON_SUSPENDED,
        False,
    )


def test_suspend_wins_over_pods_not_yet_removed_and_over_deadlines() -> None:
    job = make_tfjob(
        run_policy={"suspend": True, "activeDeadlineSeconds": 1}, start_time=NOW - timedelta(hours=1)
    )
    pods = [make_pod("Chief", phase="Failed", exit_code=1), make_pod("Worker")]
    assert decide(job, pods, now=NOW).state is VerdictState.SUSPENDED


def test_a_finished_job_stays_finished_when_suspended() -> None:
    job = make_tfjob(run_policy={"suspend": True}, conditions=[condition("Created"), condition("Succeeded")])
    assert decide(job, [], now=NOW).state is VerdictState.SUCCEEDED


# --- managedBy and reconciliation -------------------------------------------------------------


def test_job_managed_by_multikueue_is_judged_by_its_conditions_only() -> None:
    job = make_tfjob(run_policy={"managedBy": MANAGED_BY_MULTIKUEUE}, conditions=[], start_time=None)
    pods = [make_pod("Chief", phase="Failed", exit_code=1)]
    verdict = decide(job, pods, now=NOW)
    assert (verdict.state, verdict.reason) == (VerdictState.PENDING, REASON_MANAGED_EXTERNALLY)
    assert MANAGED_BY_MULTIKUEUE in verdict.message
    assert verdict.replicas["Chief"].failed == 1  # still summarised for the logs


@pytest.mark.parametrize(
    ("kind", "state"), [("Running", RUNNING), ("Succeeded", VerdictState.SUCCEEDED), ("Failed", FAILED)]
)
def test_job_managed_elsewhere_mirrors_the_remote_conditions(kind: str, state: VerdictState) -> None:
    job = make_tfjob(
        run_policy={"managedBy": MANAGED_BY_MULTIKUEUE}, conditions=[condition("Created"), condition(kind)]
    )
    verdict = decide(job, [], now=NOW)
    assert verdict.state is state
    if state is FAILED:
        assert (verdict.reason, verdict.retryable, verdict.operator_finished) == (REASON_FAILED, True, True)


def test_managed_by_the_training_operator_is_the_normal_case() -> None:
    job = make_tfjob(run_policy={"managedBy": MANAGED_BY_TRAINING_OPERATOR})
    assert decide(job, pods_for({"Chief": 1, "Worker": 2}), now=NOW).state is RUNNING


def test_job_without_status_and_pods_is_not_reconciled() -> None:
    job = make_tfjob(conditions=[], start_time=None)
    verdict = decide(job, [], now=NOW)
    assert (verdict.state, verdict.reason) == (VerdictState.PENDING, REASON_NOT_RECONCILED)
    assert decide(job, pods_for({"Chief": 1, "Worker": 2}), now=NOW).state is RUNNING
