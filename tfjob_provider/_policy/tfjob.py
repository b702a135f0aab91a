""":func:`read_tfjob`: a TFJob as the operator sees it, its in-memory defaults applied (:class:`JobView`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from tfjob_provider._policy.readers import as_count, as_int, as_list, as_mapping, as_str, is_true, parse_time
from tfjob_provider.constants import CHIEF_TYPES, MANAGED_BY_TRAINING_OPERATOR, REPLICA_TYPES

RESTART_NEVER: Final = "Never"
RESTART_ON_FAILURE: Final = "OnFailure"
RESTART_ALWAYS: Final = "Always"
RESTART_EXIT_CODE: Final = "ExitCode"
#: Policies whose replicas the operator restarts, and whose restarts backoffLimit counts (R9a).
RESTARTING_POLICIES: Final = frozenset({RESTART_ON_FAILURE, RESTART_ALWAYS, RESTART_EXIT_CODE})
SUCCESS_POLICY_ALL_WORKERS: Final = "AllWorkers"

#: Lower-case spelling (the pod label value) → canonical replica type.
CANONICAL_TYPES: Final[Mapping[str, str]] = {name.lower(): name for name in REPLICA_TYPES}

# Substrings of the operator's Failed messages for its two job-level failure paths (R9, R10);
# the reason is TFJobFailed for every path, so the message is the only way to tell them apart.
_BACKOFF_MESSAGE: Final = "backoff limit"
_DEADLINE_MESSAGE: Final = "longer than specified deadline"


#: Conditions the operator writes once a job's replicas ran (kept, with status False, afterwards).
_PAST_STARTUP_CONDITIONS: Final = frozenset({"Running", "Restarting"})


@dataclass(frozen=True)
class ReplicaSpec:
    """One replica type of the spec, after the operator's defaults."""

    type: str
    replicas: int
    restart_policy: str


@dataclass(frozen=True)
class JobView:
    """The TFJob as the operator's reconcile loop sees it (defaults applied)."""

    name: str | None
    namespace: str | None
    uid: str | None
    #: Canonical types present in the spec, in the operator's walk order
    #: (Chief, Evaluator, Master, PS, Worker).
    specs: Mapping[str, ReplicaSpec]
    #: Replica types with other names (pod label value → spec): ignored by R5-R7, seen by R9.
    other_specs: Mapping[str, ReplicaSpec]
    chief_type: str | None
    all_workers_policy: bool
    dynamic_workers: bool
    backoff_limit: int | None
    active_deadline: int | None
    suspend: bool
    managed_by: str | None
    #: ``metadata.creationTimestamp``: the clock of "pods never created" (``Rules.pending_timeout``).
    created_at: datetime | None
    # status
    start_time: datetime | None
    reconciled: bool
    failed_condition: Mapping[str, Any] | None
    succeeded_condition: Mapping[str, Any] | None
    #: The latest of Running/Restarting that is True (the operator keeps them exclusive), or None.
    progress_condition: str | None
    restarting_message: str | None
    has_restarting_condition: bool
    suspended_condition: bool
    #: Sum of ``status.replicaStatuses[*].failed`` as last written (R9b compares against it).
    recorded_failed: int
    recorded_counts: Mapping[str, tuple[int, int, int]]
    #: A Running or Restarting condition in any status: the job got past creating its pods
    #: once, so a pod missing now is a restart in progress, not a refusal.
    ever_ran: bool

    @property
    def display_name(self) -> str:
        if self.namespace and self.name:
            return f"{self.namespace}/{self.name}"
        return self.name or "(unnamed)"

    def pod_name(self, replica_type: str, index: int) -> str:
        """The operator's name for a replica's pod, ``<job>-<type>-<index>``."""
        return f"{self.name or '?'}-{replica_type.lower()}-{index}"

    @property
    def managed_externally(self) -> bool:
        """``runPolicy.managedBy`` names another controller: the operator ignores the job."""
        return bool(self.managed_by) and self.managed_by != MANAGED_BY_TRAINING_OPERATOR

    @property
    def total_replicas(self) -> int:
        return sum(spec.replicas for spec in self.specs.values()) + sum(
            spec.replicas for spec in self.other_specs.values()
        )

    @property
    def deadline_at(self) -> datetime | None:
        """When R10 fails the job, or None when it cannot (no deadline, no startTime yet).

        A job that was resumed but not yet reconciled still carries its old startTime, which the
        operator is about to reset (R13): no deadline can be past for it yet.
        """
        if self.active_deadline is None or self.start_time is None:
            return None
        if self.suspended_condition and not self.suspend:
            return None
        return self.start_time + timedelta(seconds=self.active_deadline)

    @property
    def backoff_failure(self) -> bool:
        return self.failed_condition is not None and _BACKOFF_MESSAGE in _message(self.failed_condition)

    @property
    def deadline_failure(self) -> bool:
        return self.failed_condition is not None and _DEADLINE_MESSAGE in _message(self.failed_condition)


def _message(condition: Mapping[str, Any]) -> str:
    return as_str(condition.get("message")) or ""


def _replica_specs(raw: object) -> tuple[dict[str, ReplicaSpec], dict[str, ReplicaSpec]]:
    """The operator's defaulter over ``spec.tfReplicaSpecs``: re-cased keys, replicas 1, Never.

    When both a canonical key and a case variant are present the operator keeps whichever its
    map iteration meets last; here the exactly-spelled key wins, so the result is deterministic.
    """
    known: dict[str, ReplicaSpec] = {}
    exact: set[str] = set()
    other: dict[str, ReplicaSpec] = {}
    for key, value in as_mapping(raw).items():
        if not isinstance(key, str) or not isinstance(value, Mapping):
            continue
        replicas = as_int(value.get("replicas"))
        policy = as_str(value.get("restartPolicy")) or RESTART_NEVER
        canonical = CANONICAL_TYPES.get(key.lower())
        if canonical is None:
            other[key.lower()] = ReplicaSpec(key, 1 if replicas is None else replicas, policy)
            continue
        if canonical in exact:
            continue
        known[canonical] = ReplicaSpec(canonical, 1 if replicas is None else replicas, policy)
        if key == canonical:
            exact.add(canonical)
    ordered: dict[str, ReplicaSpec] = {name: known[name] for name in REPLICA_TYPES if name in known}
    return ordered, other


def read_tfjob(tfjob: object) -> JobView:
    """Read a TFJob (any JSON-ish value) into a :class:`JobView`; never raises."""
    job = as_mapping(tfjob)
    metadata = as_mapping(job.get("metadata"))
    spec = as_mapping(job.get("spec"))
    run_policy = as_mapping(spec.get("runPolicy"))
    status = as_mapping(job.get("status"))

    specs, other_specs = _replica_specs(spec.get("tfReplicaSpecs"))
    chief_type = next((name for name in CHIEF_TYPES if name in specs), None)

    failed: Mapping[str, Any] | None = None
    succeeded: Mapping[str, Any] | None = None
    progress: str | None = None
    restarting_message: str | None = None
    has_restarting = False
    suspended = False
    ever_ran = False
    conditions = as_list(status.get("conditions"))
    for item in conditions:
        condition = as_mapping(item)
        kind = condition.get("type")
        if kind in _PAST_STARTUP_CONDITIONS:
            ever_ran = True
        if kind == "Restarting":
            # R7 looks for a Restarting entry whatever its status; the operator only writes True.
            has_restarting = True
            restarting_message = as_str(condition.get("message"))
        if not is_true(condition.get("status")):
            continue
        if kind == "Failed":
            failed = condition
        elif kind == "Succeeded":
            succeeded = condition
        elif kind in ("Running", "Restarting"):
            progress = kind
        elif kind == "Suspended":
            suspended = True

    recorded: dict[str, tuple[int, int, int]] = {}
    recorded_failed = 0
    for key, value in as_mapping(status.get("replicaStatuses")).items():
        counts = as_mapping(value)
        failed_count = as_count(counts.get("failed"))
        recorded_failed += failed_count
        if isinstance(key, str) and key in specs:
            recorded[key] = (as_count(counts.get("active")), as_count(counts.get("succeeded")), failed_count)

    start_time = parse_time(status.get("startTime"))
    return JobView(
        name=as_str(metadata.get("name")),
        namespace=as_str(metadata.get("namespace")),
        uid=as_str(metadata.get("uid")),
        specs=specs,
        other_specs=other_specs,
        chief_type=chief_type,
        all_workers_policy=spec.get("successPolicy") == SUCCESS_POLICY_ALL_WORKERS,
        dynamic_workers=is_true(spec.get("enableDynamicWorker")),
        backoff_limit=as_int(run_policy.get("backoffLimit")),
        active_deadline=as_int(run_policy.get("activeDeadlineSeconds")),
        suspend=is_true(run_policy.get("suspend")),
        managed_by=as_str(run_policy.get("managedBy")),
        created_at=parse_time(metadata.get("creationTimestamp")),
        start_time=start_time,
        reconciled=bool(conditions) or start_time is not None,
        failed_condition=failed,
        succeeded_condition=succeeded,
        progress_condition=progress,
        restarting_message=restarting_message,
        has_restarting_condition=has_restarting,
        suspended_condition=suspended,
        recorded_failed=recorded_failed,
        recorded_counts=recorded,
        ever_ran=ever_ran,
    )
