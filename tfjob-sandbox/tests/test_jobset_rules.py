"""JobSet's controller rules, pinned on the pure pass and policy functions with upstream's cases.

Each case id names the kubernetes-sigs/jobset (v0.7) test it comes from: ``success_policy_test.go``,
``failure_policy_test.go``, ``jobset_controller_test.go``, ``startup_policy_test.go``,
``ttl_after_finished_test.go`` and ``webhooks/jobset_webhook_test.go``.
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from tfjob_sandbox.admission.jobset_webhook import default_jobset, validate_jobset
from tfjob_sandbox.jobset_controller.actions import (
    CreateJob,
    CreateService,
    DeleteJob,
    DeleteJobSet,
    ResumeJob,
    SuspendJob,
    WriteStatus,
)
from tfjob_sandbox.jobset_controller.child_jobs import classify, job_finished, replicated_job_statuses
from tfjob_sandbox.jobset_controller.children import (
    construct_job,
    global_job_index,
    headless_service,
    job_key,
)
from tfjob_sandbox.jobset_controller.conditions import update_condition
from tfjob_sandbox.jobset_controller.policies import (
    decide_failure,
    first_failed_job,
    first_matching_rule,
    jobs_expected_to_succeed,
    jobs_matching_success_policy,
    rule_applies,
)
from tfjob_sandbox.jobset_controller.reconcile import reconcile

NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
STAMP = "2025-03-01T12:00:00Z"
# Upstream test function names, the prefix of each case id.
MATCHING = "TestNumJobsMatchingSuccessPolicy/"
EXPECTED = "TestNumJobsExpectedToSucceed/"
APPLICABLE = "TestFailurePolicyRuleIsApplicable/"
RULE_AND_JOB = "TestFindFirstFailedPolicyRuleAndJob/"
FINISHED = "TestIsJobFinished/"
GLOBAL = "TestGlobalJobIndex/"
SERVICE = "TestCreateHeadlessSvcIfNecessary/"
CREATE = "TestValidateCreate/"


def jobset(**spec: Any) -> dict[str, Any]:
    """Upstream's ``testJobSet``: replicated-job-a (1 Job), replicated-job-b (3 Jobs), webhook-defaulted."""
    obj: dict[str, Any] = {
        "metadata": {"name": "test-js", "namespace": "ns", "uid": "js-uid"},
        "spec": {
            "replicatedJobs": [
                {"name": "replicated-job-a", "replicas": 1, "template": {"spec": {"template": {"spec": {}}}}},
                {
                    "name": "replicated-job-b",
                    "replicas": 3,
                    "template": {"spec": {"parallelism": 1, "completions": 1, "template": {"spec": {}}}},
                },
            ],
            **spec,
        },
    }
    default_jobset("CREATE", obj, None)
    return obj


def job(
    js: dict[str, Any],
    rjob: str,
    index: int,
    *,
    state: str = "",
    reason: str = "",
    when: str = STAMP,
    restarts: int | None = None,
) -> dict[str, Any]:
    template = next(r for r in js["spec"]["replicatedJobs"] if r["name"] == rjob)
    built = construct_job(js, template, index)
    if restarts is not None:
        built["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] = str(restarts)
    built["spec"].setdefault("parallelism", 1)
    if state:
        condition = {"type": state, "status": "True", "lastTransitionTime": when}
        if reason:
            condition["reason"] = reason
        built["status"] = {"conditions": [condition]}
    return built


def all_jobs(js: dict[str, Any], **states: str) -> list[dict[str, Any]]:
    """Every Job of ``testJobSet``; ``states`` maps a Job name to Complete/Failed."""
    jobs = []
    for rjob, replicas in (("replicated-job-a", 1), ("replicated-job-b", 3)):
        for index in range(replicas):
            name = f"test-js-{rjob}-{index}"
            jobs.append(job(js, rjob, index, state=states.get(name, "")))
    return jobs


def written_status(outcome: Any) -> dict[str, Any]:
    writes = [a for a in outcome.actions if isinstance(a, WriteStatus)]
    assert len(writes) == 1, outcome.actions
    return writes[0].status


def condition(status: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c["type"] == type_), None)


# --- success_policy_test.go -------------------------------------------------------------------

SPEC_TARGETS = {"successPolicy": {"operator": "All", "targetReplicatedJobs": ["replicated-job-b"]}}


@pytest.mark.parametrize(
    ("targets", "jobs_of", "expected"),
    [
        pytest.param(
            [],
            ["replicated-job-a"],
            1,
            id=MATCHING + "empty target replicated jobs, all job matches the success policy",
        ),
        pytest.param(
            ["replicated-job-b"],
            ["replicated-job-b", "replicated-job-a"],
            1,
            id=MATCHING + "one job matches the success policy",
        ),
        pytest.param(
            ["replicated-job-a", "replicated-job-b"],
            ["replicated-job-a", "replicated-job-b"],
            2,
            id=MATCHING + "all jobs matches the success policy",
        ),
        pytest.param(
            ["other"],
            ["replicated-job-a", "replicated-job-b"],
            0,
            id=MATCHING + "no jobs match the success policy",
        ),
    ],
)
def test_jobs_matching_success_policy(targets: list[str], jobs_of: list[str], expected: int) -> None:
    js = jobset(successPolicy={"operator": "All", "targetReplicatedJobs": targets})
    jobs = [job(js, name, 0) for name in jobs_of]
    assert jobs_matching_success_policy(js["spec"], jobs) == expected


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        pytest.param(
            {"operator": "Any"},
            1,
            id=EXPECTED + "any job completion fulfills success policy",
        ),
        pytest.param({"operator": "All"}, 4, id=EXPECTED + "all replicated jobs match success policy"),
        pytest.param(
            {"operator": "All", "targetReplicatedJobs": ["replicated-job-b"]},
            3,
            id=EXPECTED + "some replicated jobs don't match success policy",
        ),
    ],
)
def test_jobs_expected_to_succeed(policy: dict[str, Any], expected: int) -> None:
    assert jobs_expected_to_succeed(jobset(successPolicy=policy)["spec"]) == expected


# --- failure_policy_test.go -------------------------------------------------------------------


def failed(name: str, when: str, reason: str = "", rjob: str = "replicated-job-a") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"jobset.sigs.k8s.io/replicatedjob-name": rjob}},
        "status": {
            "conditions": [{"type": "Failed", "status": "True", "reason": reason, "lastTransitionTime": when}]
        },
    }


def test_find_first_failed_job_cases() -> None:
    """TestFindFirstFailedJob: no failed jobs; single; earliest first; jobs without a failed condition."""
    assert first_failed_job([]) is None
    one = failed("job1", "2025-01-01T00:00:10Z")
    assert first_failed_job([one]) is one
    early = failed("job2", "2025-01-01T00:00:05Z")
    assert first_failed_job([one, early]) is early
    running = {
        "metadata": {"name": "job3"},
        "status": {"conditions": [{"type": "Complete", "status": "True"}]},
    }
    assert first_failed_job([running]) is None


@pytest.mark.parametrize(
    ("reasons", "targets", "applies"),
    [
        pytest.param(
            [],
            [],
            True,
            id=APPLICABLE + "matches all parent replicated jobs and all job failure reasons",
        ),
        pytest.param(
            ["BackoffLimitExceeded"],
            [],
            True,
            id=APPLICABLE + "matches all parent replicated jobs and matches the job failure reason",
        ),
        pytest.param(
            ["DeadlineExceeded"],
            [],
            False,
            id=APPLICABLE + "matches all parent replicated jobs and does not match the job failure reason",
        ),
        pytest.param(
            [],
            ["replicated-job-a"],
            True,
            id=APPLICABLE + "matches the parent replicatedJob and all job failure reasons",
        ),
        pytest.param(
            ["BackoffLimitExceeded"],
            ["replicated-job-a"],
            True,
            id=APPLICABLE + "matches the parent replicatedJob and matches the job failure reason",
        ),
        pytest.param(
            ["DeadlineExceeded"],
            ["replicated-job-a"],
            False,
            id=APPLICABLE + "matches the parent replicatedJob and does not match the job failure reason",
        ),
        pytest.param(
            [],
            ["replicated-job-b"],
            False,
            id=APPLICABLE + "does not match the parent replicatedJob and matches all job failure reasons",
        ),
        pytest.param(
            ["BackoffLimitExceeded"],
            ["replicated-job-b"],
            False,
            id=APPLICABLE + "does not match the parent replicatedJob and matches the job failure reason",
        ),
        pytest.param(
            ["DeadlineExceeded"],
            ["replicated-job-b"],
            False,
            id=APPLICABLE
            + "does not match the parent replicatedJob and does not match the job failure reason",
        ),
    ],
)
def test_rule_is_applicable(reasons: list[str], targets: list[str], applies: bool) -> None:
    rule = {
        "name": "r",
        "action": "FailJobSet",
        "onJobFailureReasons": reasons,
        "targetReplicatedJobs": targets,
    }
    assert rule_applies(rule, failed("j", STAMP, "BackoffLimitExceeded"), "BackoffLimitExceeded") is applies


RULES = [
    {"name": "r0", "action": "FailJobSet", "onJobFailureReasons": ["PodFailurePolicy"]},
    {"name": "r1", "action": "RestartJobSet", "onJobFailureReasons": ["BackoffLimitExceeded"]},
    {
        "name": "r2",
        "action": "RestartJobSetAndIgnoreMaxRestarts",
        "onJobFailureReasons": ["DeadlineExceeded"],
    },
]
LATE = failed("late", "2025-01-01T00:00:20Z", "BackoffLimitExceeded")
EARLY = failed("early", "2025-01-01T00:00:10Z", "BackoffLimitExceeded")


@pytest.mark.parametrize(
    ("rules", "jobs", "expected"),
    [
        pytest.param([], [], None, id=RULE_AND_JOB + "0 failed jobs and 0 rules"),
        pytest.param([], [LATE], None, id=RULE_AND_JOB + "1 failed job and 0 rules"),
        pytest.param(
            RULES[:1],
            [LATE],
            None,
            id=RULE_AND_JOB + "1 failed job, 1 rule not matching",
        ),
        pytest.param(
            [RULES[1], RULES[0], RULES[2]],
            [LATE],
            ("r1", "late"),
            id=RULE_AND_JOB + "1 failed job matches the first rule",
        ),
        pytest.param(
            RULES,
            [LATE],
            ("r1", "late"),
            id=RULE_AND_JOB + "1 failed job matches the second rule",
        ),
        pytest.param(
            [RULES[0], RULES[2], RULES[1]],
            [LATE],
            ("r1", "late"),
            id=RULE_AND_JOB + "1 failed job matches the third rule",
        ),
        pytest.param([], [LATE, EARLY], None, id=RULE_AND_JOB + "2 failed jobs and 0 rules"),
        pytest.param(
            RULES[:1],
            [LATE, EARLY],
            None,
            id=RULE_AND_JOB + "2 failed jobs, the rule matches neither",
        ),
        pytest.param(
            RULES[1:2],
            [LATE, EARLY],
            ("r1", "early"),
            id=RULE_AND_JOB + "2 failed jobs, the rule matches both: the earlier",
        ),
        pytest.param(
            RULES[:2],
            [LATE, EARLY],
            ("r1", "early"),
            id=RULE_AND_JOB + "2 failed jobs, the second rule matches both: the earlier",
        ),
    ],
)
def test_first_failed_policy_rule_and_job(
    rules: list[dict[str, Any]], jobs: list[dict[str, Any]], expected: tuple[str, str] | None
) -> None:
    match = first_matching_rule(rules, jobs)
    assert (None if match is None else (match[0]["name"], match[1]["metadata"]["name"])) == expected


@pytest.mark.parametrize(
    ("policy", "status", "fail", "reason", "restart", "count"),
    [
        pytest.param(
            None,
            {},
            True,
            "FailedJobs",
            False,
            False,
            id="no failure policy: the first failed Job fails the JobSet",
        ),
        pytest.param(
            {"maxRestarts": 1}, {}, False, "", True, True, id="no matching rule: RestartJobSet, counted"
        ),
        pytest.param(
            {"maxRestarts": 1},
            {"restartsCountTowardsMax": 1},
            True,
            "ReachedMaxRestarts",
            False,
            False,
            id="RestartJobSet at maxRestarts: ReachedMaxRestarts",
        ),
        pytest.param(
            {"maxRestarts": 1, "rules": [{"name": "r", "action": "FailJobSet"}]},
            {},
            True,
            "FailJobSetFailurePolicyAction",
            False,
            False,
            id="FailJobSet rule",
        ),
        pytest.param(
            {"maxRestarts": 0, "rules": [{"name": "r", "action": "RestartJobSetAndIgnoreMaxRestarts"}]},
            {"restartsCountTowardsMax": 5},
            False,
            "",
            True,
            False,
            id="RestartJobSetAndIgnoreMaxRestarts ignores maxRestarts",
        ),
    ],
)
def test_failure_policy_decision(
    policy: dict[str, Any] | None, status: dict[str, Any], fail: bool, reason: str, restart: bool, count: bool
) -> None:
    spec = {"failurePolicy": policy} if policy is not None else {}
    decision = decide_failure(spec, status, [EARLY])
    assert (decision.fail, decision.reason, decision.restart, decision.count_towards_max) == (
        fail,
        reason,
        restart,
        count,
    )
    if fail:
        assert decision.message.endswith("(first failed job: early)")


# --- jobset_controller_test.go ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("conditions", "finished"),
    [
        pytest.param([{"type": "Complete", "status": "True"}], "Complete", id=FINISHED + "succeeded"),
        pytest.param([{"type": "Failed", "status": "True"}], "Failed", id=FINISHED + "failed"),
        pytest.param([], "", id=FINISHED + "active"),
        pytest.param([{"type": "Suspended", "status": "True"}], "", id=FINISHED + "suspended"),
        pytest.param([{"type": "FailureTarget", "status": "True"}], "", id=FINISHED + "failure target"),
    ],
)
def test_job_finished(conditions: list[dict[str, str]], finished: str) -> None:
    assert job_finished({"status": {"conditions": conditions}}) == finished


def test_construct_job_labels_annotations_and_owner() -> None:
    """TestConstructJobsFromTemplate/all jobs created, pod dns hostnames enabled: names, labels, subdomain."""
    js = jobset(network={"subdomain": "net"})
    js["status"] = {"restarts": 2}
    built = construct_job(js, js["spec"]["replicatedJobs"][1], 2)
    assert built["metadata"]["name"] == "test-js-replicated-job-b-2"
    expected = {
        "jobset.sigs.k8s.io/jobset-name": "test-js",
        "jobset.sigs.k8s.io/replicatedjob-name": "replicated-job-b",
        "jobset.sigs.k8s.io/restart-attempt": "2",
        "jobset.sigs.k8s.io/replicatedjob-replicas": "3",
        "jobset.sigs.k8s.io/global-replicas": "4",
        "jobset.sigs.k8s.io/job-index": "2",
        "jobset.sigs.k8s.io/job-global-index": "3",
        "jobset.sigs.k8s.io/job-key": job_key("ns", "test-js-replicated-job-b-2"),
    }
    for meta in (built["metadata"], built["spec"]["template"]["metadata"]):
        assert meta["labels"] == expected
        assert meta["annotations"] == expected
    assert len(expected["jobset.sigs.k8s.io/job-key"]) == 40
    assert built["spec"]["template"]["spec"]["subdomain"] == "net"
    assert built["spec"]["suspend"] is False
    assert built["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "name": "test-js",
            "uid": "js-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


@pytest.mark.parametrize(
    ("rjob", "index", "expected"),
    [
        pytest.param("replicated-job-a", 0, "0", id=GLOBAL + "multiple replicated jobs (first)"),
        pytest.param("replicated-job-b", 1, "2", id=GLOBAL + "multiple replicated jobs (second)"),
        pytest.param("missing", 0, "", id=GLOBAL + "replicated job not found"),
    ],
)
def test_global_job_index(rjob: str, index: int, expected: str) -> None:
    assert global_job_index(jobset()["spec"], rjob, index) == expected


@pytest.mark.parametrize(
    ("publish", "expected"),
    [
        pytest.param(None, True, id=SERVICE + "service should be created, subdomain not set"),
        pytest.param(False, False, id=SERVICE + "publishNotReadyAddresses is false"),
        pytest.param(True, True, id=SERVICE + "publishNotReadyAddresses is true"),
    ],
)
def test_headless_service(publish: bool | None, expected: bool) -> None:
    js = jobset(network={"enableDNSHostnames": True, "publishNotReadyAddresses": publish})
    if publish is None:
        del js["spec"]["network"]["publishNotReadyAddresses"]
    service = headless_service(js)
    assert service["metadata"]["name"] == "test-js"
    assert service["spec"] == {
        "clusterIP": "None",
        "selector": {"jobset.sigs.k8s.io/jobset-name": "test-js"},
        "publishNotReadyAddresses": expected,
    }


def test_update_conditions_cases() -> None:
    """TestUpdateConditions: add, suspend, resume in place, duplicate ignored; startup pair exclusive."""
    conditions: list[dict[str, Any]] = []
    assert not update_condition(conditions, "Suspended", "False", "ResumeJobs", "m", now=STAMP)
    assert conditions == []
    assert update_condition(conditions, "Suspended", "True", "SuspendedJobs", "m", now=STAMP)
    assert not update_condition(conditions, "Suspended", "True", "SuspendedJobs", "m", now=STAMP)
    assert update_condition(conditions, "Suspended", "False", "ResumeJobs", "m", now=STAMP)
    assert [(c["type"], c["status"], c["reason"]) for c in conditions] == [
        ("Suspended", "False", "ResumeJobs")
    ]
    update_condition(conditions, "StartupPolicyInProgress", "True", "a", "m", now=STAMP)
    update_condition(conditions, "StartupPolicyCompleted", "True", "b", "m", now=STAMP)
    assert {c["type"]: c["status"] for c in conditions}["StartupPolicyInProgress"] == "False"


def test_calculate_replicated_job_statuses() -> None:
    """TestCalculateReplicatedJobStatuses: ready, active, suspended, succeeded, failed per replicatedJob."""
    js = jobset()
    ready = job(js, "replicated-job-b", 0)
    ready["status"] = {"ready": 1, "active": 1}
    suspended = job(js, "replicated-job-b", 1)
    suspended["spec"]["suspend"] = True
    jobs = [
        job(js, "replicated-job-a", 0, state="Complete"),
        ready,
        suspended,
        job(js, "replicated-job-b", 2, state="Failed"),
    ]
    statuses = replicated_job_statuses(js["spec"], classify(jobs, 0))
    assert statuses == [
        {"name": "replicated-job-a", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0},
        {"name": "replicated-job-b", "ready": 1, "succeeded": 0, "failed": 1, "active": 1, "suspended": 1},
    ]


# --- the pass, step by step (test/integration/controller/jobset_controller_test.go) --------------


def test_first_pass_creates_every_job_and_the_service() -> None:
    """'jobset should successfully create jobs': 4 Jobs, the headless Service, replicatedJobsStatus."""
    outcome = reconcile(jobset(), [], service_exists=False, now=NOW)
    creates = [a.manifest["metadata"]["name"] for a in outcome.actions if isinstance(a, CreateJob)]
    assert creates == [
        "test-js-replicated-job-a-0",
        "test-js-replicated-job-b-0",
        "test-js-replicated-job-b-1",
        "test-js-replicated-job-b-2",
    ]
    assert [a.manifest["metadata"]["name"] for a in outcome.actions if isinstance(a, CreateService)] == [
        "test-js"
    ]
    assert "conditions" not in written_status(outcome)


def test_all_jobs_complete_completes_the_jobset() -> None:
    """'jobset should succeed after all jobs succeed': Completed/AllJobsCompleted, terminalState."""
    js = jobset()
    names = ["test-js-replicated-job-a-0"] + [f"test-js-replicated-job-b-{i}" for i in range(3)]
    outcome = reconcile(js, all_jobs(js, **dict.fromkeys(names, "Complete")), service_exists=True, now=NOW)
    status = written_status(outcome)
    assert condition(status, "Completed") == {
        "type": "Completed",
        "status": "True",
        "reason": "AllJobsCompleted",
        "message": "jobset completed successfully",
        "lastTransitionTime": STAMP,
    }
    assert status["terminalState"] == "Completed"
    assert outcome.actions[-1].events == (("Normal", "AllJobsCompleted", "jobset completed successfully"),)


def test_one_job_not_complete_keeps_it_active() -> None:
    """'jobset should not succeed if any job is not completed'."""
    js = jobset()
    names = ["test-js-replicated-job-a-0", "test-js-replicated-job-b-0", "test-js-replicated-job-b-1"]
    outcome = reconcile(js, all_jobs(js, **dict.fromkeys(names, "Complete")), service_exists=True, now=NOW)
    assert condition(written_status(outcome), "Completed") is None


def test_no_failure_policy_first_failed_job_fails_it() -> None:
    """'[failure policy] jobset with no failure policy should fail if any jobs fail'."""
    js = jobset()
    outcome = reconcile(
        js, all_jobs(js, **{"test-js-replicated-job-b-1": "Failed"}), service_exists=True, now=NOW
    )
    status = written_status(outcome)
    assert condition(status, "Failed")["reason"] == "FailedJobs"
    assert condition(status, "Failed")["message"] == (
        "jobset failed due to one or more job failures (first failed job: test-js-replicated-job-b-1)"
    )
    assert status["terminalState"] == "Failed"


def test_restart_bumps_attempt_then_old_jobs_are_deleted_and_recreated() -> None:
    """'jobset fails after reaching max restarts', first step: restarts 1, old Jobs deleted, new attempt."""
    js = jobset(failurePolicy={"maxRestarts": 1})
    jobs = all_jobs(js, **{"test-js-replicated-job-a-0": "Failed"})
    status = written_status(reconcile(js, jobs, service_exists=True, now=NOW))
    assert (status["restarts"], status["restartsCountTowardsMax"]) == (1, 1)
    js["status"] = status
    outcome = reconcile(js, jobs, service_exists=True, now=NOW)
    assert sorted(a.name for a in outcome.actions if isinstance(a, DeleteJob)) == sorted(
        j["metadata"]["name"] for j in jobs
    )
    assert not [a for a in outcome.actions if isinstance(a, CreateJob)]  # same names still exist
    recreated = reconcile(js, [], service_exists=True, now=NOW)
    labels = [
        a.manifest["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"]
        for a in recreated.actions
        if isinstance(a, CreateJob)
    ]
    assert labels == ["1"] * 4
    again = [job(js, "replicated-job-a", 0, state="Failed")]
    failed_status = written_status(reconcile(js, again, service_exists=True, now=NOW))
    assert condition(failed_status, "Failed")["reason"] == "ReachedMaxRestarts"


def test_blocking_recreate_waits_for_every_old_job() -> None:
    """'[failure policy] jobs are recreated after all Jobs are deleted with BlockingRecreate strategy.'"""
    js = jobset(failurePolicy={"maxRestarts": 1, "restartStrategy": "BlockingRecreate"})
    js["status"] = {"restarts": 1}
    one_left = [job(js, "replicated-job-b", 2, restarts=0)]
    assert not [
        a for a in reconcile(js, one_left, service_exists=True, now=NOW).actions if isinstance(a, CreateJob)
    ]
    js["spec"]["failurePolicy"]["restartStrategy"] = "Recreate"
    created = [
        a for a in reconcile(js, one_left, service_exists=True, now=NOW).actions if isinstance(a, CreateJob)
    ]
    assert len(created) == 3  # "jobs are restarted individually with Recreate strategy"


def test_finished_jobset_deletes_active_jobs_keeps_finished_and_honours_ttl() -> None:
    """'active jobs are deleted after jobset succeeds' and TestExecuteTTLAfterFinishedPolicy."""
    js = jobset(successPolicy={"operator": "Any"}, ttlSecondsAfterFinished=5)
    jobs = all_jobs(js, **{"test-js-replicated-job-b-0": "Complete"})
    js["status"] = written_status(reconcile(js, jobs, service_exists=True, now=NOW))
    outcome = reconcile(js, jobs, service_exists=True, now=NOW + timedelta(seconds=2))
    assert sorted(a.name for a in outcome.actions if isinstance(a, DeleteJob)) == [
        "test-js-replicated-job-a-0",
        "test-js-replicated-job-b-1",
        "test-js-replicated-job-b-2",
    ]
    assert outcome.requeue_after == pytest.approx(3.0)
    expired = reconcile(js, jobs[1:2], service_exists=True, now=NOW + timedelta(seconds=10))
    assert any(isinstance(a, DeleteJobSet) for a in expired.actions)


def test_suspend_and_resume() -> None:
    """'suspend a running jobset' and 'resume a suspended jobset': Jobs follow, Suspended condition flips."""
    js = jobset(suspend=True)
    created = [
        a.manifest
        for a in reconcile(js, [], service_exists=True, now=NOW).actions
        if isinstance(a, CreateJob)
    ]
    assert all(m["spec"]["suspend"] is True for m in created)
    running = all_jobs(jobset())
    outcome = reconcile(js, running, service_exists=True, now=NOW)
    assert len([a for a in outcome.actions if isinstance(a, SuspendJob)]) == 4
    status = written_status(outcome)
    assert condition(status, "Suspended")["reason"] == "SuspendedJobs"
    js["status"] = status
    js["spec"]["suspend"] = False
    for manifest in created:
        manifest["status"] = {"startTime": STAMP}
    resumed = reconcile(js, created, service_exists=True, now=NOW)
    assert len([a for a in resumed.actions if isinstance(a, ResumeJob)]) == 4
    assert condition(written_status(resumed), "Suspended") == {
        "type": "Suspended",
        "status": "False",
        "reason": "ResumeJobs",
        "message": "jobset is resumed",
        "lastTransitionTime": STAMP,
    }


def test_in_order_startup_creates_one_replicated_job_at_a_time() -> None:
    """'startupPolicy InOrder; replicated-job-a not ready then replicated-job-b should not run'."""
    js = jobset(startupPolicy={"startupPolicyOrder": "InOrder"})
    outcome = reconcile(js, [], service_exists=True, now=NOW)
    assert [a.manifest["metadata"]["name"] for a in outcome.actions if isinstance(a, CreateJob)] == [
        "test-js-replicated-job-a-0"
    ]
    assert (
        condition(written_status(outcome), "StartupPolicyInProgress")["reason"]
        == "InOrderStartupPolicyInProgress"
    )
    ready = job(js, "replicated-job-a", 0)
    ready["status"] = {"ready": 1}
    js["status"] = written_status(outcome)
    step = reconcile(js, [ready], service_exists=True, now=NOW)
    assert len([a for a in step.actions if isinstance(a, CreateJob)]) == 3


def test_managed_by_another_controller_is_left_alone() -> None:
    assert (
        reconcile(jobset(managedBy="kueue.x-k8s.io/multikueue"), [], service_exists=False, now=NOW).actions
        == ()
    )
    assert (
        reconcile(
            jobset(managedBy="jobset.sigs.k8s.io/jobset-controller"), [], service_exists=False, now=NOW
        ).actions
        != ()
    )


# --- webhooks/jobset_webhook_test.go ----------------------------------------------------------


def test_defaulting() -> None:
    """TestJobSetDefaulting: completion mode, restart policy, network, success/startup policies, names."""
    js = jobset(
        failurePolicy={
            "rules": [
                {"action": "FailJobSet"},
                {"name": "named", "action": "FailJobSet"},
                {"action": "RestartJobSet"},
            ]
        }
    )
    spec = js["spec"]
    assert spec["successPolicy"] == {"operator": "All"}
    assert spec["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    assert spec["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    assert [r["name"] for r in spec["failurePolicy"]["rules"]] == [
        "failurePolicyRule0",
        "named",
        "failurePolicyRule2",
    ]
    job_spec = spec["replicatedJobs"][0]["template"]["spec"]
    assert job_spec["completionMode"] == "Indexed"
    assert job_spec["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert "managedBy" not in spec  # "managedBy field is left nil"
    kept = jobset(network={"enableDNSHostnames": False, "publishNotReadyAddresses": False})
    assert kept["spec"]["network"] == {"enableDNSHostnames": False, "publishNotReadyAddresses": False}


def messages(js: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [c["message"] for c in validate_jobset("UPDATE" if old else "CREATE", js, old)]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(
            lambda s: (
                s["replicatedJobs"][0]["template"]["spec"].update(parallelism=2**31 - 1)
                or s["replicatedJobs"][0].update(replicas=2)
            ),
            "the product of replicas and parallelism must not exceed 2147483647 for replicatedJob "
            "'replicated-job-a'",
            id=CREATE + "number of pods exceeds the limit",
        ),
        pytest.param(
            lambda s: s["successPolicy"].update(targetReplicatedJobs=["nope"]),
            "invalid replicatedJob name 'nope' does not appear in .spec.ReplicatedJobs",
            id=CREATE + "success policy has non matching replicated job",
        ),
        pytest.param(
            lambda s: s["replicatedJobs"][0].update(name="username.llama65b"),
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
            "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
            "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            id=CREATE + "jobset name with invalid character",
        ),
        pytest.param(
            lambda s: s.update(managedBy="notadomainprefixedpath"),
            'Invalid value: "notadomainprefixedpath": must be a domain-prefixed path (such as "acme.io/foo")',
            id=CREATE + "jobset controller name is not a domain-prefixed path",
        ),
        pytest.param(
            lambda s: s.update(managedBy="foo.com/" + "a" * 60),
            "Too long: may not be longer than 63",
            id=CREATE + "jobset controller name is too long",
        ),
        pytest.param(
            lambda s: s.update(
                failurePolicy={
                    "rules": [{"name": "r", "action": "FailJobSet", "onJobFailureReasons": ["NotAReason"]}]
                }
            ),
            "invalid job failure reason 'NotAReason' in failure policy is not a recognized job "
            "failure reason",
            id=CREATE + "jobset failure policy has an invalid on job failure reason",
        ),
        pytest.param(
            lambda s: s.update(
                failurePolicy={
                    "rules": [{"name": "r", "action": "FailJobSet", "targetReplicatedJobs": ["nope"]}]
                }
            ),
            "invalid replicatedJob name 'nope' in failure policy does not appear in .spec.ReplicatedJobs",
            id=CREATE + "jobset failure policy has an invalid replicated job",
        ),
        pytest.param(
            lambda s: s.update(
                failurePolicy={
                    "rules": [{"name": "r", "action": "FailJobSet"}, {"name": "r", "action": "FailJobSet"}]
                }
            ),
            "rule names are not unique, rules with indices [0 1] all have the same name 'r'",
            id=CREATE + "there are two failure policy rules with the same name",
        ),
        pytest.param(
            lambda s: s.update(failurePolicy={"rules": [{"name": "1rule", "action": "FailJobSet"}]}),
            "invalid failure policy rule name '1rule', a failure policy rule name must start with an "
            "alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', "
            "and must end with an alphanumeric character or '_'",
            id=CREATE + "failure policy rule name does not start with an alphabetic character",
        ),
        pytest.param(
            lambda s: s.update(coordinator={"replicatedJob": "nope"}),
            "coordinator replicatedJob nope does not exist",
            id=CREATE + "coordinator replicated job does not exist",
        ),
    ],
)
def test_validate_create(mutate: Any, expected: str) -> None:
    js = jobset()
    mutate(js["spec"])
    assert expected in messages(js)


def test_validate_create_name_lengths() -> None:
    """TestValidateCreate: 'jobset name will result in job name being too long' / '... a pod name ...'."""
    js = jobset()
    js["metadata"]["name"] = "a" * 62
    js["spec"]["replicatedJobs"] = [{"name": "rj", "replicas": 101, "template": {"spec": {"template": {}}}}]
    assert messages(js) == [
        "JobSet name is too long, job names generated for this JobSet will exceed 63 characters"
    ]
    js["metadata"]["name"] = "a" * 56
    js["spec"]["replicatedJobs"] = [
        {
            "name": "rj",
            "replicas": 1,
            "template": {
                "spec": {"completionMode": "Indexed", "completions": 1, "parallelism": 1, "template": {}}
            },
        }
    ]
    assert messages(js) == [
        "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"
    ]
    assert messages(jobset()) == []


def test_validate_update() -> None:
    """TestValidateUpdate: suspend and labels may change; managedBy, replicatedJobs and policies may not,
    except the pod template of a suspended JobSet."""
    old = jobset(suspend=False)
    new = copy.deepcopy(old)
    new["spec"]["suspend"] = True
    assert messages(new, old) == []  # "update suspend"
    new["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["nodeSelector"] = {"a": "b"}
    assert (
        messages(new, old) == []
    )  # "replicated job pod template can be updated for jobset getting suspended"
    running = copy.deepcopy(old)
    running["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["nodeSelector"] = {"a": "b"}
    assert messages(running, old) == ['Invalid value: "array": field is immutable']
    renamed = copy.deepcopy(old)
    renamed["spec"]["replicatedJobs"][0]["name"] = "other"
    assert messages(renamed, old) == ['Invalid value: "array": field is immutable']
    managed = copy.deepcopy(old)
    managed["spec"]["managedBy"] = "example.com/other"
    assert messages(managed, old) == ['Invalid value: "example.com/other": field is immutable']
    policy = copy.deepcopy(old)
    policy["spec"]["successPolicy"] = {"operator": "Any"}
    assert messages(policy, old) == ['Invalid value: "object": Value is immutable']
