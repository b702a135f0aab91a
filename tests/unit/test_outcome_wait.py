"""The shared judge of every wait: when it is over and what it reports (trigger, worker and sensor alike)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from tests.unit.factories import JOB_NAME, JOB_UID, NAMESPACE, NOW, condition, make_pod, make_tfjob
from tfjob_provider._outcome.wait import (
    WaitOutcome,
    WaitTarget,
    earliest_deadline,
    format_utc,
    parse_utc,
)
from tfjob_provider.policy import (
    NOT_RECONCILED_MESSAGE,
    REASON_PENDING_TIMEOUT,
    REASON_STARTUP_TIMEOUT,
    REASON_TFJOB_DELETED,
    Rules,
    VerdictState,
)

CREATED = NOW - timedelta(minutes=11)  # the factories' creationTimestamp


def target(**overrides: object) -> WaitTarget:
    fields: dict[str, object] = {"name": JOB_NAME, "namespace": NAMESPACE, "uid": JOB_UID}
    fields.update(overrides)
    return WaitTarget(**fields)  # type: ignore[arg-type]


def test_a_running_job_keeps_the_wait_going() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 1}, conditions=[condition("Created"), condition("Running")])
    assert target().judge(job, [make_pod("Chief"), make_pod("Worker")], now=NOW) is None


def test_chief_success_ends_the_wait_with_the_verdict_and_times() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 1})
    outcome = target().judge(job, [make_pod("Chief", phase="Succeeded"), make_pod("Worker")], now=NOW)
    assert outcome is not None and outcome.status == "success"
    assert outcome.verdict is not None and outcome.verdict.state is VerdictState.SUCCEEDED
    assert (outcome.uid, outcome.start_time) == (JOB_UID, "2025-03-01T11:50:00Z")
    assert outcome.completion_time == "2025-03-01T11:59:00Z"  # the chief's finishedAt


def test_a_failure_ends_the_wait_as_failed() -> None:
    job = make_tfjob({"Chief": 1, "PS": 1})
    outcome = target().judge(job, [make_pod("Chief"), make_pod("PS", phase="Failed", exit_code=2)], now=NOW)
    assert outcome is not None and outcome.status == "failed"
    assert outcome.verdict is not None and outcome.verdict.retryable is False


@pytest.mark.parametrize("deleted", [True, False])
def test_a_vanished_tfjob_is_failed_retryable_tfjob_deleted(deleted: bool) -> None:
    outcome = target().judge(None, [], now=NOW, deleted=deleted)
    assert outcome is not None and outcome.status == "failed"
    assert outcome.verdict is not None
    assert (outcome.verdict.reason, outcome.verdict.retryable) == (REASON_TFJOB_DELETED, True)
    assert outcome.verdict.operator_finished is True  # nothing left to delete


def test_a_replacement_under_the_same_name_counts_as_deleted() -> None:
    job = make_tfjob({"Chief": 1}, uid="another-uid")
    outcome = target().judge(job, [make_pod("Chief", phase="Succeeded", owner_uid="another-uid")], now=NOW)
    assert outcome is not None and outcome.verdict is not None
    assert outcome.verdict.reason == REASON_TFJOB_DELETED
    assert "replaced by another TFJob (uid another-uid)" in outcome.message


def test_a_tfjob_being_deleted_ends_the_wait_unless_the_operator_had_finished_it() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 1})
    job["metadata"]["deletionTimestamp"] = "2025-03-01T11:59:59Z"
    running = target().judge(job, [make_pod("Chief"), make_pod("Worker")], now=NOW)
    assert (
        running is not None and running.verdict is not None and running.verdict.reason == REASON_TFJOB_DELETED
    )
    # Foreground deletion kills the pods first: that is not a replica failure...
    killed = target().judge(
        job, [make_pod("Chief", deleting=True), make_pod("Worker", deleting=True)], now=NOW
    )
    assert killed is not None and killed.verdict is not None and killed.verdict.reason == REASON_TFJOB_DELETED
    # ...and a chief exiting 0 on SIGTERM is not a success.
    graceful = target().judge(job, [make_pod("Chief", phase="Succeeded"), make_pod("Worker")], now=NOW)
    assert (
        graceful is not None
        and graceful.verdict is not None
        and graceful.verdict.reason == REASON_TFJOB_DELETED
    )
    job["status"]["conditions"].append(condition("Succeeded"))  # finished, then ttlSecondsAfterFinished
    done = target().judge(job, [make_pod("Chief", phase="Succeeded"), make_pod("Worker")], now=NOW)
    assert done is not None and done.status == "success"


def test_the_sensor_waits_for_a_tfjob_that_does_not_exist_yet() -> None:
    sensor = target(uid=None, wait_for_existence=True)
    assert sensor.judge(None, [], now=NOW) is None
    assert target(uid=None).judge(None, [], now=NOW) is not None


def test_no_status_after_startup_timeout_means_no_training_operator() -> None:
    job = make_tfjob({"Chief": 1}, conditions=[], start_time=None)
    waiting = target(startup_timeout=11 * 60 + 1)
    assert waiting.judge(job, [], now=NOW) is None
    outcome = target(startup_timeout=600).judge(job, [], now=NOW)
    assert outcome is not None and outcome.status == "failed" and outcome.verdict is not None
    assert outcome.message.startswith(NOT_RECONCILED_MESSAGE)
    assert (outcome.verdict.reason, outcome.verdict.retryable, outcome.verdict.operator_finished) == (
        REASON_STARTUP_TIMEOUT,
        True,
        False,
    )


def test_pending_replicas_after_startup_timeout_fail_the_job() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 1})
    pods = [
        make_pod("Chief", phase="Pending", created=NOW - timedelta(seconds=30)),
        make_pod("Worker", phase="Pending", created=NOW - timedelta(seconds=30)),
    ]
    outcome = target(startup_timeout=600).judge(job, pods, now=NOW)
    assert outcome is not None and outcome.verdict is not None
    assert outcome.verdict.reason == REASON_STARTUP_TIMEOUT
    assert set(outcome.verdict.culprits) == {"mnist-chief-0", "mnist-worker-0"}


def test_a_replica_whose_pod_was_never_created_is_named_after_startup_timeout() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 1})  # created 11 minutes before NOW; no Running yet
    pods = [make_pod("Worker", phase="Running")]  # the chief's pod was refused (e.g. a quota)
    assert target(startup_timeout=11 * 60 + 1).judge(job, pods, now=NOW) is None
    outcome = target(startup_timeout=600).judge(job, pods, now=NOW)
    assert outcome is not None and outcome.status == "failed" and outcome.verdict is not None
    assert (outcome.verdict.reason, outcome.verdict.culprits) == (REASON_PENDING_TIMEOUT, ("mnist-chief-0",))
    assert "has no pod" in outcome.message


def test_startup_timeout_is_each_replicas_pending_limit_unless_rules_say_otherwise() -> None:
    assert target(startup_timeout=120).effective_rules().pending_timeout == 120.0
    own = Rules(pending_timeout=30)
    assert target(startup_timeout=120, rules=own).effective_rules().pending_timeout == 30.0
    job = make_tfjob({"Chief": 1, "Worker": 1}, conditions=[condition("Created"), condition("Running")])
    pods = [make_pod("Chief"), make_pod("Worker", phase="Pending", created=NOW - timedelta(seconds=200))]
    outcome = target(startup_timeout=120).judge(job, pods, now=NOW)
    assert outcome is not None and outcome.verdict is not None
    assert outcome.verdict.reason == REASON_PENDING_TIMEOUT


def test_a_suspended_job_is_not_a_startup_failure() -> None:
    job = make_tfjob(
        {"Chief": 1}, run_policy={"suspend": True}, conditions=[condition("Created"), condition("Suspended")]
    )
    assert target(startup_timeout=1).judge(job, [], now=NOW) is None


def test_timeout_reports_the_state_seen_on_the_fresh_read() -> None:
    deadline = NOW - timedelta(seconds=1)
    waiting = target(deadline=deadline, deadline_name="execution_timeout")
    assert waiting.deadline_passed(NOW) and not waiting.deadline_passed(deadline - timedelta(seconds=1))
    job = make_tfjob({"Chief": 1, "Worker": 1}, conditions=[condition("Created"), condition("Running")])
    outcome = waiting.timed_out(job, [make_pod("Chief"), make_pod("Worker")], now=NOW)
    assert outcome.status == "timeout"
    assert outcome.message.startswith(f"execution_timeout reached at {format_utc(deadline)} while TFJob")
    assert outcome.verdict is not None and outcome.verdict.state is VerdictState.RUNNING


def test_assess_wakes_at_the_earliest_of_deadline_and_startup_window_and_never_without_either() -> None:
    job = make_tfjob({"Chief": 1}, conditions=[], start_time=None)  # NotReconciled: no rule of the engine
    assert target().assess(job, [], now=NOW) == (None, None)
    assert target(deadline=NOW + timedelta(seconds=3)).assess(job, [], now=NOW) == (
        None,
        NOW + timedelta(seconds=3),
    )
    startup_ends = CREATED + timedelta(seconds=11 * 60 + 2)
    assert target(startup_timeout=11 * 60 + 2).assess(job, [], now=NOW) == (None, startup_ends)
    both = target(startup_timeout=11 * 60 + 2, deadline=NOW + timedelta(hours=1))
    assert both.assess(job, [], now=NOW)[1] == startup_ends
    outcome, wake_at = both.assess(job, [], now=startup_ends)
    assert outcome is not None and outcome.verdict is not None
    assert (outcome.verdict.reason, wake_at) == (REASON_STARTUP_TIMEOUT, None)
    assert both.judge(job, [], now=startup_ends - timedelta(microseconds=1)) is None


def test_assess_of_a_missing_tfjob_wakes_at_the_deadline_only_while_waiting_for_it_to_exist() -> None:
    deadline = NOW + timedelta(minutes=5)
    assert target(uid=None, wait_for_existence=True, deadline=deadline).assess(None, [], now=NOW) == (
        None,
        deadline,
    )
    outcome, wake_at = target(deadline=deadline).assess(None, [], now=NOW)
    assert outcome is not None and outcome.status == "failed" and wake_at is None


def test_outcome_event_round_trips_through_json() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 1})
    outcome = target().judge(job, [make_pod("Chief", phase="Succeeded"), make_pod("Worker")], now=NOW)
    assert outcome is not None
    event = json.loads(json.dumps(outcome.to_event()))
    assert set(event) == {
        "status",
        "name",
        "namespace",
        "uid",
        "message",
        "verdict",
        "start_time",
        "completion_time",
        "outputs_pod",
        "outputs_message",
        "recreations",
    }
    assert WaitOutcome.from_event(event) == outcome
    with pytest.raises(ValueError, match="status 'done'"):
        WaitOutcome.from_event({**event, "status": "done"})


def test_a_success_carries_the_deciding_replicas_termination_message_and_recreations() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 1})
    pods = [
        make_pod("Chief", phase="Succeeded", terminated_message='{"loss": 0.1}'),
        make_pod("Worker", phase="Succeeded", terminated_message='{"not": "me"}'),
    ]
    outcome = target().judge(job, pods, now=NOW)
    assert outcome is not None and outcome.status == "success"
    assert (outcome.outputs_pod, outcome.outputs_message) == (f"{JOB_NAME}-chief-0", '{"loss": 0.1}')
    counted = outcome.with_recreations({"Worker": 2})
    event = json.loads(json.dumps(counted.to_event()))
    assert WaitOutcome.from_event(event) == counted and counted.recreations == {"Worker": 2}
    with pytest.raises(ValueError, match="recreations"):
        WaitOutcome.from_event({**event, "recreations": {"Worker": "two"}})
    with pytest.raises(ValueError, match="outputs_message"):
        WaitOutcome.from_event({**event, "outputs_message": 5})
    # Events of an older provider version have none of the three fields.
    old = {key: value for key, value in event.items() if not key.startswith(("outputs", "recreations"))}
    assert WaitOutcome.from_event(old).recreations == {} and WaitOutcome.from_event(old).outputs_pod is None


def test_failures_carry_no_outputs() -> None:
    job = make_tfjob({"Worker": 1})
    outcome = target().judge(job, [make_pod("Worker", phase="Failed", terminated_message="{}")], now=NOW)
    assert outcome is not None and outcome.status == "failed"
    assert outcome.outputs_pod is None and outcome.outputs_message is None


def test_deadlines_are_absolute_utc_and_the_earliest_wins() -> None:
    early, late = NOW, NOW + timedelta(hours=1)
    assert earliest_deadline({"timeout": late, "execution_timeout": early}) == (early, "execution_timeout")
    assert earliest_deadline({"timeout": None}) == (None, None)
    assert parse_utc(format_utc(early)) == early
    assert parse_utc("2025-03-01T12:00:00Z") == NOW


def test_outcomes_that_stream_skew_can_fake_are_confirmed_on_a_fresh_read() -> None:
    """Streams race: the operator's cleanPodPolicy deletions can arrive before its Succeeded status."""
    job = make_tfjob({"Chief": 1, "PS": 1})
    cleanup_race = [make_pod("Chief", phase="Succeeded"), make_pod("PS", deleting=True)]
    stale = target().judge(job, cleanup_race, now=NOW)
    assert stale is not None and stale.status == "failed" and target().needs_confirmation(stale)
    fresh_job = make_tfjob({"Chief": 1, "PS": 1}, conditions=[condition("Created"), condition("Succeeded")])
    confirmed = target().confirm(stale, fresh_job, cleanup_race, now=NOW)
    assert confirmed is not None and confirmed.status == "success"
    assert not target().needs_confirmation(confirmed)  # a success the pods show is certain (ordered stream)
    condition_only = target().judge(fresh_job, [make_pod("Chief"), make_pod("PS")], now=NOW)
    assert condition_only is not None and condition_only.status == "success"
    assert target().needs_confirmation(condition_only)  # pods lag: the replica counts would be stale
    deleted = target().judge(None, [], now=NOW)
    assert not target().needs_confirmation(deleted)  # a deletion is certain
    assert not target().needs_confirmation(None)


def test_a_confirmation_that_finds_the_tfjob_gone_keeps_the_snapshots_outcome() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 1})
    outcome = target().judge(job, [make_pod("Chief", phase="Succeeded"), make_pod("Worker")], now=NOW)
    assert outcome is not None
    assert target().confirm(outcome, None, [], now=NOW) is outcome  # deleted by its TTL meanwhile
    replaced = make_tfjob({"Chief": 1}, uid="other")
    assert target().confirm(outcome, replaced, [], now=NOW) is outcome


def test_a_failed_condition_ahead_of_its_pods_is_judged_again_with_the_cause() -> None:
    """The TFJob stream can deliver Failed before the pods stream delivers the pod that caused it."""
    failed_job = make_tfjob(
        {"Chief": 1, "Evaluator": 1}, conditions=[condition("Created"), condition("Failed")]
    )
    lagging = [make_pod("Chief"), make_pod("Evaluator")]
    early = target().judge(failed_job, lagging, now=NOW)
    assert early is not None and early.verdict is not None and early.verdict.culprits == ()
    assert target().needs_confirmation(early)
    fresh_pods = [make_pod("Chief"), make_pod("Evaluator", phase="Failed", exit_code=2)]
    confirmed = target().confirm(early, failed_job, fresh_pods, now=NOW)
    assert confirmed is not None and confirmed.verdict is not None
    assert confirmed.verdict.culprits == ("mnist-evaluator-0",) and confirmed.verdict.retryable is False
    assert not target().needs_confirmation(confirmed)  # the operator's Failed, with its cause: certain


def test_a_success_event_stays_small_even_with_the_largest_message() -> None:
    """Airflow stores trigger events in its database: the message is the one large field, capped
    one character over Kubernetes' limit even when a status carries more."""
    pods = [make_pod("Chief", phase="Succeeded", terminated_message="m" * 100_000)]
    pods += [make_pod("Worker", i, phase="Succeeded") for i in range(50)]
    outcome = target().judge(make_tfjob({"Chief": 1, "Worker": 50}), pods, now=NOW)
    assert outcome is not None and outcome.status == "success"
    event = json.dumps(outcome.with_recreations({"Worker": 50, "Chief": 3}).to_event())
    assert len(outcome.outputs_message or "") == 4097
    assert len(event) < 8 * 1024
