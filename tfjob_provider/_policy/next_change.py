"""The instant at which the clock alone could change a verdict (:func:`next_change`), or None;
it follows ``decide``'s steps (docs/concepts/timers.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

from tfjob_provider._policy.observation import Observation
from tfjob_provider._policy.pods import IMAGE_PULL_REASONS, image_pull_is_permanent
from tfjob_provider._policy.readers import as_list, as_mapping, as_str, parse_time
from tfjob_provider._policy.reconcile import workers_decide
from tfjob_provider._policy.rules import Rules
from tfjob_provider._policy.tfjob import JobView
from tfjob_provider._policy.verdicts import Verdict


def next_change(
    job: JobView, seen: Observation, rules: Rules, *, now: datetime, verdict: Verdict
) -> datetime | None:
    """The earliest instant after ``now`` at which ``decide`` on the same inputs differs from ``verdict``.

    ``verdict`` is ``decide``'s answer at ``now`` for ``job``/``seen``/``rules``.  None: never
    (a terminal verdict, or no time-based rule armed).
    """
    if verdict.terminal or not _rules_apply(job, seen):
        return None
    due = [moment for moment in _candidates(job, seen, rules) if moment > now]
    return min(due) if due else None


def _rules_apply(job: JobView, seen: Observation) -> bool:
    """Whether ``decide`` gets to its time-based steps (4-6) at all for this job."""
    if job.managed_externally or job.failed_condition is not None or job.succeeded_condition is not None:
        return False
    if job.suspend:
        return False
    return job.reconciled or seen.job_pods > 0


def _candidates(job: JobView, seen: Observation, rules: Rules) -> Iterator[datetime]:
    if job.deadline_at is not None:
        yield job.deadline_at  # R10
    pending_timeout = rules.pending_timeout
    pull_timeout = rules.image_pull_timeout if rules.image_pull_fail_fast else None
    if pending_timeout is None and pull_timeout is None:
        return
    for observed in seen.types.values():
        for entry in observed.pending_pods:
            created = parse_time(as_mapping(entry.pod.get("metadata")).get("creationTimestamp"))
            if created is None:
                continue  # both rules measure from creationTimestamp: without it neither fires
            if pull_timeout is not None and _waits_on_transient_pull(entry.status):
                yield created + timedelta(seconds=pull_timeout)
            if pending_timeout is not None:
                yield created + timedelta(seconds=pending_timeout)
    if pending_timeout is not None:
        missing_since = _never_created_clock(job, seen, rules)
        if missing_since is not None:
            yield missing_since + timedelta(seconds=pending_timeout)


def _waits_on_transient_pull(status: Mapping[str, Any]) -> bool:
    """A container waits on an image pull error that may clear by itself (its limit is time)."""
    for key in ("initContainerStatuses", "containerStatuses"):
        for item in as_list(status.get(key)):
            waiting = as_mapping(as_mapping(as_mapping(item).get("state")).get("waiting"))
            reason = as_str(waiting.get("reason"))
            if reason in IMAGE_PULL_REASONS and not image_pull_is_permanent(
                reason, as_str(waiting.get("message"))
            ):
                return True
    return False


def _never_created_clock(job: JobView, seen: Observation, rules: Rules) -> datetime | None:
    """When the "pods never created" clock started, if a replica has no pod and the rule is armed."""
    if job.ever_ran or job.suspended_condition or job.created_at is None:
        return None
    occupied = seen.occupied_slots
    ignore_workers = job.dynamic_workers and not workers_decide(job, rules.success_policy)
    for replica_type, spec in job.specs.items():
        if replica_type == "Worker" and ignore_workers:
            continue
        label = replica_type.lower()
        if any((label, str(index)) not in occupied for index in range(spec.replicas)):
            return job.start_time or job.created_at
    return None
