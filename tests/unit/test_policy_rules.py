"""Rules: validation, JSON round trip, and each override's effect on the verdict; Verdict round trip."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from tests.unit.factories import NOW, condition, make_pod, make_tfjob, rfc3339
from tfjob_provider.policy import (
    REASON_OOM_KILLED,
    REASON_PENDING_TIMEOUT,
    REASON_PERMANENT_EXIT_CODE,
    REASON_RETRYABLE_EXIT_CODE,
    ReplicaSummary,
    Rules,
    Verdict,
    VerdictState,
    decide,
)

# --- validation and round trip -----------------------------------------------------------------


def test_defaults_are_the_operators_behaviour_plus_fail_fast() -> None:
    rules = Rules()
    assert rules.success_policy is None
    assert rules.fail_on_worker_failure is False
    assert rules.retryable_exit_codes == frozenset() and rules.permanent_exit_codes == frozenset()
    assert rules.oom_is_retryable is True
    assert rules.pending_timeout is None
    assert rules.image_pull_fail_fast is True
    assert rules.image_pull_timeout == 300.0


FULL = {
    "success_policy": "all_workers",
    "fail_on_worker_failure": True,
    "retryable_exit_codes": [1, 42],
    "permanent_exit_codes": [137],
    "oom_is_retryable": False,
    "pending_timeout": 900.0,
    "image_pull_fail_fast": False,
    "image_pull_timeout": 120.0,
}


def test_round_trip_through_json() -> None:
    rules = Rules.from_dict(FULL)
    assert rules.retryable_exit_codes == frozenset({1, 42})
    assert json.loads(json.dumps(rules.to_dict())) == FULL
    assert Rules.from_dict(json.loads(json.dumps(rules.to_dict()))) == rules
    assert Rules.from_dict(Rules().to_dict()) == Rules()


def test_missing_keys_keep_defaults_and_none_means_defaults() -> None:
    assert Rules.from_dict({"pending_timeout": 60}) == Rules(pending_timeout=60.0)
    assert Rules.from_dict({}) == Rules() == Rules.from_dict(None)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"pending_timout": 5}, ("pending_timout", "did you mean 'pending_timeout'")),
        ({"zzz": 1}, ("zzz", "known fields", "success_policy")),
        ({"success_policy": "AllWorkers"}, ("success_policy", "'all_workers'")),
        ({"fail_on_worker_failure": "yes"}, ("fail_on_worker_failure", "True or False")),
        ({"oom_is_retryable": 1}, ("oom_is_retryable",)),
        ({"image_pull_fail_fast": None}, ("image_pull_fail_fast",)),
        ({"image_pull_timeout": 0}, ("image_pull_timeout", "positive number of seconds", "=600")),
        ({"image_pull_timeout": "5m"}, ("image_pull_timeout",)),
        ({"image_pull_timeout": float("nan")}, ("image_pull_timeout",)),
        ({"retryable_exit_codes": "137"}, ("retryable_exit_codes", "[1, 137]")),
        ({"retryable_exit_codes": 137}, ("retryable_exit_codes",)),
        ({"permanent_exit_codes": [1, 256]}, ("permanent_exit_codes", "256", "0 to 255")),
        ({"permanent_exit_codes": [True]}, ("permanent_exit_codes",)),
        ({"permanent_exit_codes": [1.0]}, ("permanent_exit_codes",)),
        ({"retryable_exit_codes": [1], "permanent_exit_codes": [1, 2]}, ("both list [1]",)),
        ({"pending_timeout": 0}, ("pending_timeout", "positive")),
        ({"pending_timeout": -5}, ("pending_timeout",)),
        ({"pending_timeout": "10m"}, ("pending_timeout", "pending_timeout=900")),
        ({"pending_timeout": float("inf")}, ("pending_timeout",)),
        ({"pending_timeout": True}, ("pending_timeout",)),
    ],
)
def test_bad_rules_name_the_field_and_the_fix(data: dict[str, Any], words: tuple[str, ...]) -> None:
    with pytest.raises(ValueError) as raised:
        Rules.from_dict(data)
    for word in words:
        assert word in str(raised.value)


def test_from_dict_refuses_a_non_mapping() -> None:
    with pytest.raises(ValueError, match="dict of field names"):
        Rules.from_dict(["pending_timeout", 5])  # type: ignore[arg-type]


def test_constructor_validates_too_and_normalises_collections() -> None:
    with pytest.raises(ValueError, match="success_policy"):
        Rules(success_policy="everyone")  # type: ignore[arg-type]
    rules = Rules(retryable_exit_codes=[3, 3, 4], pending_timeout=30)  # type: ignore[arg-type]
    assert rules.retryable_exit_codes == frozenset({3, 4})
    assert isinstance(rules.pending_timeout, float)
    assert hash(rules) == hash(Rules(retryable_exit_codes=frozenset({3, 4}), pending_timeout=30.0))


@pytest.mark.parametrize(
    ("rules", "code", "retryable"),
    [
        (Rules(), 1, False),
        (Rules(), 127, False),
        (Rules(), 128, True),
        (Rules(), 255, True),
        (Rules(retryable_exit_codes=frozenset({1})), 1, True),
        (Rules(permanent_exit_codes=frozenset({137})), 137, False),
        (Rules(permanent_exit_codes=frozenset({137})), 143, True),
    ],
)
def test_exit_code_class(rules: Rules, code: int, retryable: bool) -> None:
    assert rules.is_retryable_exit_code(code) is retryable


# --- overrides in decide ---------------------------------------------------------------------


def worker1_failed(policy: str, **pod: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    job = make_tfjob({"Chief": 1, "Worker": 2}, restart_policy={"Worker": policy})
    return job, [make_pod("Chief"), make_pod("Worker", 0), make_pod("Worker", 1, phase="Failed", **pod)]


@pytest.mark.parametrize(
    ("policy", "rules", "exit_code", "state", "reason", "retryable"),
    [
        ("Never", Rules(retryable_exit_codes=frozenset({1})), 1, "Failed", REASON_RETRYABLE_EXIT_CODE, True),
        (
            "Never",
            Rules(permanent_exit_codes=frozenset({137})),
            137,
            "Failed",
            REASON_PERMANENT_EXIT_CODE,
            False,
        ),
        # ExitCode restarts what the rules call retryable and fails on what they call permanent:
        (
            "ExitCode",
            Rules(permanent_exit_codes=frozenset({137})),
            137,
            "Failed",
            REASON_PERMANENT_EXIT_CODE,
            False,
        ),
        (
            "ExitCode",
            Rules(permanent_exit_codes=frozenset({137})),
            143,
            "Restarting",
            "TFJobRestarting",
            False,
        ),
        # ...but cannot make the operator restart a code below 128: the job fails, retryably.
        (
            "ExitCode",
            Rules(retryable_exit_codes=frozenset({1})),
            1,
            "Failed",
            REASON_RETRYABLE_EXIT_CODE,
            True,
        ),
        # OnFailure restarts whatever the rules say (the operator does).
        (
            "OnFailure",
            Rules(permanent_exit_codes=frozenset({137})),
            137,
            "Restarting",
            "TFJobRestarting",
            False,
        ),
    ],
)
def test_exit_code_overrides(
    policy: str, rules: Rules, exit_code: int, state: str, reason: str, retryable: bool
) -> None:
    job, pods = worker1_failed(policy, exit_code=exit_code)
    verdict = decide(job, pods, now=NOW, rules=rules)
    assert (verdict.state.value, verdict.reason, verdict.retryable) == (state, reason, retryable)


@pytest.mark.parametrize(
    ("policy", "default_state", "default_reason"),
    [("Never", "Failed", REASON_OOM_KILLED), ("ExitCode", "Restarting", "TFJobRestarting")],
)
def test_oom_can_be_declared_permanent(policy: str, default_state: str, default_reason: str) -> None:
    job, pods = worker1_failed(policy, exit_code=137, terminated_reason="OOMKilled")
    default = decide(job, pods, now=NOW)
    assert (default.state.value, default.reason) == (default_state, default_reason)
    verdict = decide(job, pods, now=NOW, rules=Rules(oom_is_retryable=False))
    assert (verdict.state.value, verdict.reason, verdict.retryable) == ("Failed", REASON_OOM_KILLED, False)


def test_oom_is_retryable_wins_over_the_exit_code_lists() -> None:
    job, pods = worker1_failed("Never", exit_code=137, terminated_reason="OOMKilled")
    verdict = decide(job, pods, now=NOW, rules=Rules(permanent_exit_codes=frozenset({137})))
    assert (verdict.reason, verdict.retryable) == (REASON_OOM_KILLED, True)


@pytest.mark.parametrize(
    ("waited", "state"), [(timedelta(minutes=14), "Running"), (timedelta(minutes=15), "Failed")]
)
def test_pending_timeout(waited: timedelta, state: str) -> None:
    job = make_tfjob({"Chief": 1, "Worker": 2})
    stuck = make_pod(
        "Worker", 1, phase="Pending", created=NOW - waited, unschedulable="0/4 nodes have nvidia.com/gpu"
    )
    pods = [make_pod("Chief"), make_pod("Worker", 0), stuck]
    assert decide(job, pods, now=NOW).state.value == "Running"  # the operator waits forever (rules.md §8.1)
    verdict = decide(job, pods, now=NOW, rules=Rules(pending_timeout=900))
    assert verdict.state.value == state
    if state == "Failed":
        assert (verdict.reason, verdict.retryable, verdict.culprits) == (
            REASON_PENDING_TIMEOUT,
            True,
            ("mnist-worker-1",),
        )
        assert "nvidia.com/gpu" in verdict.message
        assert verdict.operator_finished is False


def test_pending_timeout_counts_phase_empty_and_skips_pods_without_creation_time() -> None:
    job = make_tfjob({"Worker": 1})
    pod = make_pod("Worker", phase="", created=NOW - timedelta(hours=1))
    assert decide(job, [pod], now=NOW, rules=Rules(pending_timeout=60)).reason == REASON_PENDING_TIMEOUT
    del pod["metadata"]["creationTimestamp"]
    assert decide(job, [pod], now=NOW, rules=Rules(pending_timeout=60)).state is VerdictState.PENDING


# A ResourceQuota refuses the chief's pod.  The operator's pass stops at the failed creation before
# it writes any status, so the job has no condition and no startTime; the workers' pods, created
# first, exist.  The factory's TFJob was created 11 minutes before NOW.
def chief_never_created(**job: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    job = {"conditions": [], "start_time": None, **job}
    pods = [make_pod("Worker", 0, phase="Pending"), make_pod("Worker", 1, phase="Pending")]
    for pod in pods:
        pod["metadata"]["creationTimestamp"] = rfc3339(NOW - timedelta(seconds=30))
    return make_tfjob({"Chief": 1, "Worker": 2}, **job), pods


def test_pending_timeout_covers_a_replica_whose_pod_was_never_created() -> None:
    job, pods = chief_never_created()
    assert decide(job, pods, now=NOW).state is VerdictState.PENDING  # the operator retries forever
    assert decide(job, pods, now=NOW, rules=Rules(pending_timeout=900)).state is VerdictState.PENDING
    verdict = decide(job, pods, now=NOW, rules=Rules(pending_timeout=600))
    assert (verdict.state, verdict.reason, verdict.retryable, verdict.culprits) == (
        VerdictState.FAILED,
        REASON_PENDING_TIMEOUT,
        True,
        ("mnist-chief-0",),
    )
    assert "has no pod 660s after the TFJob was created" in verdict.message
    assert "ResourceQuota" in verdict.message


def test_the_clock_of_a_missing_pod_starts_at_the_latest_start_time() -> None:
    """A resumed job gets a new startTime and its pods only then: it is not late from creation."""
    resumed = NOW - timedelta(seconds=30)
    job = make_tfjob({"Chief": 1, "Worker": 2}, start_time=resumed)
    assert decide(job, [], now=NOW, rules=Rules(pending_timeout=300)).state is VerdictState.PENDING
    verdict = decide(job, [], now=NOW + timedelta(seconds=300), rules=Rules(pending_timeout=300))
    assert verdict.reason == REASON_PENDING_TIMEOUT
    assert set(verdict.culprits) == {"mnist-chief-0", "mnist-worker-0", "mnist-worker-1"}
    assert "started (status.startTime)" in verdict.message


@pytest.mark.parametrize(
    "job",
    [
        # It ran once (a Running condition, now False): a missing pod is one being recreated.
        {"conditions": [condition("Created"), condition("Running", "False")]},
        {"conditions": [condition("Created"), condition("Restarting")]},
        # Resumed but not reconciled yet: the operator is about to create the pods.
        {"conditions": [condition("Created"), condition("Suspended")]},
        # Dynamic workers come and go; the chief decides and is there.
        {"conditions": [condition("Created")], "dynamic_workers": True},
    ],
)
def test_missing_pods_are_not_judged_when_they_are_expected_to_be_missing(job: dict[str, Any]) -> None:
    tfjob = make_tfjob({"Chief": 1, "Worker": 2}, **job)
    pods = [make_pod("Chief", phase="Pending", created=NOW - timedelta(seconds=5))]
    verdict = decide(tfjob, pods, now=NOW, rules=Rules(pending_timeout=60))
    assert verdict.reason != REASON_PENDING_TIMEOUT
    assert verdict.state is not VerdictState.FAILED


def test_no_status_and_no_pods_is_left_to_the_startup_timeout() -> None:
    """Nothing shows an operator at work: the waiter's startup timeout says so, not this rule."""
    job = make_tfjob({"Chief": 1}, conditions=[], start_time=None)
    assert decide(job, [], now=NOW, rules=Rules(pending_timeout=60)).reason != REASON_PENDING_TIMEOUT


def test_decide_refuses_rules_of_the_wrong_type() -> None:
    with pytest.raises(TypeError, match=r"Rules\.from_dict"):
        decide(make_tfjob(), [], now=NOW, rules={"pending_timeout": 5})  # type: ignore[arg-type]


# --- Verdict ---------------------------------------------------------------------------------------


def sample_verdict() -> Verdict:
    job, pods = worker1_failed("Never", exit_code=137, terminated_reason="OOMKilled")
    return decide(job, pods, now=NOW)


def test_verdict_round_trips_through_json() -> None:
    verdict = sample_verdict()
    data = json.loads(json.dumps(verdict.to_dict()))
    assert Verdict.from_dict(data) == verdict
    assert data["state"] == "Failed" and data["replicas"]["Worker"] == {
        "active": 1,
        "succeeded": 0,
        "failed": 1,
        "pending": 0,
        "restarts": 0,
    }


def test_verdict_basics() -> None:
    verdict = sample_verdict()
    assert verdict.terminal
    assert str(verdict.state) == "Failed" and f"{verdict.state}" == "Failed"
    assert isinstance(hash(verdict), int)
    built = Verdict(state="Running", retryable=False, reason="TFJobRunning", message="m", culprits=["a"])  # type: ignore[arg-type]
    assert built.state is VerdictState.RUNNING and built.culprits == ("a",) and not built.terminal
    assert {state.value for state in VerdictState} == {
        "Pending",
        "Running",
        "Restarting",
        "Suspended",
        "Succeeded",
        "Failed",
    }


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"state": "Done"}, ("state",)),
        ({"retryable": "no"}, ("retryable",)),
        ({"operator_finished": None}, ("operator_finished",)),
        ({"reason": 5}, ("reason",)),
        ({"culprits": "mnist-worker-1"}, ("culprits",)),
        ({"replicas": {"Worker": {"active": -1}}}, ("active",)),
        ({"replicas": {"Worker": {"running": 1}}}, ("running",)),
        ({"replicas": []}, ("replicas",)),
        ({"extra": 1}, ("extra",)),
    ],
)
def test_verdict_from_dict_rejects_malformed_events(change: dict[str, Any], words: tuple[str, ...]) -> None:
    data = {**sample_verdict().to_dict(), **change}
    with pytest.raises(ValueError) as raised:
        Verdict.from_dict(data)
    for word in words:
        assert word in str(raised.value)


def test_verdict_from_dict_names_missing_fields() -> None:
    data = sample_verdict().to_dict()
    del data["message"]
    with pytest.raises(ValueError, match="message"):
        Verdict.from_dict(data)


def test_replica_summary_round_trip() -> None:
    summary = ReplicaSummary(active=1, succeeded=2, failed=3, pending=4, restarts=5)
    assert ReplicaSummary.from_dict(summary.to_dict()) == summary


@pytest.mark.parametrize(
    "data",
    [
        {10**5000: 1},
        {"x" * 1_000_000: 1},
        {"pending_timeout": "x" * 1_000_000},
        {"permanent_exit_codes": "3" * 1_000_000},
        {"oom_is_retryable": list(range(1_000_000))},
    ],
    ids=["huge-int-key", "1-mb-key", "1-mb-timeout", "1-mb-exit-codes", "million-item-boolean"],
)
def test_hostile_rules_are_refused_with_a_short_message(data: dict[object, object]) -> None:
    with pytest.raises(ValueError) as caught:
        Rules.from_dict(data)  # type: ignore[arg-type]
    assert len(str(caught.value)) < 500
