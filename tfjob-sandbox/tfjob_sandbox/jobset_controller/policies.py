"""JobSet's success and failure policies as pure functions (``success_policy.go``, ``failure_policy.go``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tfjob_sandbox.api import jobset_wire as wire
from tfjob_sandbox.jobset_controller.child_jobs import replicated_job_name

Obj = Mapping[str, Any]

#: The action of a failure policy without a matching rule (the Configurable Failure Policy KEP).
DEFAULT_RULE_ACTION = wire.RESTART_JOBSET


# --- success policy ---------------------------------------------------------------------------


def _targets(spec: Obj) -> list[str]:
    return list((spec.get("successPolicy") or {}).get("targetReplicatedJobs") or [])


def job_matches_success_policy(spec: Obj, job: Obj) -> bool:
    targets = _targets(spec)
    return not targets or replicated_job_name(job) in targets


def replicated_job_matches_success_policy(spec: Obj, rjob: Obj) -> bool:
    targets = _targets(spec)
    return not targets or rjob.get("name") in targets


def jobs_matching_success_policy(spec: Obj, jobs: Sequence[Obj]) -> int:
    return sum(1 for job in jobs if job_matches_success_policy(spec, job))


def jobs_expected_to_succeed(spec: Obj) -> int:
    """``Any``: one Job; ``All``: every replica of every targeted replicatedJob; else 0."""
    operator = (spec.get("successPolicy") or {}).get("operator")
    if operator == wire.OPERATOR_ANY:
        return 1
    if operator == wire.OPERATOR_ALL:
        return sum(
            int(rjob.get("replicas", 1))
            for rjob in spec.get("replicatedJobs") or []
            if replicated_job_matches_success_policy(spec, rjob)
        )
    return 0


def success_policy_met(spec: Obj, successful: Sequence[Obj]) -> bool:
    """``executeSuccessPolicy``'s test: enough Complete Jobs of the targeted replicatedJobs."""
    return jobs_matching_success_policy(spec, successful) >= jobs_expected_to_succeed(spec)


# --- failure policy ---------------------------------------------------------------------------


def failure_condition(job: Obj) -> Obj | None:
    """The Job's ``Failed`` condition when it is True."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Failed" and condition.get("status") == "True":
            found: Obj = condition
            return found
    return None


def _failure_time(job: Obj) -> str | None:
    condition = failure_condition(job)
    if condition is None:
        return None
    return str(condition.get("lastTransitionTime") or "")


def first_failed_job(failed: Sequence[Obj]) -> Obj | None:
    """The failed Job with the oldest ``Failed`` transition; the first of equals wins (RFC 3339 sorts)."""
    first: Obj | None = None
    first_time = ""
    for job in failed:
        when = _failure_time(job)
        if when is not None and (first is None or when < first_time):
            first, first_time = job, when
    return first


def rule_applies(rule: Obj, job: Obj, failure_reason: str) -> bool:
    """``ruleIsApplicable``: the rule's reasons (empty = any) and targets (empty = any) match the Job."""
    reasons = rule.get("onJobFailureReasons") or []
    if reasons and failure_reason not in reasons:
        return False
    parent = replicated_job_name(job)
    if not parent:
        return False
    targets = rule.get("targetReplicatedJobs") or []
    return not targets or parent in targets


def first_matching_rule(rules: Sequence[Obj], failed: Sequence[Obj]) -> tuple[Obj, Obj] | None:
    """The first rule that matches any failed Job, with the earliest-failed Job it matches."""
    for rule in rules:
        matched: Obj | None = None
        matched_time = ""
        for job in failed:
            condition = failure_condition(job)
            if condition is None:
                continue
            when = str(condition.get("lastTransitionTime") or "")
            if rule_applies(rule, job, str(condition.get("reason") or "")) and (
                matched is None or when < matched_time
            ):
                matched, matched_time = job, when
        if matched is not None:
            return rule, matched
    return None


@dataclass(frozen=True)
class FailureDecision:
    """What the failure policy does: fail the JobSet (``reason``/``message``) or restart it.

    ``restart``: bump ``status.restarts``; ``count_towards_max``: bump ``restartsCountTowardsMax``;
    ``event``: the Warning event (reason, message) a restart emits.
    """

    fail: bool
    reason: str = ""
    message: str = ""
    restart: bool = False
    count_towards_max: bool = False
    event: tuple[str, str] | None = None


def with_first_failed_job(message: str, job_name: str) -> str:
    return f"{message} (first failed job: {job_name})"


def decide_failure(spec: Obj, status: Obj, failed: Sequence[Obj]) -> FailureDecision:
    """``executeFailurePolicy`` for a JobSet with at least one failed Job of the current run."""
    policy = spec.get("failurePolicy")
    if policy is None:
        job = first_failed_job(failed)
        name = str(job["metadata"]["name"]) if job is not None else ""
        reason, message = wire.FAILED_JOBS
        return FailureDecision(True, reason, with_first_failed_job(message, name))
    match = first_matching_rule(policy.get("rules") or [], failed)
    if match is None:
        action, job = DEFAULT_RULE_ACTION, first_failed_job(failed)
    else:
        action, job = str(match[0].get("action")), match[1]
    name = str(job["metadata"]["name"]) if job is not None else ""
    if action == wire.FAIL_JOBSET:
        reason, message = wire.FAIL_JOBSET_ACTION
        return FailureDecision(True, reason, with_first_failed_job(message, name))
    if action == wire.RESTART_IGNORING_MAX:
        reason, message = wire.RESTART_IGNORING_MAX_ACTION
        return FailureDecision(False, restart=True, event=(reason, with_first_failed_job(message, name)))
    if int(status.get("restartsCountTowardsMax") or 0) >= int(policy.get("maxRestarts") or 0):
        reason, message = wire.REACHED_MAX_RESTARTS
        return FailureDecision(True, reason, with_first_failed_job(message, name))
    reason, message = wire.RESTART_JOBSET_ACTION
    return FailureDecision(
        False, restart=True, count_towards_max=True, event=(reason, with_first_failed_job(message, name))
    )
