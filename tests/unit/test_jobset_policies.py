"""The JobSet controller's policies as tfjob_provider._jobset.policies replays them.

Each table takes its cases from kubernetes-sigs/jobset's own unit tests (the source file is
named above each table); the JobSets and Jobs are rebuilt here as the API server serves them.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.unit.factories import NOW, rfc3339
from tfjob_provider._jobset import names
from tfjob_provider._jobset.policies import (
    FAIL_JOBSET,
    RESTART_JOB,
    RESTART_JOB_IGNORE_MAX,
    RESTART_JOBSET,
    RESTART_JOBSET_IGNORE_MAX,
    ChildJob,
    failure_outcome,
    first_matching_rule,
    is_current,
    jobs_expected_to_succeed,
    jobs_matching_success_policy,
    may_restart,
    read_job,
    rule_applies,
    success_policy_met,
)

BACKOFF = "BackoffLimitExceeded"
DEADLINE = "DeadlineExceeded"
FAILED_INDEXES = "FailedIndexes"


def job(
    rjob: str = "test-replicated-job-1",
    *,
    name: str = "test-job",
    finished: str | None = None,
    reason: str = "",
    message: str = "",
    hours_ago: float = 1,
    labels: dict[str, str] | None = None,
) -> ChildJob:
    conditions = []
    if finished is not None:
        moment = rfc3339(NOW - timedelta(hours=hours_ago))
        conditions.append(
            {
                "type": finished,
                "status": "True",
                "reason": reason,
                "message": message,
                "lastTransitionTime": moment,
            }
        )
    all_labels = {
        names.LABEL_REPLICATED_JOB: rjob,
        names.LABEL_JOB_INDEX: "0",
        names.LABEL_RESTART_ATTEMPT: "0",
    }
    all_labels.update(labels or {})
    return read_job({"metadata": {"name": name, "labels": all_labels}, "status": {"conditions": conditions}})


def spec(success_policy: dict[str, Any] | None = None, **replicas: int) -> dict[str, Any]:
    result: dict[str, Any] = {
        "replicatedJobs": [
            {"name": name.replace("_", "-"), "replicas": count} for name, count in replicas.items()
        ]
    }
    if success_policy is not None:
        result["successPolicy"] = success_policy
    return result


# https://github.com/kubernetes-sigs/jobset/blob/main/pkg/controllers/success_policy_test.go
# (TestNumJobsMatchingSuccessPolicy)
MATCHING = {
    "one job matches the success policy": (["test-replicated-job-1", "test-replicated-job-2"], ["1", "3"], 1),
    "all jobs matches the success policy": (
        ["test-replicated-job-1", "test-replicated-job-2"],
        ["1", "2"],
        2,
    ),
    "no jobs match the success policy": (["test-replicated-job-1", "test-replicated-job-2"], ["3", "4"], 0),
    "empty target replicated jobs, all job matches the success policy": ([], ["1", "2"], 2),
}


@pytest.mark.parametrize(("targets", "jobs", "expected"), MATCHING.values(), ids=MATCHING.keys())
def test_jobs_matching_the_success_policy(targets: list[str], jobs: list[str], expected: int) -> None:
    children = [job(f"test-replicated-job-{number}") for number in jobs]
    assert jobs_matching_success_policy(spec({"targetReplicatedJobs": targets}), children) == expected


# https://github.com/kubernetes-sigs/jobset/blob/main/pkg/controllers/success_policy_test.go
# (TestNumJobsExpectedToSucceed)
EXPECTED = {
    "any job completion fulfills success policy": ({"operator": "Any"}, {}, 1),
    "all replicated jobs match success policy": (
        {"operator": "All", "targetReplicatedJobs": ["test-replicated-job-1", "test-replicated-job-2"]},
        {"test_replicated_job_1": 1, "test_replicated_job_2": 2},
        3,
    ),
    "some replicated jobs don't match success policy": (
        {"operator": "All", "targetReplicatedJobs": ["test-replicated-job-1", "test-replicated-job-3"]},
        {"test_replicated_job_1": 1, "test_replicated_job_2": 2, "test_replicated_job_3": 3},
        4,
    ),
}


@pytest.mark.parametrize(("policy", "replicas", "expected"), EXPECTED.values(), ids=EXPECTED.keys())
def test_jobs_expected_to_succeed(policy: dict[str, Any], replicas: dict[str, int], expected: int) -> None:
    assert jobs_expected_to_succeed(spec(policy, **replicas)) == expected


def test_the_success_policy_needs_complete_jobs_and_defaults_to_all() -> None:
    layout = spec(None, chief=1, worker=1)
    complete = job("chief", finished=names.JOB_COMPLETE)
    assert not success_policy_met(layout, [complete, job("worker")])
    assert success_policy_met(layout, [complete, job("worker", finished=names.JOB_COMPLETE)])
    assert success_policy_met(
        spec({"operator": "All", "targetReplicatedJobs": ["chief"]}, chief=1, ps=1), [complete]
    )
    assert not success_policy_met(
        spec({"operator": "Any"}, chief=1), [job("chief", finished=names.JOB_FAILED)]
    )


R1, R2 = "test-replicated-job-1", "test-replicated-job-2"
# https://github.com/kubernetes-sigs/jobset/blob/main/pkg/controllers/failure_policy_test.go
# (TestFailurePolicyRuleIsApplicable): rule, job's replicated Job, reason, message, applies.
APPLICABLE = {
    "matches all replicated jobs and all reasons": ({}, R1, BACKOFF, "", True),
    "matches all replicated jobs and the reason": ({"onJobFailureReasons": [BACKOFF]}, R1, BACKOFF, "", True),
    "matches all replicated jobs, not the reason": (
        {"onJobFailureReasons": [BACKOFF]},
        R1,
        DEADLINE,
        "",
        False,
    ),
    "matches the replicated job and all reasons": ({"targetReplicatedJobs": [R1]}, R1, BACKOFF, "", True),
    "matches the replicated job and the reason": (
        {"onJobFailureReasons": [BACKOFF], "targetReplicatedJobs": [R1]},
        R1,
        BACKOFF,
        "",
        True,
    ),
    "matches the replicated job, not the reason": (
        {"onJobFailureReasons": [BACKOFF], "targetReplicatedJobs": [R1]},
        R1,
        DEADLINE,
        "",
        False,
    ),
    "not the replicated job, all reasons": ({"targetReplicatedJobs": [R1]}, R2, BACKOFF, "", False),
    "not the replicated job, the reason": (
        {"onJobFailureReasons": [BACKOFF], "targetReplicatedJobs": [R1]},
        R2,
        BACKOFF,
        "",
        False,
    ),
    "not the replicated job, not the reason": (
        {"onJobFailureReasons": [BACKOFF], "targetReplicatedJobs": [R1]},
        R2,
        DEADLINE,
        "",
        False,
    ),
    "matches the message pattern": (
        {"onJobFailureMessagePatterns": ["^job failed because.*"]},
        R1,
        "",
        "job failed because of a bug",
        True,
    ),
    "does not match the message pattern": (
        {"onJobFailureMessagePatterns": ["^job failed because.*"]},
        R1,
        "",
        "another error message",
        False,
    ),
    "matches the reason and the message pattern": (
        {"onJobFailureReasons": [BACKOFF], "onJobFailureMessagePatterns": [".*bug.*"]},
        R1,
        BACKOFF,
        "job failed because of a bug",
        True,
    ),
    "matches the reason, not the message pattern": (
        {"onJobFailureReasons": [BACKOFF], "onJobFailureMessagePatterns": [".*bug.*"]},
        R1,
        BACKOFF,
        "job failed due to something else",
        False,
    ),
}


@pytest.mark.parametrize(
    ("rule", "rjob", "reason", "message", "applies"), APPLICABLE.values(), ids=APPLICABLE.keys()
)
def test_a_failure_policy_rule_applies(
    rule: dict[str, Any], rjob: str, reason: str, message: str, applies: bool
) -> None:
    failed = job(rjob, finished=names.JOB_FAILED, reason=reason, message=message)
    assert rule_applies(rule, failed) is applies


RULE1 = {"action": RESTART_JOBSET, "onJobFailureReasons": [BACKOFF]}
RULE2 = {"action": RESTART_JOBSET, "onJobFailureReasons": [DEADLINE]}
RULE3 = {"action": RESTART_JOBSET, "onJobFailureReasons": [FAILED_INDEXES]}
UNMATCHED = {"action": RESTART_JOBSET, "targetReplicatedJobs": ["fakeReplicatedJobName"]}
JOB1 = job("test-replicatedJob", name="job1", finished=names.JOB_FAILED, reason=BACKOFF, hours_ago=6)
JOB1_EARLIER = job(
    "test-replicatedJob",
    name="job1DupEarlierFailure",
    finished=names.JOB_FAILED,
    reason=BACKOFF,
    hours_ago=12,
)
JOB2 = job("test-replicatedJob", name="job2", finished=names.JOB_FAILED, reason=DEADLINE, hours_ago=3)
JOB3 = job("test-replicatedJob", name="job3", finished=names.JOB_FAILED, reason=FAILED_INDEXES, hours_ago=1)
# https://github.com/kubernetes-sigs/jobset/blob/main/pkg/controllers/failure_policy_test.go
# (TestFindFirstFailedPolicyRuleAndJob): rules, failed Jobs, (rule index, Job name) or None.
FIRST_RULE = {
    "0 failed jobs, 0 rules": ([], [], None),
    "1 failed job, 0 rules": ([], [JOB1], None),
    "1 failed job, 1 rule not matching": ([RULE2], [JOB1], None),
    "1 failed job matching the first of 3 rules": ([RULE1, RULE2, RULE3], [JOB1], (0, "job1")),
    "1 failed job matching the second of 3 rules": ([RULE1, RULE2, RULE3], [JOB2], (1, "job2")),
    "1 failed job matching the third of 3 rules": ([RULE1, RULE2, RULE3], [JOB3], (2, "job3")),
    "2 failed jobs, 0 rules": ([], [JOB1, JOB2], None),
    "2 failed jobs, 1 rule matching neither": ([RULE2], [JOB1, JOB1_EARLIER], None),
    "2 failed jobs, 1 rule matching both: the earlier failure": (
        [RULE1],
        [JOB1, JOB1_EARLIER],
        (0, "job1DupEarlierFailure"),
    ),
    "2 failed jobs, the second rule matches both": (
        [UNMATCHED, RULE1],
        [JOB1, JOB1_EARLIER],
        (1, "job1DupEarlierFailure"),
    ),
}


@pytest.mark.parametrize(("rules", "failed", "expected"), FIRST_RULE.values(), ids=FIRST_RULE.keys())
def test_the_first_matching_rule_and_its_earliest_failed_job(
    rules: list[dict[str, Any]], failed: list[ChildJob], expected: tuple[int, str] | None
) -> None:
    found = first_matching_rule(rules, failed)
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert (rules.index(dict(found[0])), found[1].name) == expected


def _jobset(
    policy: dict[str, Any] | None, *, counted: int = 0, job_counted: list[int] | None = None
) -> dict[str, Any]:
    status: dict[str, Any] = {"restarts": counted, "restartsCountTowardsMax": counted}
    if job_counted is not None:
        status["replicatedJobsStatus"] = [
            {
                "name": "test-replicated-job-1",
                "jobRestarts": job_counted,
                "jobRestartsCountTowardsMax": job_counted,
            }
        ]
    js_spec: dict[str, Any] = spec(None, test_replicated_job_1=1)
    if policy is not None:
        js_spec["failurePolicy"] = policy
    return {"metadata": {"name": "test-js"}, "spec": js_spec, "status": status}


FAILED = job(finished=names.JOB_FAILED, reason=BACKOFF)
# https://github.com/kubernetes-sigs/jobset/blob/main/pkg/controllers/failure_policy_test.go
# (TestApplyFailurePolicyRuleAction, and executeFailurePolicy without a policy): JobSet, whether it fails.
ACTIONS = {
    "no failure policy: the JobSet fails": (_jobset(None), FAIL_JOBSET, True),
    "FailJobSet action": (_jobset({"maxRestarts": 5, "rules": [{"action": FAIL_JOBSET}]}), FAIL_JOBSET, True),
    "RestartJobSet when restarts < maxRestarts": (
        _jobset({"maxRestarts": 5}, counted=1),
        RESTART_JOBSET,
        False,
    ),
    "RestartJobSet when restarts >= maxRestarts fails the jobset": (
        _jobset({"maxRestarts": 2}, counted=2),
        RESTART_JOBSET,
        True,
    ),
    "RestartJobSetAndIgnoreMaxRestarts does not count toward max restarts": (
        _jobset({"maxRestarts": 1, "rules": [{"action": RESTART_JOBSET_IGNORE_MAX}]}, counted=1),
        RESTART_JOBSET_IGNORE_MAX,
        False,
    ),
    "RestartJob when combined restarts < maxRestarts": (
        _jobset({"maxRestarts": 5, "rules": [{"action": RESTART_JOB}]}, job_counted=[0]),
        RESTART_JOB,
        False,
    ),
    "RestartJob when combined restarts >= maxRestarts fails the jobset": (
        _jobset({"maxRestarts": 2, "rules": [{"action": RESTART_JOB}]}, counted=1, job_counted=[1]),
        RESTART_JOB,
        True,
    ),
    "RestartJobSet when combined restarts >= maxRestarts and a previous individual restart": (
        _jobset({"maxRestarts": 2}, counted=1, job_counted=[1]),
        RESTART_JOBSET,
        True,
    ),
    "RestartJobAndIgnoreMaxRestarts does not count toward max restarts": (
        _jobset({"maxRestarts": 1, "rules": [{"action": RESTART_JOB_IGNORE_MAX}]}, counted=1),
        RESTART_JOB_IGNORE_MAX,
        False,
    ),
}


@pytest.mark.parametrize(("jobset", "action", "fails"), ACTIONS.values(), ids=ACTIONS.keys())
def test_what_the_failure_policy_does_about_a_failed_job(
    jobset: dict[str, Any], action: str, fails: bool
) -> None:
    outcome = failure_outcome(jobset, [FAILED])
    assert outcome is not None
    assert (outcome.action, outcome.fails, outcome.job.name) == (action, fails, "test-job")


def test_no_failed_job_no_outcome() -> None:
    assert failure_outcome(_jobset(None), [job(finished=names.JOB_COMPLETE), job()]) is None


MAY_RESTART = {
    "no failure policy": (None, 0, False),
    "default action with restarts left": ({"maxRestarts": 2}, 1, True),
    "default action without restarts left": ({"maxRestarts": 2}, 2, False),
    "a catch-all FailJobSet rule hides the default": (
        {"maxRestarts": 2, "rules": [{"action": FAIL_JOBSET}]},
        0,
        False,
    ),
    "a narrower FailJobSet rule leaves the default": (
        {"maxRestarts": 2, "rules": [{"action": FAIL_JOBSET, "onJobFailureReasons": [DEADLINE]}]},
        0,
        True,
    ),
    "ignoring max restarts": ({"rules": [{"action": RESTART_JOBSET_IGNORE_MAX}]}, 9, True),
}


@pytest.mark.parametrize(("policy", "counted", "expected"), MAY_RESTART.values(), ids=MAY_RESTART.keys())
def test_whether_a_failure_may_still_restart_the_set(
    policy: dict[str, Any] | None, counted: int, expected: bool
) -> None:
    assert may_restart(_jobset(policy, counted=counted)) is expected


# https://github.com/kubernetes-sigs/jobset/blob/main/pkg/controllers/jobset_controller.go (getChildJobs):
# a Job whose restart attempt is below status.restarts belongs to an older run.
@pytest.mark.parametrize(
    ("labels", "restarts", "job_restarts", "current"),
    [
        ({names.LABEL_RESTART_ATTEMPT: "1"}, 1, None, True),
        ({names.LABEL_RESTART_ATTEMPT: "0"}, 1, None, False),
        ({names.LABEL_RESTART_ATTEMPT: "2"}, 1, None, True),
        ({names.LABEL_RESTART_ATTEMPT: "x"}, 0, None, False),
        ({"jobset.sigs.k8s.io/job-restart-attempt": "0"}, 0, [1], False),
        ({"jobset.sigs.k8s.io/job-restart-attempt": "1"}, 0, [1], True),
    ],
)
def test_which_jobs_belong_to_the_current_run(
    labels: dict[str, str], restarts: int, job_restarts: list[int] | None, current: bool
) -> None:
    jobset = _jobset(None, counted=restarts, job_counted=job_restarts)
    assert is_current(jobset, job(labels=labels)) is current
