"""The JobSet controller's rules on child Jobs, replayed: which Jobs are of the current run, when
the success policy completes the set, what the failure policy does (kubernetes-sigs/jobset
``pkg/controllers/{jobset_controller,success_policy,failure_policy}.go``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from tfjob_provider._jobset import names
from tfjob_provider._policy.readers import as_int, as_list, as_mapping, as_str, is_true, parse_time

FAIL_JOBSET: Final = "FailJobSet"
RESTART_JOBSET: Final = "RestartJobSet"
RESTART_JOBSET_IGNORE_MAX: Final = "RestartJobSetAndIgnoreMaxRestarts"
RESTART_JOB: Final = "RestartJob"
RESTART_JOB_IGNORE_MAX: Final = "RestartJobAndIgnoreMaxRestarts"
#: The action of a failure policy without a matching rule (the upstream KEP's default).
_DEFAULT_ACTION: Final = RESTART_JOBSET
_JOB_RESTART_ATTEMPT: Final = "jobset.sigs.k8s.io/job-restart-attempt"


@dataclass(frozen=True)
class ChildJob:
    """One child Job, read once: where it belongs and how it ended (if it did)."""

    job: Mapping[str, Any]
    name: str
    uid: str | None
    replicated_job: str | None
    job_index: int | None
    #: ``Complete``, ``Failed`` or None (still active).
    finished: str | None
    failure_reason: str
    failure_message: str
    failed_at: datetime | None


@dataclass(frozen=True)
class FailureOutcome:
    """What the failure policy does about the failed Jobs: fail the set, or restart (part of) it."""

    action: str
    fails: bool
    #: The failed Job the action was chosen for (the earliest one matching the rule).
    job: ChildJob
    rule: str | None


def _condition(job: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for item in as_list(as_mapping(job.get("status")).get("conditions")):
        condition = as_mapping(item)
        if condition.get("type") == kind and is_true(condition.get("status")):
            return condition
    return None


def read_job(job: Mapping[str, Any]) -> ChildJob:
    metadata = as_mapping(job.get("metadata"))
    labels = as_mapping(metadata.get("labels"))
    failed = _condition(job, names.JOB_FAILED)
    finished = (
        names.JOB_FAILED if failed else names.JOB_COMPLETE if _condition(job, names.JOB_COMPLETE) else None
    )
    failure = failed or {}
    return ChildJob(
        job=job,
        name=as_str(metadata.get("name")) or "?",
        uid=as_str(metadata.get("uid")),
        replicated_job=as_str(labels.get(names.LABEL_REPLICATED_JOB)) or None,
        job_index=as_int(labels.get(names.LABEL_JOB_INDEX)),
        finished=finished,
        failure_reason=as_str(failure.get("reason")) or "",
        failure_message=as_str(failure.get("message")) or "",
        failed_at=parse_time(failure.get("lastTransitionTime")),
    )


def _job_restarts(jobset: Mapping[str, Any], replicated_job: str | None, key: str) -> list[int]:
    for status in as_list(as_mapping(jobset.get("status")).get("replicatedJobsStatus")):
        status = as_mapping(status)
        if status.get("name") == replicated_job:
            return [as_int(value) or 0 for value in as_list(status.get(key))]
    return []


def is_current(jobset: Mapping[str, Any], job: ChildJob) -> bool:
    """Whether *job* belongs to the JobSet's current run (``getChildJobs``'s "previous" test).

    A Job whose ``restart-attempt`` label is below ``status.restarts`` (or, with individual Job
    restarts, whose ``job-restart-attempt`` is below its index's count) is being replaced.
    """
    labels = as_mapping(as_mapping(job.job.get("metadata")).get("labels"))
    attempt = as_int(labels.get(names.LABEL_RESTART_ATTEMPT))
    if attempt is None or attempt < (as_int(as_mapping(jobset.get("status")).get("restarts")) or 0):
        return False
    individual = as_int(labels.get(_JOB_RESTART_ATTEMPT))
    if individual is None or job.job_index is None:
        return True
    targets = _job_restarts(jobset, job.replicated_job, "jobRestarts")
    return not (0 <= job.job_index < len(targets) and individual < targets[job.job_index])


def _replicated_jobs(spec: Mapping[str, Any]) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    for item in as_list(spec.get("replicatedJobs")):
        rjob = as_mapping(item)
        name = as_str(rjob.get("name"))
        if name:
            replicas = as_int(rjob.get("replicas"))
            found.append((name, 1 if replicas is None else replicas))
    return found


def jobs_matching_success_policy(spec: Mapping[str, Any], jobs: Sequence[ChildJob]) -> int:
    """How many of *jobs* belong to a replicated Job the success policy targets (all, if none)."""
    targets = [
        str(name) for name in as_list(as_mapping(spec.get("successPolicy")).get("targetReplicatedJobs"))
    ]
    return sum(1 for job in jobs if not targets or job.replicated_job in targets)


def jobs_expected_to_succeed(spec: Mapping[str, Any]) -> int:
    """Complete Jobs the success policy needs: ``Any`` one; ``All`` every targeted replica."""
    policy = as_mapping(spec.get("successPolicy"))
    operator = as_str(policy.get("operator")) or "All"  # the webhook's default
    if operator == "Any":
        return 1
    if operator != "All":
        return 0
    targets = [str(name) for name in as_list(policy.get("targetReplicatedJobs"))]
    return sum(count for name, count in _replicated_jobs(spec) if not targets or name in targets)


def success_policy_met(spec: Mapping[str, Any], jobs: Sequence[ChildJob]) -> bool:
    """``executeSuccessPolicy``: once a Job is Complete, enough targeted ones complete the set."""
    successful = [job for job in jobs if job.finished == names.JOB_COMPLETE]
    if not successful:
        return False
    return jobs_matching_success_policy(spec, successful) >= jobs_expected_to_succeed(spec)


def _matches_message(patterns: Sequence[Any], message: str) -> bool:
    for pattern in patterns:
        try:
            if re.search(str(pattern), message):
                return True
        except re.error:
            continue  # the controller logs an invalid pattern and goes on
    return False


def rule_applies(rule: Mapping[str, Any], job: ChildJob) -> bool:
    """``ruleIsApplicable``: the Job's failure reason, message and replicated Job all match."""
    reasons = as_list(rule.get("onJobFailureReasons"))
    if reasons and job.failure_reason not in reasons:
        return False
    patterns = as_list(rule.get("onJobFailureMessagePatterns"))
    if patterns and not _matches_message(patterns, job.failure_message):
        return False
    if job.replicated_job is None:
        return False
    targets = as_list(rule.get("targetReplicatedJobs"))
    return not targets or job.replicated_job in targets


def _earliest(jobs: Sequence[ChildJob]) -> ChildJob | None:
    """The Job that failed first (a failure without a time counts as the latest); None if empty."""
    earliest: ChildJob | None = None
    for job in jobs:
        if earliest is None or (
            job.failed_at is not None and (earliest.failed_at is None or job.failed_at < earliest.failed_at)
        ):
            earliest = job
    return earliest


def restarts_counted(jobset: Mapping[str, Any]) -> int:
    """Restarts that count towards ``maxRestarts``: of the set and of single Jobs."""
    status = as_mapping(jobset.get("status"))
    total = as_int(status.get("restartsCountTowardsMax")) or 0
    for item in as_list(status.get("replicatedJobsStatus")):
        total += sum(
            as_int(value) or 0 for value in as_list(as_mapping(item).get("jobRestartsCountTowardsMax"))
        )
    return total


def first_matching_rule(
    rules: Sequence[Any], failed: Sequence[ChildJob]
) -> tuple[Mapping[str, Any], ChildJob] | None:
    """``findFirstFailedPolicyRuleAndJob``: the first rule any failed Job matches, and the Job
    that failed earliest among those it matches."""
    for item in rules:
        rule = as_mapping(item)
        matched = _earliest(
            [job for job in failed if job.finished == names.JOB_FAILED and rule_applies(rule, job)]
        )
        if matched is not None:
            return rule, matched
    return None


def failure_outcome(jobset: Mapping[str, Any], failed: Sequence[ChildJob]) -> FailureOutcome | None:
    """``executeFailurePolicy`` for the current run's failed Jobs; None when no Job has failed."""
    with_condition = [job for job in failed if job.finished == names.JOB_FAILED]
    if not with_condition:
        return None
    spec = as_mapping(jobset.get("spec"))
    first = _earliest(with_condition) or with_condition[0]
    if spec.get("failurePolicy") is None:
        return FailureOutcome(FAIL_JOBSET, True, first, None)
    policy = as_mapping(spec.get("failurePolicy"))
    matched = first_matching_rule(as_list(policy.get("rules")), with_condition)
    if matched is None:
        action, job, rule_name = _DEFAULT_ACTION, first, None
    else:
        action, job, rule_name = str(matched[0].get("action")), matched[1], as_str(matched[0].get("name"))
    limit = as_int(policy.get("maxRestarts")) or 0
    if action in (RESTART_JOBSET, RESTART_JOB):
        fails = restarts_counted(jobset) >= limit
    else:
        fails = action not in (RESTART_JOBSET_IGNORE_MAX, RESTART_JOB_IGNORE_MAX)
    return FailureOutcome(action, fails, job, rule_name)


def _catches_all(rule: Mapping[str, Any]) -> bool:
    keys = ("onJobFailureReasons", "onJobFailureMessagePatterns", "targetReplicatedJobs")
    return not any(as_list(rule.get(key)) for key in keys)


def may_restart(jobset: Mapping[str, Any]) -> bool:
    """Whether some Job failure could still make the controller restart instead of failing the set.

    Used before any Job has failed, when the failure's reason is not known yet: true when an
    action reachable in the failure policy (the rules up to the first that matches every failure,
    else also the default ``RestartJobSet``) restarts and has restarts left.
    """
    spec = as_mapping(jobset.get("spec"))
    if spec.get("failurePolicy") is None:
        return False
    policy = as_mapping(spec.get("failurePolicy"))
    actions: set[str] = set()
    for rule in as_list(policy.get("rules")):
        rule = as_mapping(rule)
        actions.add(str(rule.get("action")))
        if _catches_all(rule):
            break
    else:
        actions.add(_DEFAULT_ACTION)
    if actions & {RESTART_JOBSET_IGNORE_MAX, RESTART_JOB_IGNORE_MAX}:
        return True
    limit = as_int(policy.get("maxRestarts")) or 0
    return bool(actions & {RESTART_JOBSET, RESTART_JOB}) and restarts_counted(jobset) < limit
