"""The Job controller's rules as pure functions, table by table from upstream's own tests.

Each row's id names the case in kubernetes/kubernetes ``pkg/controller/job`` it comes from
(``job_controller_test.go`` TestControllerSyncJob, ``pod_failure_policy_test.go``
TestMatchPodFailurePolicy, ``success_policy_test.go`` TestMatchSuccessPolicy,
``backoff_utils_test.go``); the expectations are upstream's, read for Kubernetes 1.31 defaults
(JobPodReplacementPolicy on: interim FailureTarget/SuccessCriteriaMet conditions first).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from tfjob_sandbox.api import job_wire
from tfjob_sandbox.job_controller import actions as act
from tfjob_sandbox.job_controller.backoff import next_backoff_record, remaining_backoff
from tfjob_sandbox.job_controller.failure_policy import match_pod_failure_policy
from tfjob_sandbox.job_controller.intervals import format_indexes, parse_indexes
from tfjob_sandbox.job_controller.pod_template import generate_name, pod_for_job
from tfjob_sandbox.job_controller.success_policy import match_success_policy
from tfjob_sandbox.job_controller.sync import sync_job

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
STAMP = "2026-01-01T12:00:00Z"


# -- pod failure policy ------------------------------------------------------------------------


def _failed_pod(
    *containers: tuple[str, int | None], conditions: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    statuses = [
        {"name": name, "state": {"terminated": {"exitCode": code}} if code is not None else {"running": {}}}
        for name, code in containers
    ]
    return {
        "metadata": {"namespace": "default", "name": "mypod"},
        "status": {"phase": "Failed", "containerStatuses": statuses, "conditions": conditions or []},
    }


def _on_exit(action: str, operator: str, values: list[int], container: str | None = None) -> dict[str, Any]:
    requirement: dict[str, Any] = {"operator": operator, "values": values}
    if container is not None:
        requirement["containerName"] = container
    return {"action": action, "onExitCodes": requirement}


def _on_condition(action: str, status: str = "True") -> dict[str, Any]:
    return {"action": action, "onPodConditions": [{"type": "DisruptionTarget", "status": status}]}


DISRUPTED = [{"type": "DisruptionTarget", "status": "True"}]
MSG = "Container main-container for pod default/mypod failed with exit code {} matching FailJob rule at index {}"  # noqa: E501

FAILURE_POLICY_CASES = [
    pytest.param(
        [_on_exit("UnknownAction", "In", [1, 2]), _on_exit("FailJob", "In", [2, 3])],
        _failed_pod(("main-container", 2)),
        ("FailJob", True, MSG.format(2, 1)),
        id="unknown action for rule matching by exit codes - skip rule with unknown action",
    ),
    pytest.param(
        [_on_exit("Ignore", "UnknownOperator", [1, 2]), _on_exit("FailJob", "In", [2, 3])],
        _failed_pod(("main-container", 2)),
        ("FailJob", True, MSG.format(2, 1)),
        id="unknown operator - rule with unknown action is skipped for onExitCodes",
    ),
    pytest.param(None, _failed_pod(("main-container", 2)), (None, True, None), id="no policy rules"),
    pytest.param(
        [_on_exit("Ignore", "In", [1, 2, 3])],
        _failed_pod(("main-container", 2)),
        ("Ignore", False, None),
        id="ignore rule matched for exit codes",
    ),
    pytest.param(
        [_on_exit("FailJob", "In", [1, 2, 3])],
        _failed_pod(("main-container", 2)),
        ("FailJob", True, MSG.format(2, 0)),
        id="FailJob rule matched for exit codes",
    ),
    pytest.param(
        [_on_exit("FailJob", "NotIn", [111])],
        _failed_pod(("main-container", 111), ("suppport-container", 0)),
        (None, True, None),
        id="successful containers are skipped by the rules",
    ),
    pytest.param(
        [_on_exit("FailJob", "NotIn", [0])],
        _failed_pod(("main-container", 1), ("suppport-container", 0)),
        ("FailJob", True, MSG.format(1, 0)),
        id="pod failure policy with NotIn operator and value 0",
    ),
    pytest.param(
        [_on_exit("Count", "In", [1, 2, 3]), _on_exit("FailJob", "In", [4, 5, 6])],
        _failed_pod(("main-container", 6)),
        ("FailJob", True, MSG.format(6, 1)),
        id="second jobfail rule matched for exit codes",
    ),
    pytest.param(
        [_on_exit("Count", "In", [1, 2, 3])],
        _failed_pod(("foo", None), ("bar", 2)),
        ("Count", True, None),
        id="count rule matched for exit codes",
    ),
    pytest.param(
        [_on_exit("FailIndex", "In", [1, 2, 3])],
        _failed_pod(("main-container", 2)),
        ("FailIndex", True, None),
        id="FailIndex rule matched for exit codes",
    ),
    pytest.param(
        [_on_condition("Ignore")],
        _failed_pod(conditions=DISRUPTED),
        ("Ignore", False, None),
        id="ignore rule matched for pod conditions",
    ),
    pytest.param(
        [_on_condition("Ignore", "False")],
        _failed_pod(conditions=DISRUPTED),
        (None, True, None),
        id="ignore rule does not match when status for pattern is False, but actual True",
    ),
    pytest.param(
        [_on_condition("FailJob")],
        _failed_pod(conditions=DISRUPTED),
        (
            "FailJob",
            True,
            "Pod default/mypod has condition DisruptionTarget matching FailJob rule at index 0",
        ),
        id="failJob rule matched for pod conditions",
    ),
    pytest.param(
        [_on_exit("FailJob", "In", [137], container="other")],
        _failed_pod(("main-container", 137)),
        (None, True, None),
        id="containerName narrows the exit-code rule (sandbox case)",
    ),
]


@pytest.mark.parametrize(("rules", "pod", "expected"), FAILURE_POLICY_CASES)
def test_match_pod_failure_policy(
    rules: list[dict[str, Any]] | None, pod: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    match = match_pod_failure_policy({"rules": rules} if rules is not None else None, pod)
    assert (match.action, match.count_failed, match.message) == expected


# -- success policy ----------------------------------------------------------------------------

SUCCESS_POLICY_CASES = [
    pytest.param(None, {0}, None, id="successPolicy is null"),
    pytest.param([], {0}, None, id="any rules are nothing"),
    pytest.param(
        [{"succeededIndexes": "invalid-form"}], {0}, None, id="rules.succeededIndexes is invalid format"
    ),
    pytest.param(
        [{"succeededIndexes": "0-2"}],
        {0, 1, 2, 4, 5, 6, 7},
        "Matched rules at index 0",
        id="rules.succeededIndexes is specified; succeededIndexes matched rules",
    ),
    pytest.param(
        [{"succeededIndexes": "3"}],
        {0, 1, 2},
        None,
        id="rules.succeededIndexes is specified; succeededIndexes didn't match rules",
    ),
    pytest.param(
        [{"succeededCount": 2}],
        {0, 1, 2},
        "Matched rules at index 0",
        id="rules.succeededCount is specified; succeededIndexes matched rules",
    ),
    pytest.param(
        [{"succeededCount": 4}],
        {0, 1, 2},
        None,
        id="rules.succeededCount is specified; succeededIndexes didn't match rules",
    ),
    pytest.param(
        [{"succeededIndexes": "9"}, {"succeededIndexes": "4,6"}],
        {0, 1, 2, 4, 5, 6, 7},
        "Matched rules at index 1",
        id="multiple rules; rules.succeededIndexes is specified; succeededIndexes met one of rules",
    ),
    pytest.param(
        [{"succeededIndexes": "3-6", "succeededCount": 2}],
        {0, 1, 2, 4, 5, 6, 7},
        "Matched rules at index 0",
        id="rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes met all rules",
    ),
    pytest.param(
        [{"succeededIndexes": "3-6", "succeededCount": 2}],
        {0, 1, 2, 6, 7},
        None,
        id="rules.succeededIndexes and rules.succeededCount are specified; "
        "succeededIndexes didn't match rules",
    ),
    pytest.param(
        [{"succeededIndexes": "1-3,5-7"}],
        {2, 3, 4, 6, 7, 8},
        None,
        id="rules.succeededIndexes is specified; succeededIndexes didn't match rules; "
        "rules overlaps succeededIndexes at first",
    ),
    pytest.param(
        [{"succeededIndexes": "0-3,6-9", "succeededCount": 7}],
        set(range(1, 10)),
        "Matched rules at index 0",
        id="rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; "
        "the first rules overlaps succeededIndexes at first",
    ),
]


@pytest.mark.parametrize(("rules", "succeeded", "expected"), SUCCESS_POLICY_CASES)
def test_match_success_policy(
    rules: list[dict[str, Any]] | None, succeeded: set[int], expected: str | None
) -> None:
    policy = {"rules": rules} if rules is not None else None
    assert match_success_policy(policy, 10, succeeded) == expected


# -- intervals, names, back-off ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("indexes", "text"),
    [(set(), ""), ({0}, "0"), ({0, 1}, "0-1"), ({0, 2, 3, 4, 7}, "0,2-4,7"), ({5, 6, 9, 10, 11}, "5-6,9-11")],
)
def test_completed_indexes_round_trip(indexes: set[int], text: str) -> None:
    assert format_indexes(indexes) == text
    assert parse_indexes(text, 100) == indexes


def test_parse_indexes_drops_what_is_beyond_completions() -> None:
    assert parse_indexes("1-3,8-12", 10) == {1, 2, 3, 8, 9}


@pytest.mark.parametrize(
    ("job_name", "index", "expected"),
    [
        pytest.param("mnist-worker-0", 3, "mnist-worker-0-3-", id="short name"),
        pytest.param(
            "a" * 60, 12, "a" * 54 + "-12-", id="long name cut to 58 characters (podGenerateNameWithIndex)"
        ),
    ],
)
def test_generate_name_with_index(job_name: str, index: int, expected: str) -> None:
    assert generate_name(job_name, index) == expected


def _finished_at(seconds_ago: float) -> dict[str, Any]:
    moment = (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "metadata": {},
        "status": {"containerStatuses": [{"state": {"terminated": {"finishedAt": moment}}}]},
    }


BACKOFF_CASES = [
    pytest.param(act.NO_BACKOFF, [], [], act.NO_BACKOFF, id="no success or failure"),
    pytest.param(
        act.NO_BACKOFF,
        [],
        [_finished_at(10), _finished_at(5)],
        act.BackoffRecord(2, NOW.timestamp() - 5),
        id="no success, failures",
    ),
    pytest.param(
        act.BackoffRecord(3, 0.0), [_finished_at(5)], [], act.NO_BACKOFF, id="one success, no failures"
    ),
    pytest.param(
        act.BackoffRecord(3, 0.0),
        [_finished_at(10)],
        [_finished_at(20), _finished_at(4), _finished_at(2)],
        act.BackoffRecord(2, NOW.timestamp() - 2),
        id="failures after the last success",
    ),
]


@pytest.mark.parametrize(("old", "ok", "failed", "expected"), BACKOFF_CASES)
def test_new_backoff_record(
    old: act.BackoffRecord,
    ok: list[dict[str, Any]],
    failed: list[dict[str, Any]],
    expected: act.BackoffRecord,
) -> None:
    assert next_backoff_record(old, ok, failed, NOW.timestamp()) == expected


@pytest.mark.parametrize(
    ("failures", "elapsed", "expected"),
    [
        pytest.param(0, 0.0, 0.0, id="no failures"),
        pytest.param(1, 3.0, 7.0, id="one failure; 10s back-off partly elapsed"),
        pytest.param(3, 5.0, 35.0, id="three failures; 40s back-off"),
        pytest.param(20, 0.0, 600.0, id="many failures; capped at the maximum"),
        pytest.param(1, 11.0, 0.0, id="back-off elapsed"),
    ],
)
def test_remaining_backoff(failures: int, elapsed: float, expected: float) -> None:
    record = act.BackoffRecord(failures, NOW.timestamp() - elapsed)
    assert remaining_backoff(record, NOW.timestamp(), initial=10.0, cap=600.0) == pytest.approx(expected)


# -- the pod an Indexed Job creates ------------------------------------------------------------


def test_indexed_pod_has_hostname_index_env_and_controller_reference() -> None:
    job = _job(parallelism=2, completions=3, completionMode="Indexed")
    job["spec"]["template"]["spec"]["subdomain"] = "mnist"
    pod = pod_for_job(job, 1)
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["generateName"] == "job-1-"
    assert meta["annotations"][job_wire.COMPLETION_INDEX] == "1"
    assert meta["labels"][job_wire.COMPLETION_INDEX] == "1"
    assert meta["labels"][job_wire.JOB_NAME] == "job" and meta["labels"]["controller-uid"] == "uid-1"
    assert meta["finalizers"] == [job_wire.TRACKING_FINALIZER]
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "job",
            "uid": "uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert (spec["hostname"], spec["subdomain"]) == ("job-1", "mnist")
    assert spec["containers"][0]["env"][-1] == {
        "name": "JOB_COMPLETION_INDEX",
        "valueFrom": {
            "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
        },
    }


# -- one sync (TestControllerSyncJob) ------------------------------------------------------------


def _job(**spec: Any) -> dict[str, Any]:
    defaults = {
        "parallelism": 1,
        "completions": 1,
        "backoffLimit": 6,
        "completionMode": "NonIndexed",
        "podReplacementPolicy": "TerminatingOrFailed",
        "template": {
            "metadata": {"labels": {"job-name": "job", job_wire.JOB_NAME: "job", "controller-uid": "uid-1"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
        },
    }
    defaults.update(spec)
    if defaults["completions"] is None:
        del defaults["completions"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "job", "namespace": "default", "uid": "uid-1"},
        "spec": defaults,
        "status": {"startTime": STAMP},
    }


_counter = iter(range(10**6))


def _pod(
    phase: str, index: str | None = None, *, ready: bool = False, deleting: bool = False
) -> dict[str, Any]:
    number = next(_counter)
    meta: dict[str, Any] = {
        "name": f"pod-{number}",
        "uid": f"pod-uid-{number}",
        "finalizers": [job_wire.TRACKING_FINALIZER],
    }
    if index is not None:
        meta["annotations"] = {job_wire.COMPLETION_INDEX: index}
    if deleting:  # deleted a minute ago: any failure back-off has passed
        meta["deletionTimestamp"] = (NOW - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions = [{"type": "Ready", "status": "True"}] if ready else []
    return {"metadata": meta, "status": {"phase": phase, "conditions": conditions}}


def _pods(**counts: int) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = []
    for _ in range(counts.get("pending", 0)):
        pods.append(_pod("Pending"))
    for number in range(counts.get("active", 0)):
        pods.append(_pod("Running", ready=number < counts.get("ready", 0)))
    for _ in range(counts.get("succeeded", 0)):
        pods.append(_pod("Succeeded"))
    for _ in range(counts.get("failed", 0)):
        pods.append(_pod("Failed"))
    for _ in range(counts.get("terminating", 0)):
        pods.append(_pod("Running", deleting=True))
    return pods


def _indexed(*phases: tuple[str, str]) -> list[dict[str, Any]]:
    return [_pod(phase, index) for index, phase in phases]


def _summary(outcome: act.Outcome, job: dict[str, Any]) -> dict[str, Any]:
    writes = [a.status for a in outcome.actions if isinstance(a, act.WriteStatus)]
    status = writes[-1] if writes else job["status"]
    created = [a.manifest for a in outcome.actions if isinstance(a, act.CreatePod)]
    return {
        "creations": len(created),
        "deletions": sum(isinstance(a, act.DeletePod) for a in outcome.actions),
        "patches": sum(isinstance(a, act.RemoveFinalizer) for a in outcome.actions),
        "active": status.get("active"),
        "ready": status.get("ready"),
        "succeeded": status.get("succeeded", 0),
        "failed": status.get("failed", 0),
        "terminating": status.get("terminating"),
        "completed": status.get("completedIndexes"),
        "conditions": [(c["type"], c.get("reason", "")) for c in status.get("conditions") or []],
        "indexes": sorted(
            int(m["metadata"]["annotations"][job_wire.COMPLETION_INDEX])
            for m in created
            if m["metadata"].get("annotations")
        ),
    }


COMPLETE = [("SuccessCriteriaMet", "CompletionsReached"), ("Complete", "CompletionsReached")]
SYNC_CASES = [
    pytest.param(
        _job(parallelism=2, completions=5), [], {"creations": 2, "active": 2, "ready": 0}, id="job start"
    ),
    pytest.param(_job(parallelism=2, completions=None), [], {"creations": 2, "active": 2}, id="WQ job start"),
    pytest.param(
        _job(parallelism=2, completions=5), _pods(pending=2), {"creations": 0, "active": 2}, id="pending pods"
    ),
    pytest.param(
        _job(parallelism=3, completions=5),
        _pods(active=3, ready=2),
        {"active": 3, "ready": 2},
        id="correct # of pods",
    ),
    pytest.param(
        _job(parallelism=2, completions=5),
        _pods(active=1, succeeded=1),
        {"creations": 1, "active": 2, "succeeded": 1, "patches": 1},
        id="too few active pods",
    ),
    pytest.param(
        _job(parallelism=1, completions=None, podReplacementPolicy="Failed"),
        _pods(active=1, failed=1, terminating=1),
        {"creations": 0, "active": 1, "failed": 1, "terminating": 1, "patches": 1},
        id="WQ job: recreate pods when failed",
    ),
    pytest.param(
        _job(parallelism=1, completions=1),
        _pods(active=1, failed=1, terminating=1),
        {"active": 1, "failed": 2, "terminating": 1, "patches": 2},
        id="WQ job: turn on PodReplacementPolicy but not set PodReplacementPolicy",
    ),
    pytest.param(
        _job(parallelism=1, completions=1, podReplacementPolicy="Failed"),
        _pods(active=2, terminating=4),
        {"active": 1, "deletions": 1, "terminating": 5, "patches": 0},
        id="more terminating pods than parallelism",
    ),
    pytest.param(
        _job(parallelism=2, completions=5),
        _pods(active=3),
        {"deletions": 1, "active": 2, "terminating": 1},
        id="too many active pods",
    ),
    pytest.param(
        _job(parallelism=2, completions=5),
        _pods(active=3, ready=3),
        {"deletions": 1, "active": 2, "ready": 2},
        id="count ready pods when too many active pods",
    ),
    pytest.param(
        _job(parallelism=2, completions=5),
        _pods(active=1, failed=1),
        {"creations": 1, "active": 2, "failed": 1, "patches": 1},
        id="new failed pod",
    ),
    pytest.param(
        _job(parallelism=2, completions=5),
        _pods(succeeded=5),
        {"succeeded": 5, "patches": 5, "conditions": COMPLETE},
        id="job finish",
    ),
    pytest.param(
        _job(parallelism=2, completions=None),
        _pods(active=1, succeeded=1),
        {"active": 1, "succeeded": 1, "patches": 1, "conditions": []},
        id="WQ job finishing",
    ),
    pytest.param(
        _job(parallelism=2, completions=None),
        _pods(succeeded=1, failed=1),
        {"succeeded": 1, "failed": 1, "conditions": COMPLETE},
        id="WQ job all finished despite one failure",
    ),
    pytest.param(
        _job(parallelism=2, completions=5),
        _pods(active=10),
        {"deletions": 8, "active": 2},
        id="more active pods than parallelism",
    ),
    pytest.param(
        _job(parallelism=3, completions=4),
        _pods(active=3, succeeded=2),
        {"deletions": 1, "active": 2, "succeeded": 2},
        id="more active pods than remaining completions",
    ),
    pytest.param(
        _job(parallelism=2, completions=5, backoffLimit=0),
        _pods(failed=1),
        {
            "failed": 1,
            "conditions": [("FailureTarget", "BackoffLimitExceeded"), ("Failed", "BackoffLimitExceeded")],
        },
        id="too many job failures",
    ),
    pytest.param(
        _job(parallelism=2, completions=5, completionMode="Indexed"),
        [],
        {"creations": 2, "active": 2, "indexes": [0, 1]},
        id="indexed job start",
    ),
    pytest.param(
        _job(parallelism=2, completions=5, completionMode="Indexed", podReplacementPolicy="Failed"),
        [_pod("Running", "1", deleting=True)],
        {"creations": 1, "active": 1, "terminating": 1, "indexes": [0]},
        id="indexed job with some pods deleted, podReplacementPolicy Failed",
    ),
    pytest.param(
        _job(parallelism=2, completions=5, completionMode="Indexed"),
        [_pod("Running", "1", deleting=True)],
        {"creations": 2, "active": 2, "terminating": 1, "indexes": [0, 1], "patches": 1},
        id="indexed job with some pods deleted, podReplacementPolicy TerminatingOrFailed",
    ),
    pytest.param(
        _job(parallelism=2, completions=3, completionMode="Indexed"),
        _indexed(("0", "Succeeded"), ("1", "Failed"), ("1", "Succeeded"), ("2", "Succeeded")),
        {"succeeded": 3, "failed": 1, "completed": "0-2", "conditions": COMPLETE, "patches": 4},
        id="indexed job completed",
    ),
    pytest.param(
        _job(parallelism=2, completions=3, completionMode="Indexed", backoffLimit=0),
        _indexed(("0", "Succeeded"), ("1", "Failed"), ("2", "Running")),
        {
            "succeeded": 1,
            "failed": 2,
            "completed": "0",
            "deletions": 1,
            "patches": 3,
            "conditions": [("FailureTarget", "BackoffLimitExceeded")],
        },
        id="indexed job failed",
    ),
    pytest.param(
        _job(parallelism=5, completions=5, completionMode="Indexed"),
        _indexed(
            ("invalid", "Running"), ("0", "Succeeded"), ("1", "Running"), ("2", "Running"), ("2", "Pending")
        ),
        {"creations": 0, "deletions": 2, "active": 2, "succeeded": 1, "completed": "0"},
        id="indexed job repeated indexes",
    ),
    pytest.param(
        _job(parallelism=2, completions=5, completionMode="Indexed"),
        _indexed(("0", "Succeeded"), ("5", "Running"), ("6", "Succeeded"), ("7", "Pending"), ("8", "Failed")),
        {"creations": 0, "deletions": 2, "active": 0, "succeeded": 1, "failed": 0, "completed": "0"},
        id="indexed job with indexes outside of range",
    ),
    pytest.param(
        _job(parallelism=2, completions=4, suspend=True),
        _pods(active=2),
        {"deletions": 2, "active": 0, "conditions": [("Suspended", "JobSuspended")]},
        id="suspending a job with satisfied expectations",
    ),
]


@pytest.mark.parametrize(("job", "pods", "expected"), SYNC_CASES)
def test_controller_sync_job(
    job: dict[str, Any], pods: list[dict[str, Any]], expected: dict[str, Any]
) -> None:
    summary = _summary(sync_job(job, pods, now=NOW), job)
    assert {key: summary[key] for key in expected} == expected


def test_resuming_a_suspended_job_resets_start_time() -> None:
    job = _job(parallelism=2, completions=4)
    job["status"] = {
        "startTime": "2025-01-01T00:00:00Z",
        "conditions": [
            {"type": "Suspended", "status": "True", "reason": "JobSuspended", "message": "Job suspended"}
        ],
    }
    outcome = sync_job(job, [], now=NOW)
    status = [a.status for a in outcome.actions if isinstance(a, act.WriteStatus)][-1]
    assert status["startTime"] == STAMP
    assert status["conditions"][0]["status"] == "False" and status["conditions"][0]["reason"] == "JobResumed"
    assert act.RecordEvent("Normal", "Resumed", "Job resumed") in outcome.actions


def test_fail_job_rule_ends_the_job_with_upstream_message() -> None:
    policy = {"rules": [_on_exit("FailJob", "In", [42])]}
    job = _job(
        parallelism=2,
        completions=2,
        completionMode="Indexed",
        podFailurePolicy=policy,
        podReplacementPolicy="Failed",
    )
    failed = _pod("Failed", "0")
    failed["metadata"].update(namespace="default", name="job-0-abcde")
    failed["status"]["containerStatuses"] = [{"name": "main", "state": {"terminated": {"exitCode": 42}}}]
    outcome = sync_job(job, [failed, _pod("Running", "1")], now=NOW)
    summary = _summary(outcome, job)
    message = (
        "Container main for pod default/job-0-abcde failed with exit code 42 matching FailJob rule at index 0"
    )
    assert summary["conditions"] == [("FailureTarget", "PodFailurePolicy")]
    assert summary["deletions"] == 1 and summary["failed"] == 2
    status = [a.status for a in outcome.actions if isinstance(a, act.WriteStatus)][-1]
    assert status["conditions"][0]["message"] == message


def test_ignored_failure_is_not_counted_and_the_index_is_recreated() -> None:
    policy = {"rules": [_on_exit("Ignore", "In", [137])]}
    job = _job(
        parallelism=1,
        completions=1,
        completionMode="Indexed",
        backoffLimit=0,
        podFailurePolicy=policy,
        podReplacementPolicy="Failed",
    )
    killed = _pod("Failed", "0")
    killed["status"]["containerStatuses"] = [{"name": "main", "state": {"terminated": {"exitCode": 137}}}]
    summary = _summary(sync_job(job, [killed], now=NOW), job)
    assert (summary["failed"], summary["conditions"], summary["indexes"]) == (0, [], [0])


def test_success_policy_ends_the_job_and_deletes_the_rest() -> None:
    job = _job(
        parallelism=3,
        completions=3,
        completionMode="Indexed",
        successPolicy={"rules": [{"succeededIndexes": "0"}]},
    )
    summary = _summary(
        sync_job(job, _indexed(("0", "Succeeded"), ("1", "Running"), ("2", "Running")), now=NOW), job
    )
    assert summary["conditions"] == [("SuccessCriteriaMet", "SuccessPolicy")]
    assert (summary["deletions"], summary["failed"], summary["completed"]) == (2, 0, "0")


def test_interim_condition_becomes_terminal_once_no_pod_terminates() -> None:
    job = _job(parallelism=2, completions=2, completionMode="Indexed")
    job["status"]["conditions"] = [
        {
            "type": "SuccessCriteriaMet",
            "status": "True",
            "reason": "SuccessPolicy",
            "message": "Matched rules at index 0",
        }
    ]
    job["status"]["completedIndexes"] = "0"
    still = _summary(sync_job(job, [_pod("Running", "1", deleting=True)], now=NOW), job)
    assert [kind for kind, _ in still["conditions"]] == ["SuccessCriteriaMet"]
    done = sync_job(job, [], now=NOW)
    status = [a.status for a in done.actions if isinstance(a, act.WriteStatus)][-1]
    assert (
        status["conditions"][-1]["type"] == "Complete"
        and status["conditions"][-1]["reason"] == "SuccessPolicy"
    )
    assert status["completionTime"] == STAMP


def test_restarts_under_on_failure_exceed_the_backoff_limit() -> None:
    job = _job(parallelism=1, completions=1, backoffLimit=2)
    job["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    pod = _pod("Running")
    pod["status"]["containerStatuses"] = [{"name": "main", "restartCount": 2, "state": {"running": {}}}]
    summary = _summary(sync_job(job, [pod], now=NOW), job)
    assert summary["conditions"] == [("FailureTarget", "BackoffLimitExceeded")] and summary["deletions"] == 1


def test_active_deadline_fails_the_job_and_requeues_before() -> None:
    job = _job(activeDeadlineSeconds=30)
    job["status"]["startTime"] = (NOW - timedelta(seconds=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert sync_job(job, _pods(active=1), now=NOW).requeue_after == pytest.approx(20)
    job["status"]["startTime"] = (NOW - timedelta(seconds=31)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert _summary(sync_job(job, _pods(active=1), now=NOW), job)["conditions"] == [
        ("FailureTarget", "DeadlineExceeded")
    ]


def test_backoff_delays_the_replacement() -> None:
    job = _job(parallelism=1, completions=1)
    record = act.BackoffRecord(1, NOW.timestamp() - 2)
    outcome = sync_job(job, [], now=NOW, backoff=record)
    assert _summary(outcome, job)["creations"] == 0 and outcome.requeue_after == pytest.approx(8)


def test_finished_job_is_deleted_after_its_ttl() -> None:
    job = _job(ttlSecondsAfterFinished=5)
    job["status"]["conditions"] = [{"type": "Complete", "status": "True", "lastTransitionTime": STAMP}]
    assert sync_job(job, [], now=NOW).requeue_after == pytest.approx(5)
    assert act.DeleteJob() in sync_job(job, [], now=NOW + timedelta(seconds=6)).actions


# -- backoffLimitPerIndex (TestBackoffLimitPerIndex*, indexed_job_utils_test.go) --------------------


def _failed_index_pod(index: str, *, failures: int = 0, exit_code: int = 1) -> dict[str, Any]:
    pod = _pod("Failed", index)
    pod["metadata"]["annotations"][job_wire.INDEX_FAILURE_COUNT] = str(failures)
    pod["metadata"]["creationTimestamp"] = "2025-01-01T00:00:00Z"
    pod["status"]["containerStatuses"] = [{"name": "main", "state": {"terminated": {"exitCode": exit_code}}}]
    return pod


def _per_index_job(**spec: Any) -> dict[str, Any]:
    return _job(completionMode="Indexed", backoffLimitPerIndex=1, backoffLimit=2**31 - 1, **spec)


def test_per_index_failure_within_the_limit_recreates_the_index_with_its_count() -> None:
    job = _per_index_job(parallelism=2, completions=2)
    failed = _failed_index_pod("0")
    outcome = sync_job(job, [failed, _pod("Running", "1")], now=NOW)
    created = [a.manifest for a in outcome.actions if isinstance(a, act.CreatePod)]
    assert [m["metadata"]["annotations"][job_wire.INDEX_FAILURE_COUNT] for m in created] == ["1"]
    assert created[0]["metadata"]["annotations"][job_wire.COMPLETION_INDEX] == "0"
    # the failed pod keeps its finalizer (it carries the index's count) until its replacement exists
    assert not [
        a
        for a in outcome.actions
        if isinstance(a, act.RemoveFinalizer) and a.uid == failed["metadata"]["uid"]
    ]
    assert _summary(outcome, job)["failed"] == 0


def test_per_index_failure_at_the_limit_fails_the_index_and_then_the_job() -> None:
    job = _per_index_job(parallelism=1, completions=1)
    outcome = sync_job(job, [_failed_index_pod("0", failures=1)], now=NOW)
    status = [a.status for a in outcome.actions if isinstance(a, act.WriteStatus)][-1]
    assert status["failedIndexes"] == "0" and status["failed"] == 1
    assert [(c["type"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("FailureTarget", "FailedIndexes", "Job has failed indexes"),
        ("Failed", "FailedIndexes", "Job has failed indexes"),
    ]


def test_fail_index_rule_fails_only_that_index() -> None:
    policy = {"rules": [_on_exit("FailIndex", "In", [3])]}
    job = _per_index_job(parallelism=2, completions=2, podFailurePolicy=policy, podReplacementPolicy="Failed")
    outcome = sync_job(job, [_failed_index_pod("0", exit_code=3), _pod("Running", "1")], now=NOW)
    summary = _summary(outcome, job)
    assert (summary["creations"], summary["conditions"], summary["failed"]) == (0, [], 1)
    status = [a.status for a in outcome.actions if isinstance(a, act.WriteStatus)][-1]
    assert status["failedIndexes"] == "0"


def test_max_failed_indexes_exceeded() -> None:
    job = _per_index_job(parallelism=2, completions=2, maxFailedIndexes=0)
    summary = _summary(
        sync_job(job, [_failed_index_pod("0", failures=1), _pod("Running", "1")], now=NOW), job
    )
    assert (
        summary["conditions"] == [("FailureTarget", "MaxFailedIndexesExceeded")] and summary["deletions"] == 1
    )
