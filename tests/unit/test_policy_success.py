"""Who decides success (R5, R6; docs/concepts/rules.md §1) and Rules.success_policy overrides."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.factories import NOW, condition, make_pod, make_tfjob, pods_for
from tfjob_provider.policy import (
    REASON_ALL_WORKERS_SUCCEEDED,
    REASON_AWAITING_SUCCESS_POLICY,
    REASON_CHIEF_SUCCEEDED,
    REASON_PERMANENT_EXIT_CODE,
    REASON_PODS_PENDING,
    REASON_RUNNING,
    REASON_SUCCEEDED,
    REASON_WORKER0_SUCCEEDED,
    Rules,
    VerdictState,
    decide,
)

SUCCEEDED, RUNNING, FAILED = VerdictState.SUCCEEDED, VerdictState.RUNNING, VerdictState.FAILED


@pytest.mark.parametrize("chief", ["Chief", "Master"])
def test_chief_or_master_alone_decides_success(chief: str) -> None:
    job = make_tfjob({chief: 1, "Worker": 3, "PS": 2})
    pods = [make_pod(chief, phase="Succeeded"), *pods_for({"Worker": 3, "PS": 2})]
    verdict = decide(job, pods, now=NOW)
    assert (verdict.state, verdict.reason) == (SUCCEEDED, REASON_CHIEF_SUCCEEDED)
    assert verdict.culprits == (f"mnist-{chief.lower()}-0",)
    assert chief in verdict.message
    assert verdict.operator_finished is False  # the pods show it before the operator wrote it


def test_in_chief_mode_worker0_success_does_not_finish_the_job() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 2})
    pods = [
        make_pod("Chief"),
        make_pod("Worker", 0, phase="Succeeded"),
        make_pod("Worker", 1, phase="Succeeded"),
    ]
    verdict = decide(job, pods, now=NOW)
    assert (verdict.state, verdict.reason) == (RUNNING, REASON_RUNNING)


def test_chief_with_several_replicas_needs_them_all() -> None:
    job = make_tfjob({"Chief": 2, "Worker": 1})
    pods = [make_pod("Chief", 0, phase="Succeeded"), make_pod("Chief", 1), make_pod("Worker", 0)]
    assert decide(job, pods, now=NOW).state is RUNNING
    pods[1] = make_pod("Chief", 1, phase="Succeeded")
    assert decide(job, pods, now=NOW).state is SUCCEEDED


def test_chief_success_does_not_need_an_exit_code() -> None:
    """R5 counts pods in phase Succeeded; only worker-0 (R6) must show exit code 0."""
    job = make_tfjob({"Chief": 1, "Worker": 1})
    verdict = decide(job, [make_pod("Chief", phase="Succeeded", exit_code=None), make_pod("Worker")], now=NOW)
    assert verdict.state is SUCCEEDED


def test_worker_mode_worker0_decides_by_default() -> None:
    job = make_tfjob({"Worker": 4, "PS": 1})
    pods = [
        make_pod("Worker", 0, phase="Succeeded"),
        *[make_pod("Worker", i) for i in (1, 2, 3)],
        make_pod("PS"),
    ]
    verdict = decide(job, pods, now=NOW)
    assert (verdict.state, verdict.reason, verdict.culprits) == (
        SUCCEEDED,
        REASON_WORKER0_SUCCEEDED,
        ("mnist-worker-0",),
    )


def test_worker0_without_tensorflow_exit_code_is_not_completed() -> None:
    """The operator's own status test relies on this — a Succeeded pod without a status."""
    job = make_tfjob({"Worker": 4})
    pods = [
        make_pod("Worker", 0, phase="Succeeded", exit_code=None),
        make_pod("Worker", 1, phase="Succeeded"),
    ]
    pods += [make_pod("Worker", 2), make_pod("Worker", 3)]
    assert decide(job, pods, now=NOW).state is RUNNING


def test_worker_mode_all_workers_succeeded_counts_even_without_exit_codes() -> None:
    job = make_tfjob({"Worker": 2})
    pods = [make_pod("Worker", i, phase="Succeeded", exit_code=None) for i in (0, 1)]
    verdict = decide(job, pods, now=NOW)
    assert (verdict.state, verdict.reason) == (SUCCEEDED, REASON_ALL_WORKERS_SUCCEEDED)
    assert verdict.culprits == ("mnist-worker-0", "mnist-worker-1")


@pytest.mark.parametrize(
    ("policy", "state"), [("AllWorkers", RUNNING), ("", SUCCEEDED), ("Whatever", SUCCEEDED)]
)
def test_success_policy_all_workers_waits_for_every_worker(policy: str, state: VerdictState) -> None:
    """Any successPolicy other than AllWorkers behaves like the default (the operator only tests for it)."""
    job = make_tfjob({"Worker": 3}, success_policy=policy)
    pods = [
        make_pod("Worker", 0, phase="Succeeded"),
        make_pod("Worker", 1, phase="Succeeded"),
        make_pod("Worker", 2),
    ]
    assert decide(job, pods, now=NOW).state is state


def test_success_policy_all_workers_succeeds_when_all_are_done() -> None:
    job = make_tfjob({"Worker": 2}, success_policy="AllWorkers")
    verdict = decide(job, pods_for({"Worker": 2}, phase="Succeeded"), now=NOW)
    assert (verdict.state, verdict.reason) == (SUCCEEDED, REASON_ALL_WORKERS_SUCCEEDED)


def test_success_policy_is_ignored_in_chief_mode() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 2}, success_policy="AllWorkers")
    verdict = decide(job, [make_pod("Chief", phase="Succeeded"), *pods_for({"Worker": 2})], now=NOW)
    assert verdict.state is SUCCEEDED


@pytest.mark.parametrize("helper", ["PS", "Evaluator"])
def test_ps_and_evaluator_never_finish_or_run_a_job(helper: str) -> None:
    job = make_tfjob({helper: 2})
    assert decide(job, pods_for({helper: 2}), now=NOW).state is VerdictState.PENDING
    assert decide(job, pods_for({helper: 2}, phase="Succeeded"), now=NOW).state is VerdictState.PENDING


def test_running_workers_do_not_make_a_chief_job_running() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 2})
    chief = make_pod("Chief", phase="Pending", unschedulable="0/3 nodes are available")
    verdict = decide(job, [chief, *pods_for({"Worker": 2})], now=NOW)
    assert (verdict.state, verdict.reason) == (VerdictState.PENDING, REASON_PODS_PENDING)
    assert "Unschedulable" in verdict.message


def test_zero_chief_replicas_succeed_at_once() -> None:
    """R16 with R5/R6: (replicas - succeeded) == 0 holds for replicas 0 as soon as the job is reconciled."""
    job = make_tfjob({"Chief": 0, "Worker": 1})
    assert decide(job, [make_pod("Worker")], now=NOW).state is SUCCEEDED


def test_success_and_failure_in_the_same_pass_is_failed() -> None:
    """R8: Succeeded and Failed both set, Failed last; the SDK reads Failed first."""
    job = make_tfjob({"Chief": 1, "Worker": 2})
    pods = [
        make_pod("Chief", phase="Succeeded"),
        make_pod("Worker", 0),
        make_pod("Worker", 1, phase="Failed"),
    ]
    verdict = decide(job, pods, now=NOW)
    assert (verdict.state, verdict.reason) == (FAILED, REASON_PERMANENT_EXIT_CODE)


def test_worker0_success_and_another_worker_failure_is_failed() -> None:
    job = make_tfjob({"Worker": 2})
    pods = [make_pod("Worker", 0, phase="Succeeded"), make_pod("Worker", 1, phase="Failed", exit_code=2)]
    assert decide(job, pods, now=NOW).state is FAILED


def test_worker0_in_a_duplicated_slot_does_not_count() -> None:
    job = make_tfjob({"Worker": 2})
    twin = make_pod("Worker", 0, phase="Succeeded", name="mnist-worker-0-twin")
    pods = [make_pod("Worker", 0, phase="Succeeded"), twin, make_pod("Worker", 1)]
    assert decide(job, pods, now=NOW).state is RUNNING


# --- a terminal condition already on the TFJob (R1) ----------------------------------------


def finished_job(*kinds: str, **kwargs: Any) -> dict[str, Any]:
    return make_tfjob(conditions=[condition("Created"), *(condition(kind) for kind in kinds)], **kwargs)


def test_succeeded_condition_is_final_and_names_the_rule_the_pods_show() -> None:
    verdict = decide(finished_job("Succeeded"), [make_pod("Chief", phase="Succeeded")], now=NOW)
    assert (verdict.state, verdict.reason, verdict.operator_finished) == (
        SUCCEEDED,
        REASON_CHIEF_SUCCEEDED,
        True,
    )


def test_succeeded_condition_without_pods() -> None:
    job = finished_job("Succeeded", replica_statuses={"Chief": {"succeeded": 1}, "Worker": {"succeeded": 2}})
    verdict = decide(job, [], now=NOW)
    assert (verdict.state, verdict.reason, verdict.operator_finished) == (SUCCEEDED, REASON_SUCCEEDED, True)
    assert verdict.replicas["Worker"].succeeded == 2  # from status.replicaStatuses once the pods are gone


def test_succeeded_condition_wins_over_later_pod_failures() -> None:
    """Once finished, the operator never re-evaluates (R1): a worker failing afterwards is moot."""
    pods = [make_pod("Chief", phase="Succeeded"), make_pod("Worker", 0, phase="Failed", exit_code=1)]
    assert decide(finished_job("Succeeded"), pods, now=NOW).state is SUCCEEDED


def test_succeeded_and_failed_conditions_mean_failed() -> None:
    verdict = decide(finished_job("Succeeded", "Failed"), [make_pod("Chief", phase="Succeeded")], now=NOW)
    assert (verdict.state, verdict.operator_finished) == (FAILED, True)


def test_running_condition_false_is_not_running() -> None:
    job = make_tfjob(conditions=[condition("Created"), condition("Running", "False")])
    assert decide(job, [make_pod("Chief", phase="Pending")], now=NOW).state is VerdictState.PENDING


def test_sticky_running_condition_keeps_running() -> None:
    """R8: Running stays True until something replaces it, even with no pod running now."""
    job = make_tfjob(conditions=[condition("Created"), condition("Running")])
    assert decide(job, [make_pod("Chief", phase="Pending")], now=NOW).state is RUNNING


# --- dynamic workers (R7 step 2) -----------------------------------------------------------


def test_dynamic_worker_failure_is_ignored_in_chief_mode() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 3}, dynamic_workers=True)
    pods = [
        make_pod("Chief"),
        make_pod("Worker", 0),
        make_pod("Worker", 1, phase="Failed"),
        make_pod("Worker", 2),
    ]
    assert decide(job, pods, now=NOW).state is RUNNING
    assert decide(job, pods, now=NOW, rules=Rules(fail_on_worker_failure=True)).state is FAILED


def test_dynamic_worker_other_than_worker0_failing_keeps_worker_mode_running() -> None:
    job = make_tfjob({"Worker": 3}, dynamic_workers=True)
    pods = [make_pod("Worker", 0), make_pod("Worker", 1, phase="Failed"), make_pod("Worker", 2)]
    assert decide(job, pods, now=NOW).state is RUNNING


def test_dynamic_worker0_failing_for_good_fails_the_job() -> None:
    """docs/concepts/rules.md §8.4: the operator would hang in Running; worker-0 can never succeed."""
    job = make_tfjob({"Worker": 3}, dynamic_workers=True)
    pods = [make_pod("Worker", 0, phase="Failed", exit_code=1), make_pod("Worker", 1), make_pod("Worker", 2)]
    verdict = decide(job, pods, now=NOW)
    assert (verdict.state, verdict.culprits, verdict.operator_finished) == (
        FAILED,
        ("mnist-worker-0",),
        False,
    )


def test_dynamic_worker_failing_under_all_workers_fails_the_job() -> None:
    job = make_tfjob({"Worker": 3}, dynamic_workers=True, success_policy="AllWorkers")
    pods = [make_pod("Worker", 0), make_pod("Worker", 1, phase="Failed"), make_pod("Worker", 2)]
    assert decide(job, pods, now=NOW).state is FAILED


# --- Rules.success_policy --------------------------------------------------------------------


def test_rule_worker0_finishes_a_chief_job_when_worker0_completes() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 2})
    pods = [make_pod("Chief"), make_pod("Worker", 0, phase="Succeeded"), make_pod("Worker", 1)]
    verdict = decide(job, pods, now=NOW, rules=Rules(success_policy="worker0"))
    assert (verdict.state, verdict.reason, verdict.operator_finished) == (
        SUCCEEDED,
        REASON_WORKER0_SUCCEEDED,
        False,
    )


def test_rule_chief_in_worker_mode_means_worker0() -> None:
    job = make_tfjob({"Worker": 2}, success_policy="AllWorkers")
    pods = [make_pod("Worker", 0, phase="Succeeded"), make_pod("Worker", 1)]
    assert decide(job, pods, now=NOW).state is RUNNING
    assert decide(job, pods, now=NOW, rules=Rules(success_policy="chief")).state is SUCCEEDED


def test_rule_all_workers_waits_before_the_operator_writes_its_condition() -> None:
    job = make_tfjob({"Worker": 2})
    pods = [make_pod("Worker", 0, phase="Succeeded"), make_pod("Worker", 1)]
    verdict = decide(job, pods, now=NOW, rules=Rules(success_policy="all_workers"))
    assert (verdict.state, verdict.reason) == (RUNNING, REASON_AWAITING_SUCCESS_POLICY)


def test_rule_all_workers_outlives_the_operators_succeeded_condition() -> None:
    job = finished_job("Succeeded", replicas={"Worker": 3})
    pods = [
        make_pod("Worker", 0, phase="Succeeded"),
        make_pod("Worker", 1, phase="Succeeded"),
        make_pod("Worker", 2),
    ]
    rules = Rules(success_policy="all_workers")
    verdict = decide(job, pods, now=NOW, rules=rules)
    assert (verdict.state, verdict.reason, verdict.operator_finished) == (
        RUNNING,
        REASON_AWAITING_SUCCESS_POLICY,
        True,
    )
    pods[2] = make_pod("Worker", 2, phase="Succeeded")
    assert decide(job, pods, now=NOW, rules=rules).reason == REASON_ALL_WORKERS_SUCCEEDED
    pods[2] = make_pod("Worker", 2, phase="Failed", exit_code=1)
    failed = decide(job, pods, now=NOW, rules=rules)
    assert (failed.state, failed.culprits) == (FAILED, ("mnist-worker-2",))


def test_rule_all_workers_accepts_the_operators_success_once_the_pods_are_gone() -> None:
    job = finished_job("Succeeded", replicas={"Worker": 3})
    pods = [make_pod("Worker", 0, phase="Succeeded"), make_pod("Worker", 1, deleting=True)]  # cleanPodPolicy
    verdict = decide(job, pods, now=NOW, rules=Rules(success_policy="all_workers"))
    assert (verdict.state, verdict.reason) == (SUCCEEDED, REASON_SUCCEEDED)


def test_rule_worker0_without_workers_falls_back_to_the_chief() -> None:
    job = make_tfjob({"Chief": 1, "PS": 1})
    pods = [make_pod("Chief", phase="Succeeded"), make_pod("PS")]
    assert decide(job, pods, now=NOW, rules=Rules(success_policy="worker0")).reason == REASON_CHIEF_SUCCEEDED
