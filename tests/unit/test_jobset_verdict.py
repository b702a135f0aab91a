"""The verdict on a JobSet: the TFJob engine's rules on the JobSet's Jobs and pods.

Two kinds of tests.  A differential table runs the same situation through both engines — a
TFJob with the training operator's pods, and the JobSet the provider translates it into with
the JobSet and Job controllers' pods — and demands the same state, reason and retry class.  The
seed's situations and the JobSet-only ones (terminal conditions, restart attempts, replaced pods,
the failure policy) are checked on their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from tests.unit.factories import JOB_NAME, NAMESPACE, NOW, make_pod, make_tfjob
from tests.unit.jobset_states import (
    JOBSET_NAME,
    child_job,
    jobset_condition,
    jobset_pod,
    make_jobset,
)
from tfjob_provider._jobset import names
from tfjob_provider._jobset.verdict import decide_jobset
from tfjob_provider.manifest import build_tfjob
from tfjob_provider.policy import (
    REASON_ALL_WORKERS_SUCCEEDED,
    REASON_BACKOFF_LIMIT,
    REASON_CHIEF_SUCCEEDED,
    REASON_DEADLINE,
    REASON_EVICTED,
    REASON_IMAGE_PULL,
    REASON_MANAGED_EXTERNALLY,
    REASON_NOT_RECONCILED,
    REASON_PERMANENT_EXIT_CODE,
    REASON_PODS_PENDING,
    REASON_RESTARTING,
    REASON_RETRYABLE_EXIT_CODE,
    REASON_RUNNING,
    REASON_SUCCEEDED,
    REASON_SUSPENDED,
    REASON_WORKER0_SUCCEEDED,
    Rules,
    VerdictState,
    decide,
)

PS_LAYOUT: dict[str, Any] = {"chief": 1, "worker": 2, "ps": 1}


@dataclass(frozen=True)
class Situation:
    """Pods per replica slot, with make_pod keywords; the same for the TFJob and the JobSet."""

    build: dict[str, Any]
    pods: dict[tuple[str, int], dict[str, Any]]
    state: VerdictState
    reason: str
    retryable: bool = False
    rules: Rules = field(default_factory=Rules)


def _tfjob_pods(situation: Situation) -> list[dict[str, Any]]:
    restart = situation.build.get("restart_policy", "Never")
    return [
        make_pod({"ps": "PS"}.get(rjob, rjob.capitalize()), index, restart_policy=restart, **pod)
        for (rjob, index), pod in situation.pods.items()
    ]


def _jobset_pods(situation: Situation) -> list[dict[str, Any]]:
    return [jobset_pod(rjob, index, **pod) for (rjob, index), pod in situation.pods.items()]


def _tfjob(build: dict[str, Any]) -> dict[str, Any]:
    """The TFJob of *build* as stored after the operator's first reconcile (Created, startTime)."""
    manifest = build_tfjob(name=JOB_NAME, namespace=NAMESPACE, image="trainer:1", **build)
    stored = make_tfjob()
    return {**manifest, "metadata": stored["metadata"], "status": stored["status"]}


def _jobs(jobset: dict[str, Any]) -> list[dict[str, Any]]:
    return [child_job(jobset, rjob["name"]) for rjob in jobset["spec"]["replicatedJobs"]]


RUNNING: dict[str, Any] = {"phase": "Running"}
SUCCEEDED: dict[str, Any] = {"phase": "Succeeded"}

# The seed's situations and the rules of docs/concepts/rules.md §1-§4, on both engines.
DIFFERENTIAL = {
    "PS layout, chief completed": Situation(
        PS_LAYOUT,
        {("chief", 0): SUCCEEDED, ("worker", 0): RUNNING, ("worker", 1): RUNNING, ("ps", 0): RUNNING},
        VerdictState.SUCCEEDED,
        REASON_CHIEF_SUCCEEDED,
    ),
    "PS layout, all running": Situation(
        PS_LAYOUT,
        {("chief", 0): RUNNING, ("worker", 0): RUNNING, ("worker", 1): RUNNING, ("ps", 0): RUNNING},
        VerdictState.RUNNING,
        REASON_RUNNING,
    ),
    "ExitCode, worker killed with 137: replaced, the job goes on": Situation(
        {**PS_LAYOUT, "restart_policy": "ExitCode"},
        {
            ("chief", 0): RUNNING,
            ("worker", 0): RUNNING,
            ("worker", 1): {"phase": "Failed", "exit_code": 137},
            ("ps", 0): RUNNING,
        },
        VerdictState.RESTARTING,
        REASON_RESTARTING,
    ),
    "ExitCode, chief program error (exit 1): permanent": Situation(
        {**PS_LAYOUT, "restart_policy": "ExitCode"},
        {
            ("chief", 0): {"phase": "Failed", "exit_code": 1},
            ("worker", 0): RUNNING,
            ("worker", 1): RUNNING,
            ("ps", 0): RUNNING,
        },
        VerdictState.FAILED,
        REASON_PERMANENT_EXIT_CODE,
    ),
    "Never, PS SIGKILLed: the try fails retryably": Situation(
        PS_LAYOUT,
        {
            ("chief", 0): RUNNING,
            ("worker", 0): RUNNING,
            ("worker", 1): RUNNING,
            ("ps", 0): {"phase": "Failed", "exit_code": 137},
        },
        VerdictState.FAILED,
        REASON_RETRYABLE_EXIT_CODE,
        retryable=True,
    ),
    "Never, chief exit 1: permanent": Situation(
        PS_LAYOUT,
        {
            ("chief", 0): {"phase": "Failed", "exit_code": 1},
            ("worker", 0): RUNNING,
            ("worker", 1): RUNNING,
            ("ps", 0): RUNNING,
        },
        VerdictState.FAILED,
        REASON_PERMANENT_EXIT_CODE,
    ),
    "Never, evicted worker": Situation(
        PS_LAYOUT,
        {
            ("chief", 0): RUNNING,
            ("worker", 0): RUNNING,
            ("worker", 1): {"phase": "Failed", "exit_code": None, "pod_reason": "Evicted"},
            ("ps", 0): RUNNING,
        },
        VerdictState.FAILED,
        REASON_EVICTED,
        retryable=True,
    ),
    "worker mode: worker-0 completed decides": Situation(
        {"worker": 3},
        {("worker", 0): SUCCEEDED, ("worker", 1): RUNNING, ("worker", 2): RUNNING},
        VerdictState.SUCCEEDED,
        REASON_WORKER0_SUCCEEDED,
    ),
    "AllWorkers: worker-0 alone is not enough": Situation(
        {"worker": 2, "success_policy": "AllWorkers"},
        {("worker", 0): SUCCEEDED, ("worker", 1): RUNNING},
        VerdictState.RUNNING,
        REASON_RUNNING,
    ),
    "AllWorkers: every worker completed": Situation(
        {"worker": 2, "success_policy": "AllWorkers"},
        {("worker", 0): SUCCEEDED, ("worker", 1): SUCCEEDED},
        VerdictState.SUCCEEDED,
        REASON_ALL_WORKERS_SUCCEEDED,
    ),
    "OnFailure, crash loop past backoffLimit": Situation(
        {"worker": 2, "restart_policy": "OnFailure", "backoff_limit": 3},
        {
            ("worker", 0): {"phase": "Running", "restarts": 2, "last_exit_code": 1},
            ("worker", 1): {"phase": "Running", "restarts": 1, "last_exit_code": 1},
        },
        VerdictState.FAILED,
        REASON_BACKOFF_LIMIT,
    ),
    "image that does not exist": Situation(
        {"worker": 1},
        {("worker", 0): {"phase": "Pending", "waiting": "InvalidImageName"}},
        VerdictState.FAILED,
        REASON_IMAGE_PULL,
    ),
    "pods pending": Situation(
        {"worker": 2},
        {("worker", 0): {"phase": "Pending"}, ("worker", 1): {"phase": "Pending"}},
        VerdictState.PENDING,
        REASON_PODS_PENDING,
    ),
    "Rules.permanent_exit_codes: 137 is permanent under ExitCode": Situation(
        {**PS_LAYOUT, "restart_policy": "ExitCode"},
        {
            ("chief", 0): RUNNING,
            ("worker", 0): RUNNING,
            ("worker", 1): {"phase": "Failed", "exit_code": 137},
            ("ps", 0): RUNNING,
        },
        VerdictState.FAILED,
        REASON_PERMANENT_EXIT_CODE,
        rules=Rules(permanent_exit_codes=frozenset({137})),
    ),
}


@pytest.mark.parametrize("situation", DIFFERENTIAL.values(), ids=DIFFERENTIAL.keys())
def test_a_jobset_gets_the_verdict_its_tfjob_gets(situation: Situation) -> None:
    jobset = make_jobset(**situation.build)
    on_tfjob = decide(_tfjob(situation.build), _tfjob_pods(situation), now=NOW, rules=situation.rules)
    on_jobset = decide_jobset(jobset, _jobs(jobset), _jobset_pods(situation), now=NOW, rules=situation.rules)
    assert (on_tfjob.state, on_tfjob.reason) == (situation.state, situation.reason), on_tfjob.message
    assert (on_jobset.state, on_jobset.reason, on_jobset.retryable) == (
        on_tfjob.state,
        on_tfjob.reason,
        on_tfjob.retryable,
    ), on_jobset.message
    assert len(on_jobset.culprits) == len(on_tfjob.culprits)
    assert all(name.startswith(f"{JOBSET_NAME}-") for name in on_jobset.culprits)
    assert f"JobSet {NAMESPACE}/{JOBSET_NAME}" in on_jobset.message
    assert "TFJob" not in on_jobset.message and "training operator" not in on_jobset.message
    assert {name: (s.active, s.succeeded, s.failed) for name, s in on_jobset.replicas.items()} == {
        name: (s.active, s.succeeded, s.failed) for name, s in on_tfjob.replicas.items()
    }


# --- What only a JobSet shows -------------------------------------------------------------------

PS_EXIT_CODE: dict[str, Any] = {**PS_LAYOUT, "restart_policy": "ExitCode"}


def _running_ps_layout(**worker1: Any) -> list[dict[str, Any]]:
    return [
        jobset_pod("chief", 0, phase="Running"),
        jobset_pod("worker", 0, phase="Running"),
        jobset_pod("worker", 1, **(worker1 or {"phase": "Running"})),
        jobset_pod("ps", 0, phase="Running"),
    ]


def test_the_job_controllers_replacement_pod_is_the_one_judged() -> None:
    jobset = make_jobset(**PS_EXIT_CODE)
    old = jobset_pod(
        "worker", 1, phase="Failed", exit_code=137, suffix="old01", created=NOW - timedelta(minutes=9)
    )
    new = jobset_pod("worker", 1, phase="Running", suffix="new01", created=NOW - timedelta(minutes=1))
    pods = [*_running_ps_layout(), old, new]
    pods.pop(2)  # the layout's own worker 1
    verdict = decide_jobset(jobset, _jobs(jobset), pods, now=NOW)
    assert (verdict.state, verdict.reason) == (VerdictState.RUNNING, REASON_RUNNING), verdict.message
    assert verdict.replicas["Worker"].active == 2


def test_pods_and_jobs_of_an_older_restart_attempt_do_not_count() -> None:
    jobset = make_jobset(**PS_LAYOUT, restarts=1)
    jobs = [child_job(jobset, rjob["name"], attempt=1) for rjob in jobset["spec"]["replicatedJobs"]]
    jobs.append(child_job(jobset, "ps", attempt=0, finished=names.JOB_FAILED, reason="BackoffLimitExceeded"))
    pods = [jobset_pod(rjob, index, attempt=1, phase="Running") for rjob, index in PS_SLOTS]
    pods.append(jobset_pod("ps", 0, attempt=0, phase="Failed", exit_code=137, suffix="old01"))
    verdict = decide_jobset(jobset, jobs, pods, now=NOW)
    assert (verdict.state, verdict.reason) == (VerdictState.RUNNING, REASON_RUNNING), verdict.message


PS_SLOTS = (("chief", 0), ("worker", 0), ("worker", 1), ("ps", 0))


def test_a_failed_jobset_is_judged_by_the_pod_that_failed_not_by_its_cleanup() -> None:
    failed_at = NOW - timedelta(minutes=2)
    jobset = make_jobset(
        **PS_LAYOUT,
        conditions=[jobset_condition("Failed", reason="FailedJobs", at=NOW - timedelta(minutes=1))],
    )
    jobs = _jobs(jobset)
    jobs[2] = child_job(
        jobset, "ps", finished=names.JOB_FAILED, reason="BackoffLimitExceeded", failed_at=failed_at
    )
    pods = [
        jobset_pod(
            "chief", 0, phase="Running", deleting=True
        ),  # the JobSet controller deletes the active Jobs
        jobset_pod("worker", 0, phase="Running", deleting=True),
        jobset_pod("ps", 0, phase="Failed", exit_code=137),
    ]
    verdict = decide_jobset(jobset, jobs, pods, now=NOW)
    assert (verdict.state, verdict.reason, verdict.retryable) == (
        VerdictState.FAILED,
        REASON_RETRYABLE_EXIT_CODE,
        True,
    ), verdict.message
    assert verdict.operator_finished
    assert verdict.culprits == ("mnist-ps-0-0-abcde",)


def test_a_job_failed_before_the_jobset_controller_wrote_it_is_a_failure_not_yet_finished() -> None:
    jobset = make_jobset(**PS_EXIT_CODE)
    jobs = _jobs(jobset)
    jobs[0] = child_job(jobset, "chief", finished=names.JOB_FAILED, reason="PodFailurePolicy")
    pods = [jobset_pod("chief", 0, phase="Failed", exit_code=2), *_running_ps_layout()[1:]]
    verdict = decide_jobset(jobset, jobs, pods, now=NOW)
    assert (verdict.state, verdict.reason, verdict.retryable) == (
        VerdictState.FAILED,
        REASON_PERMANENT_EXIT_CODE,
        False,
    )
    assert (
        not verdict.operator_finished
    )  # the provider deletes the JobSet; its controller has not finished it


def test_a_job_deadline_is_the_jobs_deadline() -> None:
    jobset = make_jobset(
        worker=2, active_deadline_seconds=300, conditions=[jobset_condition("Failed", reason="FailedJobs")]
    )
    jobs = [child_job(jobset, "worker", finished=names.JOB_FAILED, reason="DeadlineExceeded")]
    verdict = decide_jobset(jobset, jobs, [], now=NOW)
    assert (verdict.state, verdict.reason, verdict.retryable) == (VerdictState.FAILED, REASON_DEADLINE, False)
    assert verdict.operator_finished


def test_an_onfailure_job_past_its_backoff_limit_is_backoff_limit_exceeded() -> None:
    jobset = make_jobset(worker=2, restart_policy="OnFailure", backoff_limit=4)
    jobs = [child_job(jobset, "worker", finished=names.JOB_FAILED, reason="BackoffLimitExceeded")]
    verdict = decide_jobset(jobset, jobs, [], now=NOW)
    assert (verdict.state, verdict.reason) == (VerdictState.FAILED, REASON_BACKOFF_LIMIT), verdict.message
    assert "backoffLimit of 4" in verdict.message


def test_a_never_job_past_its_backoff_limit_is_judged_by_its_pod() -> None:
    """backoffLimit 0 is how Never is written: the Job's reason says nothing about the cause."""
    jobset = make_jobset(worker=2)
    jobs = [child_job(jobset, "worker", finished=names.JOB_FAILED, reason="BackoffLimitExceeded")]
    pods = [jobset_pod("worker", 0, phase="Running"), jobset_pod("worker", 1, phase="Failed", exit_code=1)]
    verdict = decide_jobset(jobset, jobs, pods, now=NOW)
    assert (verdict.state, verdict.reason) == (VerdictState.FAILED, REASON_PERMANENT_EXIT_CODE), (
        verdict.message
    )


def test_a_completed_jobset_without_pods_succeeded() -> None:
    jobset = make_jobset(**PS_LAYOUT, conditions=[jobset_condition("Completed", reason="AllJobsCompleted")])
    verdict = decide_jobset(jobset, [], [], now=NOW)
    assert (verdict.state, verdict.reason) == (VerdictState.SUCCEEDED, REASON_SUCCEEDED)
    assert verdict.operator_finished
    assert "its Completed condition is set" in verdict.message


def test_the_success_policy_met_by_the_jobs_is_success_before_the_controller_writes_it() -> None:
    jobset = make_jobset(**PS_LAYOUT)
    jobs = _jobs(jobset)
    jobs[0] = child_job(jobset, "chief", finished=names.JOB_COMPLETE, counts={"succeeded": 1})
    verdict = decide_jobset(jobset, jobs, [], now=NOW)
    assert verdict.state is VerdictState.SUCCEEDED
    assert not verdict.operator_finished
    assert verdict.replicas["Chief"].succeeded == 1


def test_a_suspended_jobset_is_suspended() -> None:
    jobset = make_jobset(**PS_LAYOUT, suspend=True)
    verdict = decide_jobset(jobset, _jobs(jobset), [], now=NOW)
    assert (verdict.state, verdict.reason) == (VerdictState.SUSPENDED, REASON_SUSPENDED)
    assert "spec.suspend is true" in verdict.message


def test_a_jobset_nobody_reconciled_says_so() -> None:
    jobset = make_jobset(**PS_LAYOUT)
    jobset["status"] = {}
    verdict = decide_jobset(jobset, [], [], now=NOW)
    assert (verdict.state, verdict.reason) == (VerdictState.PENDING, REASON_NOT_RECONCILED)
    assert "no JobSet controller has reconciled it" in verdict.message


def test_a_multikueue_jobset_mirrors_the_conditions_of_the_worker_cluster() -> None:
    jobset = make_jobset(worker=2, managed_by="kueue.x-k8s.io/multikueue")
    assert jobset["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    waiting = decide_jobset(jobset, [], [], now=NOW)
    assert (waiting.state, waiting.reason) == (VerdictState.PENDING, REASON_MANAGED_EXTERNALLY)
    jobset["status"]["conditions"] = [jobset_condition("Completed")]
    assert decide_jobset(jobset, [], [], now=NOW).state is VerdictState.SUCCEEDED


def _restartable(jobset: dict[str, Any], *, max_restarts: int, counted: int = 0) -> dict[str, Any]:
    """A JobSet written elsewhere: its failure policy restarts the whole set."""
    jobset["spec"]["failurePolicy"] = {"maxRestarts": max_restarts}
    jobset["status"]["restartsCountTowardsMax"] = counted
    return jobset


def test_a_failure_the_failure_policy_restarts_is_restarting() -> None:
    jobset = _restartable(make_jobset(**PS_LAYOUT), max_restarts=3)
    pods = _running_ps_layout(phase="Failed", exit_code=137)
    verdict = decide_jobset(jobset, _jobs(jobset), pods, now=NOW)
    assert (verdict.state, verdict.reason) == (VerdictState.RESTARTING, REASON_RESTARTING), verdict.message
    assert "failurePolicy restarts all its Jobs" in verdict.message


def test_no_restarts_left_is_a_failure() -> None:
    jobset = _restartable(make_jobset(**PS_LAYOUT), max_restarts=3, counted=3)
    pods = _running_ps_layout(phase="Failed", exit_code=137)
    verdict = decide_jobset(jobset, _jobs(jobset), pods, now=NOW)
    assert (verdict.state, verdict.reason) == (VerdictState.FAILED, REASON_RETRYABLE_EXIT_CODE)


def test_fail_on_worker_failure_does_not_wait_for_a_jobset_restart() -> None:
    jobset = _restartable(make_jobset(**PS_LAYOUT), max_restarts=3)
    pods = _running_ps_layout(phase="Failed", exit_code=137)
    rules = Rules(fail_on_worker_failure=True)
    assert decide_jobset(jobset, _jobs(jobset), pods, now=NOW, rules=rules).state is VerdictState.FAILED


def test_a_restarting_jobset_is_restarting() -> None:
    jobset = make_jobset(
        **PS_LAYOUT, conditions=[jobset_condition("RestartingJobSet", reason="DefaultFailurePolicy")]
    )
    pods = _running_ps_layout(phase="Failed", exit_code=137)
    assert decide_jobset(jobset, _jobs(jobset), pods, now=NOW).state is VerdictState.RESTARTING


def test_malformed_input_never_raises() -> None:
    for jobset, jobs, pods in (
        ({}, [], []),
        ({"spec": {"replicatedJobs": "nope"}, "status": []}, [None, 3], [{"metadata": []}]),
        (
            make_jobset(worker=1),
            [{"metadata": {"labels": {"jobset.sigs.k8s.io/jobset-name": "mnist"}}}],
            ["pod"],
        ),
    ):
        verdict = decide_jobset(jobset, jobs, pods, now=NOW)  # type: ignore[arg-type]
        assert verdict.state in VerdictState
