"""JobSet's controller through the API, driven by writing Job statuses as upstream's integration tests do.

Each test is an entry of kubernetes-sigs/jobset's ``test/integration/controller/jobset_controller_test.go``
(v0.7, named in its id or docstring): the JobSet is created through ``CustomObjectsApi``, its Jobs are
read and their statuses written through ``BatchV1Api``, and the JobSet's conditions, restarts and
Jobs are checked.  Jobs here have no pods: nothing but the test writes their status.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from jobset_helpers import PREFIX, JobSetClient, jobless_sandbox, namespace_client, upstream_jobset
from tfjob_sandbox import Sandbox
from tfjob_sandbox.testing import wait_for

A0 = "test-js-replicated-job-a-0"
B = [f"test-js-replicated-job-b-{i}" for i in range(3)]
ALL = [A0, *B]


@pytest.fixture(scope="module")
def jobs_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    with jobless_sandbox(workdir=tmp_path_factory.mktemp("pods")) as sb:
        yield sb


@pytest.fixture
def js(jobs_sandbox: Sandbox) -> Iterator[JobSetClient]:
    with namespace_client(jobs_sandbox) as js_client:
        yield js_client


def restart_attempts(js: JobSetClient) -> dict[str, int]:
    counts: dict[str, int] = {}
    for job in js.jobs().values():
        attempt = job["metadata"]["labels"][PREFIX + "restart-attempt"]
        counts[attempt] = counts.get(attempt, 0) + 1
    return counts


def test_jobset_should_succeed_after_all_jobs_succeed(js: JobSetClient) -> None:
    """'jobset should succeed after all jobs succeed', 'update replicatedJobsStatuses after all jobs
    succeed'."""
    js.create(upstream_jobset())
    js.wait_jobs(4)
    for name in ALL:
        js.complete(name)
    completed = js.wait_condition("Completed")
    assert (completed["reason"], completed["message"]) == (
        "AllJobsCompleted",
        "jobset completed successfully",
    )
    status = js.get()["status"]
    assert status["terminalState"] == "Completed"
    succeeded = {s["name"]: s["succeeded"] for s in status["replicatedJobsStatus"]}
    assert succeeded == {"replicated-job-a": 1, "replicated-job-b": 3}


def test_jobset_should_not_succeed_if_any_job_is_not_completed(js: JobSetClient) -> None:
    """'jobset should not succeed if any job is not completed': 3 of 4 Complete, the last ready."""
    js.create(upstream_jobset())
    js.wait_jobs(4)
    for name in ALL[:-1]:
        js.complete(name)
    js.ready(ALL[-1])
    status = js.wait_status(
        "replicatedJobsStatus",
        [
            {
                "name": "replicated-job-a",
                "ready": 0,
                "succeeded": 1,
                "failed": 0,
                "active": 0,
                "suspended": 0,
            },
            {
                "name": "replicated-job-b",
                "ready": 1,
                "succeeded": 2,
                "failed": 0,
                "active": 1,
                "suspended": 0,
            },
        ],
    )
    assert "terminalState" not in status
    assert js.condition("Completed") is None


@pytest.mark.parametrize(
    ("policy", "steps"),
    [
        pytest.param(
            {"operator": "All", "targetReplicatedJobs": []},
            [([A0], False), (B, True)],
            id="success policy 'all' with empty replicated jobs list",
        ),
        pytest.param(
            {"operator": "All", "targetReplicatedJobs": ["replicated-job-b"]},
            [([A0], False), (B[:1], False), (B[1:], True)],
            id="success policy 'all' with replicated jobs specified",
        ),
        pytest.param(
            {"operator": "Any", "targetReplicatedJobs": ["replicated-job-b"]},
            [(B[:1], True)],
            id="success policy 'any' with replicated job specified",
        ),
        pytest.param(
            {"operator": "Any", "targetReplicatedJobs": []},
            [(B[:1], True)],
            id="success policy 'any' without replicated job specified",
        ),
    ],
)
def test_success_policy(
    js: JobSetClient, policy: dict[str, Any], steps: list[tuple[list[str], bool]]
) -> None:
    js.create(upstream_jobset(successPolicy=policy))
    js.wait_jobs(4)
    done = 0

    def succeeded() -> int:
        return sum(s["succeeded"] for s in js.get()["status"]["replicatedJobsStatus"])

    for names, completes in steps:
        for name in names:
            js.complete(name)
        done += len(names)
        if completes:
            js.wait_condition("Completed")
        else:
            wait_for(lambda expected=done: succeeded() == expected, what="the Complete Jobs counted")
            assert js.condition("Completed") is None


def test_no_failure_policy_fails_on_first_failed_job(js: JobSetClient) -> None:
    """'[failure policy] jobset with no failure policy should fail if any jobs fail', and
    'active jobs are deleted after jobset fails': the failed Job is kept, the others deleted."""
    js.create(upstream_jobset())
    js.wait_jobs(4)
    js.fail(B[1])
    failed = js.wait_condition("Failed")
    assert failed["reason"] == "FailedJobs"
    assert failed["message"] == f"jobset failed due to one or more job failures (first failed job: {B[1]})"
    assert js.get()["status"]["terminalState"] == "Failed"
    assert set(js.wait_jobs(1)) == {B[1]}
    events = js.core.list_namespaced_event(js.namespace, field_selector="reason=FailedJobs").items
    assert [(e.type, e.source.component, e.involved_object.kind) for e in events] == [
        ("Warning", "jobset", "JobSet")
    ]


def test_active_jobs_are_deleted_after_jobset_succeeds(js: JobSetClient) -> None:
    """'active jobs are deleted after jobset succeeds': Any policy, one Complete Job kept."""
    js.create(upstream_jobset(successPolicy={"operator": "Any", "targetReplicatedJobs": []}))
    js.wait_jobs(4)
    js.complete(B[0])
    js.wait_condition("Completed")
    assert set(js.wait_jobs(1)) == {B[0]}


def test_jobset_fails_after_reaching_max_restarts(js: JobSetClient) -> None:
    """'jobset fails after reaching max restarts': a restart recreates every Job with restart-attempt 1,
    then the next failure is ReachedMaxRestarts."""
    js.create(upstream_jobset(failurePolicy={"maxRestarts": 1}))
    js.wait_jobs(4)
    js.fail(A0)
    status = js.wait_status("restarts", 1)
    assert status["restartsCountTowardsMax"] == 1
    assert js.condition("Failed") is None
    jobs = js.wait_jobs(4, attempt=1)
    assert all(j["metadata"]["annotations"][PREFIX + "restart-attempt"] == "1" for j in jobs.values())
    assert all(
        j["spec"]["template"]["metadata"]["labels"][PREFIX + "restart-attempt"] == "1" for j in jobs.values()
    )
    js.fail(B[0])
    failed = js.wait_condition("Failed")
    assert failed["reason"] == "ReachedMaxRestarts"
    assert (
        failed["message"]
        == f"jobset failed due to reaching max number of restarts (first failed job: {B[0]})"
    )
    restarts = js.core.list_namespaced_event(
        js.namespace, field_selector="reason=RestartJobSetFailurePolicyAction"
    )
    assert [e.message for e in restarts.items] == [
        f"applying RestartJobSet failure policy action (first failed job: {A0})"
    ]


@pytest.mark.parametrize(
    ("rules", "rjob", "reason", "outcome"),
    [
        pytest.param(
            [{"action": "FailJobSet", "onJobFailureReasons": []}],
            "replicated-job-a",
            "PodFailurePolicy",
            ("Failed", "FailJobSetFailurePolicyAction", 0, 0),
            id="[failure policy] jobset fails immediately with FailJobSet failure policy action.",
        ),
        pytest.param(
            [{"action": "FailJobSet", "onJobFailureReasons": ["BackoffLimitExceeded"]}],
            "replicated-job-a",
            "PodFailurePolicy",
            ("Restarted", "", 1, 1),
            id="[failure policy] jobset does not fail immediately with FailJobSet failure policy action as "
            "the rule is not matched.",
        ),
        pytest.param(
            [
                {"action": "RestartJobSet", "onJobFailureReasons": ["PodFailurePolicy"]},
                {"action": "FailJobSet", "onJobFailureReasons": []},
            ],
            "replicated-job-a",
            "PodFailurePolicy",
            ("Restarted", "", 1, 1),
            id="[failure policy] jobset restarts with RestartJobSet failure policy action.",
        ),
        pytest.param(
            [
                {"action": "RestartJobSetAndIgnoreMaxRestarts", "onJobFailureReasons": ["PodFailurePolicy"]},
                {"action": "FailJobSet", "onJobFailureReasons": []},
            ],
            "replicated-job-a",
            "PodFailurePolicy",
            ("Restarted", "", 1, 0),
            id="[failure policy] jobset restarts with RestartJobSetAndIgnoreMaxRestarts failure policy "
            "action.",
        ),
        pytest.param(
            [
                {
                    "action": "FailJobSet",
                    "onJobFailureReasons": ["FailedIndexes"],
                    "targetReplicatedJobs": ["replicated-job-b"],
                }
            ],
            "replicated-job-b",
            "FailedIndexes",
            ("Failed", "FailJobSetFailurePolicyAction", 0, 0),
            id="[failure policy] job fails and the parent replicated job is contained in "
            "TargetReplicatedJobs.",
        ),
        pytest.param(
            [
                {
                    "action": "FailJobSet",
                    "onJobFailureReasons": ["BackoffLimitExceeded"],
                    "targetReplicatedJobs": ["replicated-job-a"],
                }
            ],
            "replicated-job-b",
            "BackoffLimitExceeded",
            ("Restarted", "", 1, 1),
            id="[failure policy] job fails and the parent replicated job is not contained in "
            "TargetReplicatedJobs.",
        ),
        pytest.param(
            [
                {
                    "action": "FailJobSet",
                    "onJobFailureReasons": ["MaxFailedIndexesExceeded"],
                    "targetReplicatedJobs": ["replicated-job-a"],
                },
                {
                    "action": "RestartJobSet",
                    "onJobFailureReasons": ["MaxFailedIndexesExceeded"],
                    "targetReplicatedJobs": ["replicated-job-a"],
                },
            ],
            "replicated-job-a",
            "MaxFailedIndexesExceeded",
            ("Failed", "FailJobSetFailurePolicyAction", 0, 0),
            id="[failure policy] failure policy rules order verification test 1",
        ),
        pytest.param(
            [
                {
                    "action": "RestartJobSet",
                    "onJobFailureReasons": ["MaxFailedIndexesExceeded"],
                    "targetReplicatedJobs": ["replicated-job-a"],
                },
                {
                    "action": "FailJobSet",
                    "onJobFailureReasons": ["MaxFailedIndexesExceeded"],
                    "targetReplicatedJobs": ["replicated-job-a"],
                },
            ],
            "replicated-job-a",
            "MaxFailedIndexesExceeded",
            ("Restarted", "", 1, 1),
            id="[failure policy] failure policy rules order verification test 2",
        ),
    ],
)
def test_failure_policy_rules(
    js: JobSetClient, rules: list[dict[str, Any]], rjob: str, reason: str, outcome: tuple[str, str, int, int]
) -> None:
    js.create(upstream_jobset(failurePolicy={"maxRestarts": 1, "rules": rules}))
    jobs = js.wait_jobs(4)
    first = min(n for n, j in jobs.items() if j["metadata"]["labels"][PREFIX + "replicatedjob-name"] == rjob)
    js.fail(first, reason)
    kind, failed_reason, restarts, counted = outcome
    if kind == "Failed":
        assert js.wait_condition("Failed")["reason"] == failed_reason
    else:
        js.wait_jobs(4, attempt=1)
        assert js.condition("Failed") is None
    status = js.get()["status"]
    assert (status.get("restarts", 0), status.get("restartsCountTowardsMax", 0)) == (restarts, counted)


def test_failure_policy_rules_order_verification_test_3(js: JobSetClient) -> None:
    """'[failure policy] failure policy rules order verification test 3': three uncounted restarts of
    replicated-job-a, then a replicated-job-b failure hits the catch-all FailJobSet."""
    rules = [
        {
            "action": "RestartJobSetAndIgnoreMaxRestarts",
            "onJobFailureReasons": ["MaxFailedIndexesExceeded"],
            "targetReplicatedJobs": ["replicated-job-a"],
        },
        {"action": "FailJobSet", "onJobFailureReasons": [], "targetReplicatedJobs": []},
    ]
    js.create(upstream_jobset(failurePolicy={"maxRestarts": 1, "rules": rules}))
    for attempt in range(3):
        js.wait_jobs(4, attempt=attempt)
        js.fail(A0, "MaxFailedIndexesExceeded")
        js.wait_status("restarts", attempt + 1)
    js.wait_jobs(4, attempt=3)
    js.fail(B[0])
    assert js.wait_condition("Failed")["reason"] == "FailJobSetFailurePolicyAction"
    status = js.get()["status"]
    assert (status["restarts"], status.get("restartsCountTowardsMax", 0)) == (3, 0)


def test_job_succeeds_after_one_failure(js: JobSetClient) -> None:
    """'job succeeds after one failure': one Complete, one Failed → restart; all Complete → Completed."""
    js.create(upstream_jobset(failurePolicy={"maxRestarts": 1}))
    js.wait_jobs(4)
    js.complete(A0)
    js.fail(B[0])
    js.wait_jobs(4, attempt=1)
    for name in ALL:
        js.complete(name)
    js.wait_condition("Completed")


def test_suspend_and_resume(js: JobSetClient) -> None:
    """'jobset created in suspended state' then 'resume a suspended jobset': Jobs follow spec.suspend,
    the pod template's nodeSelector changed while suspended reaches the Jobs."""
    js.create(upstream_jobset(suspend=True))
    jobs = js.wait_jobs(4)
    assert all(j["spec"]["suspend"] is True for j in jobs.values())
    suspended = js.wait_condition("Suspended")
    assert (suspended["reason"], suspended["message"]) == ("SuspendedJobs", "jobset is suspended")
    wait_for(
        lambda: all(
            s["suspended"] == {"replicated-job-a": 1, "replicated-job-b": 3}[s["name"]]
            for s in js.get()["status"]["replicatedJobsStatus"]
        ),
        what="suspended counts",
    )
    manifest = js.get()
    for rjob in manifest["spec"]["replicatedJobs"]:
        rjob["template"]["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "tpu"}
    manifest["spec"]["suspend"] = False
    js.custom.replace_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", js.namespace, "jobsets", "test-js", manifest
    )
    resumed = wait_for(
        lambda: next(
            (
                c
                for c in js.get()["status"].get("conditions", [])
                if c["type"] == "Suspended" and c["status"] == "False"
            ),
            None,
        ),
        what="resumed",
    )
    assert (resumed["reason"], resumed["message"]) == ("ResumeJobs", "jobset is resumed")

    def resumed_jobs() -> dict[str, dict[str, Any]] | None:
        jobs = js.jobs()
        return jobs if all(not job["spec"]["suspend"] for job in jobs.values()) else None

    jobs = wait_for(resumed_jobs, what="Jobs resumed")
    assert all(j["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "tpu"} for j in jobs.values())


def test_suspend_a_running_jobset(js: JobSetClient) -> None:
    """'suspend a running jobset'."""
    js.create(upstream_jobset(suspend=False))
    js.wait_jobs(4)
    js.patch({"spec": {"suspend": True}})
    js.wait_condition("Suspended")
    wait_for(lambda: all(j["spec"]["suspend"] for j in js.jobs().values()), what="Jobs suspended")


def test_service_deleted_is_recreated(js: JobSetClient) -> None:
    """'service deleted': the headless Service comes back."""
    js.create(upstream_jobset())
    service = wait_for(lambda: js.core.list_namespaced_service(js.namespace).items, what="service")[0]
    js.core.delete_namespaced_service(service.metadata.name, js.namespace)
    wait_for(
        lambda: [
            s
            for s in js.core.list_namespaced_service(js.namespace).items
            if s.metadata.uid != service.metadata.uid
        ],
        what="a new service",
    )


def test_generate_name_gives_the_service_the_jobset_name(js: JobSetClient) -> None:
    """'jobset using generateName with enableDNSHostnames should have headless service name set to the
    jobset name'."""
    manifest = upstream_jobset()
    del manifest["metadata"]["name"]
    manifest["metadata"]["generateName"] = "name-prefix"
    name = js.create(manifest)["metadata"]["name"]
    service = wait_for(lambda: js.core.list_namespaced_service(js.namespace).items, what="service")[0]
    assert service.metadata.name == name
    assert all(j["spec"]["template"]["spec"]["subdomain"] == name for j in js.wait_jobs(4).values())


def test_startup_policy_in_order(js: JobSetClient) -> None:
    """'startupPolicy InOrder; replicated-job-a not ready then replicated-job-b should not run'."""
    js.create(upstream_jobset(startupPolicy={"startupPolicyOrder": "InOrder"}))
    assert set(js.wait_jobs(1)) == {A0}
    assert js.wait_condition("StartupPolicyInProgress")["reason"] == "InOrderStartupPolicyInProgress"
    js.ready(A0)
    for name in B:
        wait_for(lambda n=name: n in js.jobs(), what=name)
        js.ready(name)
    done = js.wait_condition("StartupPolicyCompleted")
    assert (done["reason"], done["message"]) == (
        "InOrderStartupPolicyCompleted",
        "in order startup policy has completed",
    )
    assert (js.get()["status"]["conditions"][0]["type"], js.get()["status"]["conditions"][0]["status"]) == (
        "StartupPolicyInProgress",
        "False",
    )


def test_ttl_seconds_after_finished_deletes_the_jobset(js: JobSetClient) -> None:
    """ttl_after_finished.go: a finished JobSet is deleted ttlSecondsAfterFinished later, Jobs with it."""
    js.create(upstream_jobset(ttlSecondsAfterFinished=1))
    js.wait_jobs(4)
    for name in ALL:
        js.complete(name)
    js.wait_condition("Completed")
    wait_for(
        lambda: (
            not js.custom.list_namespaced_custom_object(
                "jobset.x-k8s.io", "v1alpha2", js.namespace, "jobsets"
            )["items"]
        ),
        timeout=10,
        what="TTL delete",
    )
    wait_for(lambda: not js.jobs(), what="Jobs collected")


def test_managed_by_another_controller_gets_nothing(js: JobSetClient) -> None:
    """spec.managedBy other than jobset.sigs.k8s.io/jobset-controller: no Jobs, no status."""
    js.create(upstream_jobset(managedBy="kueue.x-k8s.io/multikueue"))
    js.create(upstream_jobset("mine", managedBy="jobset.sigs.k8s.io/jobset-controller"))
    js.wait_jobs(4)
    assert all(name.startswith("mine-") for name in js.jobs())
    assert "status" not in js.get() or not js.get()["status"]
