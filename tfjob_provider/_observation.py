"""One pass over a TFJob's pods, counting them exactly as the training operator counts them.

The operator recounts from zero on every reconcile (R2): only pods labelled for this job by
the ``tfjob-controller`` and owned by it, sorted into ``<type>/<index>`` slots, a slot holding
two pods skipped, a Running pod being deleted counted as failed, Pending pods not counted at all.
Its backoffLimit check (R9) counts differently again — every claimed pod, restart counts of
Running pods only.  Doing all of this in one loop, with no copies of the pods, is what keeps
:func:`~tfjob_provider.policy.decide` under a few milliseconds for a 2,000-pod job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tfjob_provider._pods import operator_exit_code, restart_total
from tfjob_provider._readers import as_int, as_list, as_mapping
from tfjob_provider._tfjob import RESTARTING_POLICIES, JobView, ReplicaSpec
from tfjob_provider.constants import (
    LABEL_JOB_NAME,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
)
from tfjob_provider.constants import OPERATOR_NAME as TFJOB_CONTROLLER

PHASE_PENDING = "Pending"
PHASE_RUNNING = "Running"
PHASE_SUCCEEDED = "Succeeded"
PHASE_FAILED = "Failed"


@dataclass(slots=True)
class PodEntry:
    """A pod that sits alone in its replica slot (the only pods the operator acts on)."""

    replica_type: str
    index: int
    name: str
    pod: Mapping[str, Any]
    status: Mapping[str, Any]
    phase: str
    deleting: bool


@dataclass(slots=True)
class TypeObservation:
    """What one replica type's pods show."""

    spec: ReplicaSpec
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    pending: int = 0
    restarts: int = 0
    #: Pods counted failed: phase Failed, or Running with a deletionTimestamp.
    failed_pods: list[PodEntry] = field(default_factory=list)
    succeeded_pods: list[PodEntry] = field(default_factory=list)
    #: Pods in phase Pending (or "") that are not being deleted.
    pending_pods: list[PodEntry] = field(default_factory=list)
    #: Active pods whose containers have restarted in place (kept only when asked for).
    restarted_pods: list[PodEntry] = field(default_factory=list)
    #: R6: exactly one pod in slot 0, phase Succeeded, ``tensorflow`` exit code 0.
    worker0_completed: bool = False


@dataclass(slots=True)
class Observation:
    """Everything :func:`observe` learned from the pods."""

    types: dict[str, TypeObservation]
    #: Pods of this job (any replica-type label) — 0 means the operator has created nothing yet.
    job_pods: int = 0
    # R9 inputs: counted over every claimed pod, before slotting.
    job_failed_pods: int = 0
    job_active_pods: int = 0
    backoff_restarts: int = 0
    #: Running pods with in-place restarts, of replica types whose restarts backoffLimit counts.
    backoff_restarted: list[PodEntry] = field(default_factory=list)


def _pod_list(pods: object) -> Sequence[Any]:
    """The pods as a sequence; a PodList object (``{"items": [...]}``) is accepted too."""
    if isinstance(pods, Mapping):
        return as_list(pods.get("items"))
    return as_list(pods)


def _owned_by_other(metadata: Mapping[str, Any], uid: str) -> bool:
    """True when the pod's controller reference points at another object (R2 claims only ours)."""
    for item in as_list(metadata.get("ownerReferences")):
        reference = as_mapping(item)
        if reference.get("controller") is True:
            return reference.get("uid") != uid
    return False


def observe(job: JobView, pods: object, *, keep_restarted: bool) -> Observation:
    """Count and slot the pods of ``job``; never raises, never copies a pod."""
    by_label: dict[str, ReplicaSpec] = {name.lower(): spec for name, spec in job.specs.items()}
    by_label.update(job.other_specs)
    types = {name: TypeObservation(spec) for name, spec in job.specs.items()}
    observation = Observation(types)
    job_name = job.name
    uid = job.uid
    slots: dict[
        tuple[str, int],
        tuple[str, int, Mapping[str, Any], Mapping[str, Any], Mapping[str, Any], str, bool] | None,
    ]
    slots = {}

    for pod in _pod_list(pods):
        if type(pod) is not dict and not isinstance(pod, Mapping):
            continue
        metadata = pod.get("metadata")
        if type(metadata) is not dict:
            metadata = as_mapping(metadata)
        labels = metadata.get("labels")
        if type(labels) is not dict:
            labels = as_mapping(labels)
        if labels.get(LABEL_OPERATOR_NAME) != TFJOB_CONTROLLER:
            continue
        if job_name is not None and labels.get(LABEL_JOB_NAME) != job_name:
            continue
        if uid is not None and "ownerReferences" in metadata and _owned_by_other(metadata, uid):
            continue
        status = pod.get("status")
        if type(status) is not dict:
            status = as_mapping(status)
        phase = status.get("phase")
        if not phase or type(phase) is not str:
            phase = PHASE_PENDING  # a pod without a phase yet behaves as Pending
        deleting = bool(metadata.get("deletionTimestamp"))

        observation.job_pods += 1
        if phase == PHASE_FAILED:
            observation.job_failed_pods += 1
        elif phase != PHASE_SUCCEEDED and not deleting:
            observation.job_active_pods += 1

        type_label = labels.get(LABEL_REPLICA_TYPE)
        spec = by_label.get(type_label) if type(type_label) is str else None
        if spec is None:
            continue
        restarts = restart_total(status)
        if restarts and phase == PHASE_RUNNING and spec.restart_policy in RESTARTING_POLICIES:
            observation.backoff_restarts += restarts
        seen = types.get(spec.type)
        if seen is None:
            continue  # a replica type outside the five: only backoffLimit looks at it
        seen.restarts += restarts
        index = as_int(labels.get(LABEL_REPLICA_INDEX))
        if index is None or index < 0:
            continue
        key = (spec.type, index)
        if key in slots:
            slots[key] = None  # two pods in one slot: the operator skips the slot
        else:
            slots[key] = (spec.type, index, pod, metadata, status, phase, deleting)

    for slotted in slots.values():
        if slotted is None:
            continue
        replica_type, index, pod, metadata, status, phase, deleting = slotted
        seen = types[replica_type]
        if phase == PHASE_RUNNING:
            if deleting:
                seen.failed += 1
                seen.failed_pods.append(_entry(job, slotted))
                continue
            seen.active += 1
            if keep_restarted or seen.spec.restart_policy in RESTARTING_POLICIES:
                restarted = restart_total(status)
                if restarted:
                    entry = _entry(job, slotted)
                    if keep_restarted:
                        seen.restarted_pods.append(entry)
                    if seen.spec.restart_policy in RESTARTING_POLICIES:
                        observation.backoff_restarted.append(entry)
        elif phase == PHASE_SUCCEEDED:
            seen.succeeded += 1
            seen.succeeded_pods.append(_entry(job, slotted))
            if replica_type == "Worker" and index == 0 and operator_exit_code(status) == 0:
                seen.worker0_completed = True
        elif phase == PHASE_FAILED:
            seen.failed += 1
            seen.failed_pods.append(_entry(job, slotted))
        elif phase == PHASE_PENDING:
            seen.pending += 1
            if not deleting:
                seen.pending_pods.append(_entry(job, slotted))
        # Unknown (node unreachable) and unrecognised phases are not counted, as in R2.
    return observation


def _entry(
    job: JobView,
    slotted: tuple[str, int, Mapping[str, Any], Mapping[str, Any], Mapping[str, Any], str, bool],
) -> PodEntry:
    replica_type, index, pod, metadata, status, phase, deleting = slotted
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        name = f"{job.name or '?'}-{replica_type.lower()}-{index}"
    return PodEntry(replica_type, index, name, pod, status, phase, deleting)
