"""What the Job controller does with a failed pod of a translated Job, per restart policy.

The translation writes ``restartPolicy``, ``backoffLimit`` and ``podFailurePolicy``; what they
do is the Job controller's business.  :func:`react` below is that controller's rule matching
(``matchPodFailurePolicy`` in kubernetes/kubernetes ``pkg/controller/job/pod_failure_policy.go``),
written for these tests and first checked against cases of its upstream tests; then every
restart policy's Job is shown the pods of the seed's situations, and must react as the training
operator does (docs/concepts/rules.md §3).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from tests.unit.factories import make_pod
from tfjob_provider._jobset.restarts import job_restart_fields
from tfjob_provider._policy.rules import Rules

FAIL_JOB, IGNORE, COUNT = "FailJob", "Ignore", "Count"


def _terminated_codes(statuses: Any, container: str | None) -> list[int]:
    codes = []
    for status in statuses or []:
        terminated = (status.get("state") or {}).get("terminated")
        if terminated is None or (container is not None and status.get("name") != container):
            continue
        if terminated.get("exitCode", 0) != 0:  # successful containers are never matched
            codes.append(terminated["exitCode"])
    return codes


def _exit_codes_match(requirement: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    container = requirement.get("containerName")
    codes = _terminated_codes(status.get("containerStatuses"), container) + _terminated_codes(
        status.get("initContainerStatuses"), container
    )
    values = requirement.get("values") or []
    if requirement.get("operator") == "In":
        return any(code in values for code in codes)
    if requirement.get("operator") == "NotIn":
        return any(code not in values for code in codes)
    return False


def _conditions_match(patterns: Any, status: Mapping[str, Any]) -> bool:
    return any(
        condition.get("type") == pattern.get("type") and condition.get("status") == pattern.get("status")
        for condition in status.get("conditions") or []
        for pattern in patterns
    )


def react(policy: Mapping[str, Any] | None, pod: Mapping[str, Any]) -> str:
    """The first rule matching the failed pod decides; no rule (or no policy) counts the failure."""
    status = pod.get("status") or {}
    for rule in (policy or {}).get("rules") or []:
        action = rule.get("action")
        if action not in (FAIL_JOB, IGNORE, COUNT):
            continue  # an unknown action is skipped
        if "onExitCodes" in rule:
            matched = _exit_codes_match(rule["onExitCodes"], status)
        else:
            matched = _conditions_match(rule.get("onPodConditions") or [], status)
        if matched:
            return str(action)
    return COUNT


def _failed_pod(**containers: int) -> dict[str, Any]:
    statuses = [
        {"name": name, "state": {"terminated": {"exitCode": code}}} for name, code in containers.items()
    ]
    return {"status": {"phase": "Failed", "containerStatuses": statuses}}


DISRUPTED = {"status": {"phase": "Failed", "conditions": [{"type": "DisruptionTarget", "status": "True"}]}}

# Cases of https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/job/pod_failure_policy_test.go
# (TestMatchPodFailurePolicy), to show that react() matches as the Job controller does.
UPSTREAM = {
    "unknown action for rule matching by exit codes - skip rule with unknown action": (
        [
            {"action": "UnknownAction", "onExitCodes": {"operator": "In", "values": [1, 2]}},
            {"action": FAIL_JOB, "onExitCodes": {"operator": "In", "values": [2, 3]}},
        ],
        _failed_pod(**{"main-container": 2}),
        FAIL_JOB,
    ),
    "no policy rules": (None, _failed_pod(main=2), COUNT),
    "ignore rule matched for exit codes": (
        [{"action": IGNORE, "onExitCodes": {"operator": "In", "values": [1, 2, 3]}}],
        _failed_pod(main=2),
        IGNORE,
    ),
    "successful containers are skipped by the rules": (
        [{"action": FAIL_JOB, "onExitCodes": {"operator": "NotIn", "values": [111]}}],
        {
            "status": {
                "phase": "Failed",
                "initContainerStatuses": [
                    {"name": "init-container", "state": {"terminated": {"exitCode": 0}}}
                ],
                "containerStatuses": [
                    {"name": "main-container", "state": {"terminated": {"exitCode": 111}}},
                    {"name": "suppport-container", "state": {"terminated": {"exitCode": 0}}},
                ],
            }
        },
        COUNT,
    ),
    "pod failure policy with NotIn operator and value 0": (
        [{"action": FAIL_JOB, "onExitCodes": {"operator": "NotIn", "values": [0]}}],
        _failed_pod(**{"main-container": 1, "suppport-container": 0}),
        FAIL_JOB,
    ),
    "second jobfail rule matched for exit codes": (
        [
            {"action": COUNT, "onExitCodes": {"operator": "In", "values": [1, 2, 3]}},
            {"action": FAIL_JOB, "onExitCodes": {"operator": "In", "values": [4, 5, 6]}},
        ],
        _failed_pod(**{"main-container": 6}),
        FAIL_JOB,
    ),
    "ignore rule matched for pod conditions": (
        [{"action": IGNORE, "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}],
        DISRUPTED,
        IGNORE,
    ),
}


@pytest.mark.parametrize(("rules", "pod", "expected"), UPSTREAM.values(), ids=UPSTREAM.keys())
def test_react_matches_as_the_job_controller_does(rules: Any, pod: dict[str, Any], expected: str) -> None:
    assert react(None if rules is None else {"rules": rules}, pod) == expected


def _job_fails(fields: Mapping[str, Any], pod: Mapping[str, Any]) -> str:
    """``fails`` (the Job, so the JobSet), ``replaced`` (a new pod, same index) or ``restarted``
    (the kubelet restarts the container in place: the pod never fails for an exit code)."""
    if fields["restartPolicy"] == "OnFailure" and pod is not DISRUPTED:
        return "restarted"
    action = react(fields.get("podFailurePolicy"), pod)
    if action == FAIL_JOB or (action == COUNT and fields["backoffLimit"] == 0):
        return "fails"
    return "replaced"


WITH_SIDECAR_FAILED = _failed_pod(tensorflow=0, sidecar=1)
# What the training operator does (docs/concepts/rules.md §3), per restart policy and failed pod.
SITUATIONS = {
    "Never, program error (exit 1)": ("Never", _failed_pod(tensorflow=1), "fails"),
    "Never, SIGKILL (137)": ("Never", _failed_pod(tensorflow=137), "fails"),
    "Never, evicted": ("Never", DISRUPTED, "fails"),
    "ExitCode, program error (exit 1)": ("ExitCode", _failed_pod(tensorflow=1), "fails"),
    "ExitCode, exit 127": ("ExitCode", _failed_pod(tensorflow=127), "fails"),
    "ExitCode, exit 128": ("ExitCode", _failed_pod(tensorflow=128), "replaced"),
    "ExitCode, SIGKILL (137)": ("ExitCode", _failed_pod(tensorflow=137), "replaced"),
    "ExitCode, SIGTERM (143)": ("ExitCode", _failed_pod(tensorflow=143), "replaced"),
    "ExitCode, exit 255": ("ExitCode", _failed_pod(tensorflow=255), "replaced"),
    "ExitCode, evicted (no exit code: 48879 is retryable)": ("ExitCode", DISRUPTED, "replaced"),
    "ExitCode, another container's exit code does not decide": (
        "ExitCode",
        _failed_pod(tensorflow=137, sidecar=1),
        "replaced",
    ),
    "OnFailure, program error": ("OnFailure", _failed_pod(tensorflow=1), "restarted"),
    "OnFailure, evicted": ("OnFailure", DISRUPTED, "replaced"),
}


@pytest.mark.parametrize(("policy", "pod", "expected"), SITUATIONS.values(), ids=SITUATIONS.keys())
def test_each_restart_policy_reacts_as_the_training_operator(
    policy: str, pod: dict[str, Any], expected: str
) -> None:
    fields = job_restart_fields(policy, backoff_limit=None)
    assert _job_fails(fields, pod) == expected


def test_exit_code_0_in_a_failed_pod_is_left_to_the_verdict() -> None:
    """R4 fails the job when the tensorflow container exited 0 but the pod failed (a sidecar did);
    the Job controller never matches exit code 0, so it replaces the pod and the provider's
    verdict (PermanentExitCode) fails the job instead — documented in docs/guides/jobset.md."""
    fields = job_restart_fields("ExitCode", backoff_limit=None)
    assert _job_fails(fields, WITH_SIDECAR_FAILED) == "replaced"
    pod = make_pod("Worker", 1, phase="Failed", exit_code=0, restart_policy="ExitCode")
    assert react(fields["podFailurePolicy"], pod) == COUNT


def test_rules_move_exit_codes_between_failing_and_replacing() -> None:
    rules = Rules(permanent_exit_codes=frozenset({137}), retryable_exit_codes=frozenset({3}))
    fields = job_restart_fields("ExitCode", backoff_limit=None, rules=rules)
    assert _job_fails(fields, _failed_pod(tensorflow=137)) == "fails"
    assert _job_fails(fields, _failed_pod(tensorflow=3)) == "replaced"
    assert _job_fails(fields, _failed_pod(tensorflow=1)) == "fails"


def test_the_exit_code_lists_are_what_kubernetes_validation_accepts() -> None:
    """At most 255 values, sorted, no duplicates, and In never lists 0 (batch/v1 validation)."""
    for rules in (Rules(), Rules(retryable_exit_codes=frozenset(range(1, 128)))):
        for rule in job_restart_fields("ExitCode", backoff_limit=None, rules=rules)["podFailurePolicy"][
            "rules"
        ]:
            values = rule.get("onExitCodes", {}).get("values")
            if values is not None:
                assert 0 < len(values) <= 255
                assert values == sorted(set(values))
                assert 0 not in values


def test_backoff_limits_per_policy() -> None:
    assert job_restart_fields("Never", backoff_limit=5)["backoffLimit"] == 0
    assert job_restart_fields("OnFailure", backoff_limit=5)["backoffLimit"] == 5
    assert job_restart_fields("OnFailure", backoff_limit=None)["backoffLimit"] == 2**31 - 1
    assert job_restart_fields("ExitCode", backoff_limit=5)["backoffLimit"] == 2**31 - 1
    assert "podFailurePolicy" not in job_restart_fields("Never", backoff_limit=None)
