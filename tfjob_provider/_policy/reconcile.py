"""The training operator's reconcile pass (R4-R8) replayed on a snapshot of the pods, plus the
failures the provider ends where the operator would wait (:class:`PassOutcome`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from tfjob_provider._policy.observation import Observation, PodEntry, TypeObservation
from tfjob_provider._policy.pods import (
    Cause,
    classify_deleted_pod,
    classify_failed_pod,
    last_exit_code,
    operator_exit_code,
    restart_causes,
    tensorflow_container,
)
from tfjob_provider._policy.readers import as_mapping, parse_time
from tfjob_provider._policy.rules import Rules
from tfjob_provider._policy.tfjob import RESTART_ALWAYS, RESTART_EXIT_CODE, RESTART_ON_FAILURE, JobView
from tfjob_provider._policy.verdicts import (
    MAX_CULPRITS,
    REASON_ALL_WORKERS_SUCCEEDED,
    REASON_CHIEF_SUCCEEDED,
    REASON_WORKER0_SUCCEEDED,
    REASON_WORKER_FAILED,
)

WORKER = "Worker"


@dataclass(frozen=True)
class Success:
    """Which rule made the job succeed, and the pods that satisfied it."""

    reason: str
    pods: tuple[PodEntry, ...]
    clause: str


@dataclass
class PassOutcome:
    """What one replayed reconcile pass concluded."""

    failures: list[Cause] = field(default_factory=list)
    success: Success | None = None
    #: Pods the operator deletes and recreates in this pass (R4), with why they failed (at most
    #: MAX_CULPRITS of them for OnFailure/Always, which restart whatever the cause) ...
    restarts: list[Cause] = field(default_factory=list)
    #: ... and how many more were restarted without being classified.
    restarts_not_shown: int = 0
    #: Failures hidden by a Restarting condition (R7 step 1) that the operator will recover from.
    masked: list[Cause] = field(default_factory=list)
    #: "Running", "Restarting" or None: the progress condition after this pass (R8).
    progress: str | None = None


def classify(entry: PodEntry, rules: Rules) -> Cause:
    if entry.phase != "Failed" and entry.deleting:
        return classify_deleted_pod(
            entry.status, replica_type=entry.replica_type, index=entry.index, name=entry.name
        )
    return classify_failed_pod(
        entry.status, replica_type=entry.replica_type, index=entry.index, name=entry.name, rules=rules
    )


def finished_at(entry: PodEntry) -> datetime | None:
    tensorflow = tensorflow_container(entry.status)
    if tensorflow is None:
        return None
    terminated = as_mapping(as_mapping(tensorflow.get("state")).get("terminated"))
    return parse_time(terminated.get("finishedAt"))


def _chief_rule(job: JobView, seen: Observation) -> Success | None:
    if job.chief_type is None:
        return None
    chief = seen.types[job.chief_type]
    if chief.spec.replicas - chief.succeeded != 0:
        return None
    pods = tuple(chief.succeeded_pods)
    who = pods[0].name if len(pods) == 1 else f"all {chief.spec.replicas} {job.chief_type} replicas"
    return Success(REASON_CHIEF_SUCCEEDED, pods, f"{job.chief_type} {who} completed")


def _worker0_rule(seen: Observation) -> Success | None:
    workers = seen.types.get(WORKER)
    if workers is None or not workers.worker0_completed:
        return None
    pods = tuple(entry for entry in workers.succeeded_pods if entry.index == 0)
    return Success(
        REASON_WORKER0_SUCCEEDED, pods, f"worker-0 (pod {pods[0].name}) completed with exit code 0"
    )


def _all_workers_rule(seen: Observation) -> Success | None:
    workers = seen.types.get(WORKER)
    if workers is None or workers.spec.replicas - workers.succeeded != 0:
        return None
    return Success(
        REASON_ALL_WORKERS_SUCCEEDED,
        tuple(workers.succeeded_pods),
        f"all {workers.spec.replicas} Worker replicas completed",
    )


def success_of(job: JobView, seen: Observation, policy: str | None) -> Success | None:
    """The success rule in force (R5/R6, or the ``Rules.success_policy`` override) applied to the pods."""
    has_workers = WORKER in seen.types
    if policy is None:
        if job.chief_type is not None:
            return _chief_rule(job, seen)
        if not job.all_workers_policy:
            return _worker0_rule(seen) or _all_workers_rule(seen)
        return _all_workers_rule(seen)
    if policy == "chief":
        return _chief_rule(job, seen) if job.chief_type is not None else _worker0_rule(seen)
    if policy == "worker0":
        return _worker0_rule(seen) if has_workers else _chief_rule(job, seen)
    return _all_workers_rule(seen) if has_workers else _chief_rule(job, seen)


def workers_decide(job: JobView, policy: str | None) -> bool:
    """Whether the Worker type decides success under ``policy`` (rather than the Chief/Master)."""
    if policy in ("worker0", "all_workers"):
        return True
    return job.chief_type is None


def _needs_all_workers(job: JobView, policy: str | None) -> bool:
    return policy == "all_workers" or (policy is None and job.all_workers_policy)


def _operator_restarts(entry: PodEntry, cause: Cause, policy: str) -> bool | None:
    """R4 for a pod in phase Failed: True = restart, False = fail the job, None = left to R7.

    Under ExitCode the provider uses its own retry class (which honours ``Rules`` and knows an
    OOM kill or a command that cannot start) where the operator only compares the code with 128;
    a class the operator would restart but the rules call permanent therefore fails the job.
    """
    if policy in (RESTART_ON_FAILURE, RESTART_ALWAYS):
        return True
    if policy == RESTART_EXIT_CODE:
        return cause.retryable and operator_exit_code(entry.status) >= 128
    return None


def replay_pass(job: JobView, seen: Observation, rules: Rules) -> PassOutcome:
    """Replay one reconcile of the operator on ``seen``, plus the provider's own failure rules."""
    outcome = PassOutcome(progress=job.progress_condition)
    direct: list[Cause] = []  # R4: ExitCode with a permanent code fails the job at once
    left_to_r7: dict[str, list[Cause]] = {}
    never_failed: dict[str, list[Cause]] = {}  # phase Failed under Never: nobody will restart them
    for name, observed in seen.types.items():
        restarted_by_kubernetes = observed.spec.restart_policy in (RESTART_ON_FAILURE, RESTART_ALWAYS)
        for entry in observed.failed_pods:
            if (
                restarted_by_kubernetes
                and entry.phase == "Failed"
                and len(outcome.restarts) >= MAX_CULPRITS
                and not rules.fail_on_worker_failure
            ):
                # Restarted whatever the cause; beyond the causes a verdict can show, classifying
                # more would only cost time (a mass eviction fails thousands of pods at once).
                outcome.restarts_not_shown += 1
                continue
            cause = classify(entry, rules)
            if entry.phase != "Failed":
                left_to_r7.setdefault(name, []).append(cause)  # being deleted: counted failed, not restarted
                continue
            restart = _operator_restarts(entry, cause, observed.spec.restart_policy)
            if restart is True:
                outcome.restarts.append(cause)
            elif restart is False:
                direct.append(cause)
            else:
                left_to_r7.setdefault(name, []).append(cause)
                never_failed.setdefault(name, []).append(cause)
    if outcome.restarts:
        outcome.progress = "Restarting"

    # R5-R7 in the operator's order; a Restarting condition present at the start of the pass
    # (or set by R4 just now) masks every failure (R7 step 1).
    restarting_at_start = job.has_restarting_condition or bool(outcome.restarts)
    r7_failures: list[Cause] = []
    ignored: list[Cause] = []  # dynamic-worker failures the operator ignores (R7 step 2)
    for name, observed in seen.types.items():
        if _decides_running(job, name) and observed.active > 0:
            outcome.progress = "Running"
        if observed.failed == 0:
            continue
        causes = left_to_r7.get(name, [])
        if restarting_at_start:
            outcome.progress = "Restarting"
            outcome.masked.extend(causes)
        elif job.dynamic_workers and name == WORKER:
            ignored.extend(causes)
        else:
            r7_failures.extend(causes)

    provider = _provider_failures(job, seen, rules, outcome, never_failed, ignored)
    outcome.failures = _unique(direct + r7_failures + provider)
    outcome.success = success_of(job, seen, rules.success_policy)
    return outcome


def _decides_running(job: JobView, name: str) -> bool:
    """R5/R6: only the Chief/Master (or, without one, the Worker type) sets Running."""
    if job.chief_type is not None:
        return name == job.chief_type
    return name == WORKER


def _provider_failures(
    job: JobView,
    seen: Observation,
    rules: Rules,
    outcome: PassOutcome,
    never_failed: dict[str, list[Cause]],
    ignored: list[Cause],
) -> list[Cause]:
    """Failures the operator would not act on, but the provider does (documented departures)."""
    failures: list[Cause] = []
    never_pods = {cause.pod for causes in never_failed.values() for cause in causes}
    # A Restarting condition must not hide a Never replica's failure: nobody will restart it.
    for cause in outcome.masked:
        if cause.pod in never_pods and not (job.dynamic_workers and cause.replica_type == WORKER):
            failures.append(cause)
    # A dynamic worker whose failure makes success impossible (worker-0, or any with AllWorkers).
    if job.dynamic_workers and workers_decide(job, rules.success_policy):
        all_needed = _needs_all_workers(job, rules.success_policy)
        dead_workers = [
            c for c in ignored + outcome.masked if c.pod in never_pods and c.replica_type == WORKER
        ]
        failures.extend(c for c in dead_workers if all_needed or c.index == 0)
    if rules.fail_on_worker_failure:
        refused = outcome.restarts + outcome.masked + ignored + _in_place_restarts(seen, rules)
        failures.extend(_refused(cause) for cause in refused)
    return failures


def _in_place_restarts(seen: Observation, rules: Rules) -> list[Cause]:
    """Containers the kubelet restarted in place after a non-zero exit (invisible to the operator)."""
    causes: list[Cause] = []
    for observed in seen.types.values():
        for entry in observed.restarted_pods:
            if last_exit_code(entry.status) == 0:
                continue  # Always restarts even a clean exit; that is not a failure
            causes.extend(
                restart_causes(
                    entry.status,
                    replica_type=entry.replica_type,
                    index=entry.index,
                    name=entry.name,
                    rules=rules,
                    tensorflow_only=True,
                )
            )
    return causes


def _refused(cause: Cause) -> Cause:
    return Cause(
        cause.pod,
        cause.replica_type,
        cause.index,
        REASON_WORKER_FAILED,
        cause.retryable,
        f"{cause.description}, and Rules.fail_on_worker_failure does not wait for a restart",
        cause.finished_at,
    )


def _unique(causes: list[Cause]) -> list[Cause]:
    """One cause per pod (the first found wins), in the operator's replica type order, then by index."""
    chosen: dict[str, Cause] = {}
    for cause in causes:
        chosen.setdefault(cause.pod, cause)
    order = {name: position for position, name in enumerate(("Chief", "Evaluator", "Master", "PS", "Worker"))}
    return sorted(chosen.values(), key=lambda cause: (order.get(cause.replica_type, 99), cause.index))


def type_summary(observed: TypeObservation) -> str:
    return f"{observed.spec.type} {observed.active}/{observed.spec.replicas} active"
