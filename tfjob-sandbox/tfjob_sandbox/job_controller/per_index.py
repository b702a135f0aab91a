"""``backoffLimitPerIndex`` (indexed_job_utils.go): failed indexes, per-index failure counts and back-off."""

from __future__ import annotations

from typing import Any

from tfjob_sandbox.api import job_wire
from tfjob_sandbox.job_controller import pod_rules as pr
from tfjob_sandbox.job_controller.actions import BackoffRecord
from tfjob_sandbox.job_controller.backoff import remaining_backoff
from tfjob_sandbox.job_controller.failure_policy import FAIL_INDEX, match_pod_failure_policy
from tfjob_sandbox.job_controller.intervals import parse_indexes

Pod = dict[str, Any]


def has_backoff_limit_per_index(job: dict[str, Any]) -> bool:
    return (job.get("spec") or {}).get("backoffLimitPerIndex") is not None


def _count(pod: Pod, key: str) -> int:
    text = str((pod["metadata"].get("annotations") or {}).get(key, "0"))
    return int(text) if text.isdigit() else 0


def failure_count(pod: Pod) -> int:
    return _count(pod, job_wire.INDEX_FAILURE_COUNT)


def absolute_failure_count(pod: Pod) -> int:
    return failure_count(pod) + _count(pod, job_wire.INDEX_IGNORED_FAILURE_COUNT)


def is_index_failed(job: dict[str, Any], pod: Pod) -> bool:
    """The pod's failure fails its index: a FailIndex rule, or a counted failure past the per-index limit."""
    if not pr.is_failed(pod, job):
        return False
    policy = (job.get("spec") or {}).get("podFailurePolicy")
    match = match_pod_failure_policy(policy, pod)
    if match.action == FAIL_INDEX:
        return True
    return match.count_failed and failure_count(pod) >= int(job["spec"]["backoffLimitPerIndex"])


def failed_indexes(job: dict[str, Any], pods: list[Pod]) -> set[int]:
    """``status.failedIndexes`` plus the indexes of not-yet-counted pods that failed them."""
    status = job.get("status") or {}
    completions = int((job.get("spec") or {}).get("completions") or 0)
    result = parse_indexes(status.get("failedIndexes"), completions)
    for pod in pods:
        index = pr.valid_index(pod, completions)
        if index is not None and pr.has_finalizer(pod) and is_index_failed(job, pod):
            result.add(index)
    return result


def delayed_deletion_pods(
    job: dict[str, Any], pods: list[Pod], *, busy: set[int], counted: set[str]
) -> dict[int, Pod]:
    """Per index, the latest failed pod whose finalizer stays until its replacement exists (it carries
    the index's failure counts); indexes in ``busy`` (succeeded, failed or active) need none."""
    completions = int((job.get("spec") or {}).get("completions") or 0)
    chosen: dict[int, Pod] = {}
    for pod in pods:
        if not pr.has_finalizer(pod) or pr.uid(pod) in counted or not pr.is_failed(pod, job):
            continue
        index = pr.valid_index(pod, completions)
        if index is None or index in busy:
            continue
        previous = chosen.get(index)
        if previous is None or (
            absolute_failure_count(previous) <= absolute_failure_count(pod)
            and pr.finished_time(pod) >= pr.finished_time(previous)
        ):
            chosen[index] = pod
    return chosen


def replacement_annotations(job: dict[str, Any], replaced: Pod | None) -> dict[str, str]:
    """The failure counts a new pod of an index starts with (getNewIndexFailureCounts)."""
    failures, ignored = 0, 0
    if replaced is not None:
        failures, ignored = failure_count(replaced), _count(replaced, job_wire.INDEX_IGNORED_FAILURE_COUNT)
        if match_pod_failure_policy((job.get("spec") or {}).get("podFailurePolicy"), replaced).count_failed:
            failures += 1
        else:
            ignored += 1
    annotations = {job_wire.INDEX_FAILURE_COUNT: str(failures)}
    if ignored:
        annotations[job_wire.INDEX_IGNORED_FAILURE_COUNT] = str(ignored)
    return annotations


def index_backoff(replaced: Pod | None, now: float, *, initial: float, cap: float) -> float:
    """Seconds before an index whose last pod failed may get a new one (per-index back-off)."""
    if replaced is None:
        return 0.0
    record = BackoffRecord(absolute_failure_count(replaced) + 1, pr.finished_time(replaced))
    return remaining_backoff(record, now, initial=initial, cap=cap)
