"""One sync of one Job (job_controller.go ``syncJob``) as a pure function: Job + its pods in, actions out.

The pass follows upstream's order: count newly finished pods, decide whether the Job ends
(podFailurePolicy, backoffLimit, activeDeadlineSeconds, successPolicy, completions), delete
active pods of an ending Job or create/delete pods towards the wanted number, then count
terminated pods through ``uncountedTerminatedPods`` while dropping their tracking finalizers,
and only then add the terminal condition (after the interim FailureTarget/SuccessCriteriaMet,
once no pod is left terminating).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tfjob_sandbox.api import job_wire
from tfjob_sandbox.job_controller import actions as act
from tfjob_sandbox.job_controller import pod_rules as pr
from tfjob_sandbox.job_controller.backoff import next_backoff_record, remaining_backoff
from tfjob_sandbox.job_controller.failure_policy import match_pod_failure_policy
from tfjob_sandbox.job_controller.intervals import format_indexes, parse_indexes
from tfjob_sandbox.job_controller.per_index import (
    delayed_deletion_pods,
    failed_indexes,
    has_backoff_limit_per_index,
    index_backoff,
    replacement_annotations,
)
from tfjob_sandbox.job_controller.pod_template import pod_for_job
from tfjob_sandbox.job_controller.success_policy import match_success_policy

#: MaxPodCreateDeletePerSync.
MAX_POD_CHANGES_PER_SYNC = 500


@dataclass(frozen=True)
class Settings:
    """Pod-failure back-off (upstream: 10 s doubling to 10 min; the sandbox shortens it in tests)."""

    backoff_initial: float = 10.0
    backoff_cap: float = 600.0


@dataclass(frozen=True)
class Ending:
    """Why the Job ends: the interim condition (FailureTarget/SuccessCriteriaMet) and the final one."""

    success: bool
    reason: str
    message: str

    @property
    def interim_type(self) -> str:
        return job_wire.SUCCESS_CRITERIA_MET if self.success else job_wire.FAILURE_TARGET

    @property
    def final_type(self) -> str:
        return job_wire.COMPLETE if self.success else job_wire.FAILED


@dataclass
class _Pass:
    """The mutable state of one pass (syncJobCtx)."""

    job: dict[str, Any]
    pods: list[dict[str, Any]]
    now: datetime
    settings: Settings
    status: dict[str, Any]
    actions: list[act.Action] = field(default_factory=list)
    requeue: list[float] = field(default_factory=list)
    active: list[dict[str, Any]] = field(default_factory=list)
    terminating: int = 0
    ready: int = 0
    succeeded: int = 0
    failed: int = 0
    succeeded_indexes: set[int] = field(default_factory=set)
    failed_indexes: set[int] = field(default_factory=set)
    #: backoffLimitPerIndex: per index, the failed pod kept (finalizer) until it is replaced.
    delayed: dict[int, dict[str, Any]] = field(default_factory=dict)
    counted: set[str] = field(default_factory=set)
    backoff: act.BackoffRecord = act.NO_BACKOFF

    @property
    def spec(self) -> dict[str, Any]:
        return self.job.get("spec") or {}

    @property
    def stamp(self) -> str:
        return self.now.strftime("%Y-%m-%dT%H:%M:%SZ")

    @property
    def epoch(self) -> float:
        return self.now.timestamp()


def is_finished(job: dict[str, Any]) -> bool:
    return any(
        c.get("type") in (job_wire.COMPLETE, job_wire.FAILED) and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def condition(job_or_status: dict[str, Any], kind: str) -> dict[str, Any] | None:
    conditions = job_or_status.get("conditions")
    if conditions is None:
        conditions = (job_or_status.get("status") or {}).get("conditions")
    for item in conditions or []:
        if item.get("type") == kind and item.get("status") == "True":
            return dict(item)
    return None


def ensure_condition(
    status: dict[str, Any], kind: str, state: str, reason: str, message: str, stamp: str
) -> bool:
    """ensureJobConditionStatus: set or add the condition; a False condition is never added. Changed?"""
    conditions = status.setdefault("conditions", [])
    fresh = {
        "type": kind,
        "status": state,
        "lastProbeTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }
    for position, existing in enumerate(conditions):
        if existing.get("type") == kind:
            if (existing.get("status"), existing.get("reason"), existing.get("message")) == (
                state,
                reason,
                message,
            ):
                return False
            conditions[position] = fresh
            return True
    if state == "False":
        if not conditions:
            status.pop("conditions")
        return False
    conditions.append(fresh)
    return True


def sync_job(
    job: dict[str, Any],
    pods: list[dict[str, Any]],
    *,
    now: datetime,
    backoff: act.BackoffRecord = act.NO_BACKOFF,
    settings: Settings | None = None,
) -> act.Outcome:
    """Decide one sync of ``job`` given the pods it controls."""
    if is_finished(job):
        return _finished(job, pods, now)
    status = copy.deepcopy(job.get("status") or {})
    status.setdefault("uncountedTerminatedPods", {})
    run = _Pass(job=job, pods=pods, now=now, settings=settings or Settings(), status=status)
    uncounted = status["uncountedTerminatedPods"]
    counted_ok, counted_failed = set(uncounted.get("succeeded") or []), set(uncounted.get("failed") or [])
    run.active = [pod for pod in pods if pr.is_active(pod)]
    run.terminating = sum(1 for pod in pods if pr.is_terminating(pod))
    run.ready = sum(1 for pod in run.active if pr.is_ready(pod))
    run.counted = counted_ok | counted_failed
    new_ok, new_failed = _new_finished(run, run.counted)
    policy = run.spec.get("podFailurePolicy")
    run.succeeded = int(status.get("succeeded", 0)) + len(new_ok) + len(counted_ok)
    run.failed = (
        int(status.get("failed", 0))
        + sum(1 for pod in new_failed if match_pod_failure_policy(policy, pod).count_failed)
        + len(counted_failed)
    )
    suspended = bool(run.spec.get("suspend"))
    if not status.get("startTime") and not suspended:
        status["startTime"] = run.stamp
    run.backoff = next_backoff_record(backoff, new_ok, new_failed, run.epoch)
    ending = _ending_before_manage(run)
    active_count = len(run.active)
    if ending is not None:
        deleted = _delete_pods(run, run.active)
        active_count -= deleted
    else:
        manage = job["metadata"].get("deletionTimestamp") is None
        if manage:
            active_count = _manage(run)
        completions = run.spec.get("completions")
        if completions is None:
            complete = run.succeeded > 0 and active_count == 0
        else:
            complete = run.succeeded >= int(completions) and active_count == 0
        if complete:
            ending = Ending(
                True, job_wire.REASON_COMPLETIONS_REACHED, "Reached expected number of succeeded pods"
            )
        elif manage:
            _suspension(run, suspended)
    status["active"] = active_count
    status["ready"] = run.ready
    status["terminating"] = run.terminating
    _track_and_flush(run, ending)
    return act.Outcome(tuple(run.actions), min(run.requeue) if run.requeue else None, run.backoff)


def _new_finished(run: _Pass, already: set[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """getNewFinishedPods: finished pods still carrying the finalizer and not yet in uncounted."""
    completions = int(run.spec.get("completions") or 0)
    ok: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    for pod in run.pods:
        if not pr.has_finalizer(pod) or pr.uid(pod) in already:
            continue
        if pr.is_indexed(run.job) and pr.valid_index(pod, completions) is None:
            continue
        if pr.phase(pod) == pr.SUCCEEDED:
            ok.append(pod)
        elif pr.is_failed(pod, run.job):
            failed.append(pod)
    return ok, failed


def _ending_before_manage(run: _Pass) -> Ending | None:
    """The failure (or success-policy) ending decided before pods are managed, else ``None``."""
    job, spec, status = run.job, run.spec, run.status
    met = condition(status, job_wire.SUCCESS_CRITERIA_MET)
    if met is not None:
        ending: Ending | None = Ending(True, str(met.get("reason", "")), str(met.get("message", "")))
    else:
        ending = None
        target = condition(status, job_wire.FAILURE_TARGET)
        if target is not None:
            ending = Ending(False, str(target.get("reason", "")), str(target.get("message", "")))
        elif spec.get("podFailurePolicy") is not None:
            for pod in run.pods:
                if pr.is_failed(pod, job):
                    message = match_pod_failure_policy(spec["podFailurePolicy"], pod).message
                    if message is not None:
                        ending = Ending(False, job_wire.REASON_POD_FAILURE_POLICY, message)
                        break
    if ending is None:
        if run.failed > int(spec.get("backoffLimit", 6)) or _past_backoff_limit_on_failure(run):
            ending = Ending(
                False, job_wire.REASON_BACKOFF_LIMIT_EXCEEDED, "Job has reached the specified backoff limit"
            )
        else:
            left = _deadline_left(run)
            if left is not None and left <= 0:
                ending = Ending(
                    False, job_wire.REASON_DEADLINE_EXCEEDED, "Job was active longer than specified deadline"
                )
            elif left is not None:
                run.requeue.append(left)
    if pr.is_indexed(job):
        completions = int(spec.get("completions") or 0)
        run.succeeded_indexes = parse_indexes(status.get("completedIndexes"), completions) | {
            index
            for pod in run.pods
            if pr.phase(pod) == pr.SUCCEEDED
            and pr.has_finalizer(pod)
            and (index := pr.valid_index(pod, completions)) is not None
        }
        run.succeeded = len(run.succeeded_indexes)
        if has_backoff_limit_per_index(job):
            ending = _per_index_ending(run, ending, completions)
        if ending is None:
            message = match_success_policy(spec.get("successPolicy"), completions, run.succeeded_indexes)
            if message is not None:
                ending = Ending(True, job_wire.REASON_SUCCESS_POLICY, message)
    return ending


def _per_index_ending(run: _Pass, ending: Ending | None, completions: int) -> Ending | None:
    """Failed indexes end the Job past maxFailedIndexes, or once every index succeeded or failed."""
    run.failed_indexes = failed_indexes(run.job, run.pods)
    total = len(run.failed_indexes)
    max_failed = run.spec.get("maxFailedIndexes")
    if ending is None and max_failed is not None and total > int(max_failed):
        ending = Ending(
            False,
            job_wire.REASON_MAX_FAILED_INDEXES_EXCEEDED,
            "Job has exceeded the specified maximal number of failed indexes",
        )
    elif ending is None and total > 0 and total + len(run.succeeded_indexes) >= completions:
        ending = Ending(False, job_wire.REASON_FAILED_INDEXES, "Job has failed indexes")
    busy = run.succeeded_indexes | run.failed_indexes
    busy.update(index for pod in run.active if (index := pr.completion_index(pod)) is not None)
    run.delayed = delayed_deletion_pods(run.job, run.pods, busy=busy, counted=run.counted)
    return ending


def _past_backoff_limit_on_failure(run: _Pass) -> bool:
    """For restartPolicy OnFailure, container restarts of running/pending pods count as failures."""
    template_spec = (run.spec.get("template") or {}).get("spec") or {}
    if template_spec.get("restartPolicy") != "OnFailure":
        return False
    restarts = sum(pr.restart_count(pod) for pod in run.pods if pr.phase(pod) in ("Running", "Pending"))
    limit = int(run.spec.get("backoffLimit", 6))
    return restarts > 0 if limit == 0 else restarts >= limit


def _deadline_left(run: _Pass) -> float | None:
    seconds, start = run.spec.get("activeDeadlineSeconds"), run.status.get("startTime")
    if seconds is None or not start or run.spec.get("suspend"):
        return None
    started = datetime.fromisoformat(str(start).replace("Z", "+00:00")).timestamp()
    return float(seconds) - (run.epoch - started)


def _delete_pods(run: _Pass, pods: list[dict[str, Any]]) -> int:
    for pod in pods:
        run.actions.append(act.DeletePod(pod["metadata"]["name"]))
        run.terminating += 1
        if pr.is_ready(pod):
            run.ready -= 1
    return len(pods)


def _manage(run: _Pass) -> int:
    """manageJob: delete surplus (or, when suspended, all) active pods, else create missing ones."""
    spec = run.spec
    active = len(run.active)
    if spec.get("suspend"):
        return active - _delete_pods(run, sorted(run.active, key=pr.removal_order_key))
    parallelism = int(spec.get("parallelism", 1))
    completions = spec.get("completions")
    if completions is None:
        want = active if run.succeeded > 0 else parallelism
    else:
        want = max(0, min(int(completions) - run.succeeded, parallelism))
    surplus = _pods_for_removal(run, max(0, active - want))[:MAX_POD_CHANGES_PER_SYNC]
    if surplus:
        return active - _delete_pods(run, surplus)
    terminating = run.terminating if pr.only_replace_failed(run.job) else 0
    missing = want - terminating - active
    if missing <= 0:
        return active
    initial, cap = run.settings.backoff_initial, run.settings.backoff_cap
    per_index = has_backoff_limit_per_index(run.job)
    wait = 0.0 if per_index else remaining_backoff(run.backoff, run.epoch, initial=initial, cap=cap)
    if wait > 0:
        run.requeue.append(wait)
        return active
    missing = min(missing, MAX_POD_CHANGES_PER_SYNC)
    if pr.is_indexed(run.job):
        indexes: list[int | None] = list(_first_pending_indexes(run, missing))
    else:
        indexes = [None] * missing
    if per_index:
        waits = {
            i: index_backoff(run.delayed.get(i), run.epoch, initial=initial, cap=cap)
            for i in indexes
            if i is not None
        }
        indexes = [i for i in indexes if i is not None and waits[i] <= 0]
        run.requeue.extend(seconds for seconds in waits.values() if seconds > 0)
    for index in indexes:
        extra = (
            replacement_annotations(run.job, run.delayed.get(index))
            if per_index and index is not None
            else None
        )
        run.actions.append(act.CreatePod(pod_for_job(run.job, index, extra)))
    return active + len(indexes)


def _pods_for_removal(run: _Pass, at_least: int) -> list[dict[str, Any]]:
    """activePodsForRemoval: duplicated or out-of-range indexes first, then by ActivePods order."""
    remove: list[dict[str, Any]] = []
    left = list(run.active)
    if pr.is_indexed(run.job):
        completions = int(run.spec.get("completions") or 0)
        by_index: dict[int, list[dict[str, Any]]] = {}
        left = []
        for pod in run.active:
            index = pr.valid_index(pod, completions)
            if index is None:
                remove.append(pod)
            else:
                by_index.setdefault(index, []).append(pod)
        for index in sorted(by_index):
            group = sorted(by_index[index], key=pr.removal_order_key)
            remove.extend(group[:-1])
            left.append(group[-1])
    if len(remove) < at_least:
        left.sort(key=pr.removal_order_key)
        remove.extend(left[: at_least - len(remove)])
    return remove


def _first_pending_indexes(run: _Pass, count: int) -> list[int]:
    """Indexes with neither a success nor an active pod (nor, under Failed replacement, a terminating one)."""
    completions = int(run.spec.get("completions") or 0)
    busy = run.succeeded_indexes | run.failed_indexes
    busy.update(index for pod in run.active if (index := pr.completion_index(pod)) is not None)
    if pr.only_replace_failed(run.job):
        busy.update(
            index
            for pod in run.pods
            if pr.is_terminating(pod) and (index := pr.completion_index(pod)) is not None
        )
    return [index for index in range(completions) if index not in busy][:count]


def _suspension(run: _Pass, suspended: bool) -> None:
    if suspended:
        if ensure_condition(
            run.status, job_wire.SUSPENDED, "True", job_wire.REASON_JOB_SUSPENDED, "Job suspended", run.stamp
        ):
            run.actions.append(act.RecordEvent("Normal", "Suspended", "Job suspended"))
    elif ensure_condition(
        run.status, job_wire.SUSPENDED, "False", job_wire.REASON_JOB_RESUMED, "Job resumed", run.stamp
    ):
        run.actions.append(act.RecordEvent("Normal", "Resumed", "Job resumed"))
        run.status["startTime"] = run.stamp


def _track_and_flush(run: _Pass, ending: Ending | None) -> None:
    """trackJobStatusAndRemoveFinalizers + flushUncountedAndRemoveFinalizers + enactJobFinished."""
    job, status = run.job, run.status
    uncounted = status["uncountedTerminatedPods"]
    ok_uids, failed_uids = list(uncounted.get("succeeded") or []), list(uncounted.get("failed") or [])
    indexed = pr.is_indexed(job)
    completions = int(run.spec.get("completions") or 0)
    policy = run.spec.get("podFailurePolicy")
    deleting_job = job["metadata"].get("deletionTimestamp") is not None
    removals: list[dict[str, Any]] = []
    added = False  # uids newly put in uncountedTerminatedPods
    for pod in run.pods:
        if not pr.has_finalizer(pod):
            continue
        considered_failed = pr.is_failed(pod, job)
        succeeded = pr.phase(pod) == pr.SUCCEEDED
        if not (deleting_job or ending is not None or succeeded or considered_failed):
            continue
        index = pr.completion_index(pod)
        held_for_replacement = index is not None and run.delayed.get(index) is pod
        if held_for_replacement and not (deleting_job or ending is not None or succeeded):
            continue
        removals.append(pod)
        uid = pr.uid(pod)
        if succeeded and uid not in failed_uids:
            if not indexed and uid not in ok_uids:
                ok_uids.append(uid)
                added = True
        elif considered_failed or (ending is not None and not ending.success):
            in_range = not indexed or pr.valid_index(pod, completions) is not None
            if uid not in failed_uids and in_range and match_pod_failure_policy(policy, pod).count_failed:
                failed_uids.append(uid)
                added = True
    if indexed:
        status["completedIndexes"] = format_indexes(run.succeeded_indexes)
        status["succeeded"] = len(run.succeeded_indexes)
        if has_backoff_limit_per_index(job):
            status["failedIndexes"] = format_indexes(run.failed_indexes)
    if ending is not None:
        ensure_condition(status, ending.interim_type, "True", ending.reason, ending.message, run.stamp)
    uncounted["succeeded"], uncounted["failed"] = ok_uids, failed_uids
    stored = _clean(copy.deepcopy(job.get("status") or {}))
    if removals and (added or _clean(copy.deepcopy(status)) != stored):
        # Counted first, finalizers dropped second: a pod is never released before it is recorded.
        stored = _clean(copy.deepcopy(status))
        run.actions.append(act.WriteStatus(stored))
    run.actions.extend(act.RemoveFinalizer(pod["metadata"]["name"], pr.uid(pod)) for pod in removals)
    still_held = {pr.uid(pod) for pod in run.pods if pr.has_finalizer(pod)} - {
        pr.uid(pod) for pod in removals
    }
    moved_ok = [uid for uid in ok_uids if uid not in still_held]
    moved_failed = [uid for uid in failed_uids if uid not in still_held]
    if not indexed:
        status["succeeded"] = int(status.get("succeeded", 0)) + len(moved_ok)
    status["failed"] = int(status.get("failed", 0)) + len(moved_failed)
    uncounted["succeeded"] = [uid for uid in ok_uids if uid in still_held]
    uncounted["failed"] = [uid for uid in failed_uids if uid in still_held]
    if ending is not None and not uncounted["succeeded"] and not uncounted["failed"] and run.terminating <= 0:
        ensure_condition(status, ending.final_type, "True", ending.reason, ending.message, run.stamp)
        if ending.success:
            status["completionTime"] = run.stamp
            run.actions.append(act.RecordEvent("Normal", "Completed", "Job completed"))
        else:
            run.actions.append(act.RecordEvent("Warning", ending.reason, ending.message))
        ttl = run.spec.get("ttlSecondsAfterFinished")
        if ttl is not None:
            run.requeue.append(float(ttl))
    final = _clean(status)
    if final != stored:
        run.actions.append(act.WriteStatus(final))


def _clean(status: dict[str, Any]) -> dict[str, Any]:
    """Drop empty lists from uncountedTerminatedPods, as the API's omitempty does."""
    uncounted = status.get("uncountedTerminatedPods")
    if isinstance(uncounted, dict):
        for key in ("succeeded", "failed"):
            if not uncounted.get(key):
                uncounted.pop(key, None)
    return status


def _finished(job: dict[str, Any], pods: list[dict[str, Any]], now: datetime) -> act.Outcome:
    """A finished Job: release leftover finalizers; delete it once ``ttlSecondsAfterFinished`` has passed."""
    actions: list[act.Action] = [
        act.RemoveFinalizer(pod["metadata"]["name"], pr.uid(pod)) for pod in pods if pr.has_finalizer(pod)
    ]
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    if ttl is None or job["metadata"].get("deletionTimestamp"):
        return act.Outcome(tuple(actions))
    finished = next(
        (
            c
            for c in (job.get("status") or {}).get("conditions") or []
            if c.get("type") in (job_wire.COMPLETE, job_wire.FAILED) and c.get("status") == "True"
        ),
        None,
    )
    stamp = (finished or {}).get("lastTransitionTime")
    if not stamp:
        return act.Outcome(tuple(actions))
    expires = datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp() + float(ttl)
    left = expires - now.timestamp()
    if left <= 0:
        return act.Outcome((*actions, act.DeleteJob()))
    return act.Outcome(tuple(actions), left)
