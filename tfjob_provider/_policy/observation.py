""":func:`observe`: one pass over a TFJob's pods, counting them as the training operator does (R2, R9)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tfjob_provider._policy.pods import operator_exit_code, restarts_of
from tfjob_provider._policy.readers import as_int, as_list, as_mapping
from tfjob_provider._policy.tfjob import RESTARTING_POLICIES, JobView, ReplicaSpec
from tfjob_provider.constants import (
    LABEL_JOB_NAME,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
)
from tfjob_provider.constants import OPERATOR_NAME as TFJOB_CONTROLLER

#: (type, index label, pod, metadata, status, phase, deleting, restarts) of a pod alone in its slot so far.
_Slotted = tuple[str, str, Mapping[str, Any], Mapping[str, Any], Mapping[str, Any], str, bool, int]

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
    #: ``(type label, index label)`` of every slot holding at least one pod (a view, not a copy).
    occupied_slots: Collection[tuple[str, str]] = ()


def _pod_list(pods: object) -> Sequence[Any]:
    """The pods as a sequence; a PodList object (``{"items": [...]}``) is accepted too."""
    if isinstance(pods, Mapping):
        return as_list(pods.get("items"))
    return as_list(pods)


def _owned_by_other(references: object, uid: str) -> bool:
    """True when the pod's controller reference points at another object (R2 claims only ours)."""
    for item in as_list(references):
        reference = item if type(item) is dict else as_mapping(item)
        if reference.get("controller") is True:
            return reference.get("uid") != uid
    return False


def observe(job: JobView, pods: object, *, keep_restarted: bool) -> Observation:
    """Count and slot the pods of ``job``; never raises, never copies a pod.

    The loop body is the hot path of the whole engine (it runs once per pod per event), so the
    common well-formed shapes are read inline and only unusual ones go through the generic
    readers of :mod:`tfjob_provider._policy.readers`.
    """
    types = {name: TypeObservation(spec) for name, spec in job.specs.items()}
    # Pod label value -> (spec, its tally); replica types outside the five have no tally.
    by_label: dict[str, tuple[ReplicaSpec, TypeObservation | None]] = {
        label: (spec, None) for label, spec in job.other_specs.items()
    }
    by_label.update((name.lower(), (spec, types[name])) for name, spec in job.specs.items())
    observation = Observation(types)
    job_name = job.name
    uid = job.uid
    slots: dict[tuple[str, str], _Slotted | None] = {}
    job_pods = job_failed = job_active = backoff_restarts = 0

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
        if uid is not None:
            references = metadata.get("ownerReferences")
            if references:
                if type(references) is list and len(references) == 1 and type(references[0]) is dict:
                    owner = references[0]  # the usual shape: one reference, the TFJob's
                    if owner.get("uid") != uid and owner.get("controller") is True:
                        continue
                elif _owned_by_other(references, uid):
                    continue
        status = pod.get("status")
        if type(status) is not dict:
            status = as_mapping(status)
        phase = status.get("phase")
        if not phase or type(phase) is not str:
            phase = PHASE_PENDING  # a pod without a phase yet behaves as Pending
        deleting = bool(metadata.get("deletionTimestamp"))

        job_pods += 1
        if phase == PHASE_FAILED:
            job_failed += 1
        elif phase != PHASE_SUCCEEDED and not deleting:
            job_active += 1

        type_label = labels.get(LABEL_REPLICA_TYPE)
        known = by_label.get(type_label) if type(type_label) is str else None
        if known is None:
            continue
        spec, seen = known
        restarts = 0
        containers = status.get("containerStatuses")
        if type(containers) is list:
            for container in containers:
                count = container.get("restartCount") if type(container) is dict else None
                if type(count) is int:
                    if count > 0:
                        restarts += count
                else:
                    restarts += restarts_of([container])
        elif containers is not None:
            restarts += restarts_of(containers)
        init_containers = status.get("initContainerStatuses")
        if init_containers is not None:
            restarts += restarts_of(init_containers)
        if restarts:
            if phase == PHASE_RUNNING and spec.restart_policy in RESTARTING_POLICIES:
                backoff_restarts += restarts
            if seen is not None:
                seen.restarts += restarts
        if seen is None:
            continue  # a replica type outside the five: only backoffLimit looks at it

        # Slot by the label text; only unusual spellings ("01", "+1") are parsed here, so that
        # they share a slot with their canonical form as they do for the operator's Atoi.
        index_label = labels.get(LABEL_REPLICA_INDEX)
        if (
            type(index_label) is not str
            or not index_label.isdecimal()
            or (index_label[0] == "0" and len(index_label) > 1)
        ):
            parsed = as_int(index_label)
            if parsed is None or parsed < 0:
                continue
            index_label = str(parsed)
        key = (type_label, index_label)
        if key in slots:
            # Two pods in one slot: the operator skips the slot (R2), so undo the first count.
            previous = slots[key]
            if previous is not None:
                _tally(observation, previous, undo=True, job=job, keep_restarted=keep_restarted)
                slots[key] = None
            continue
        slotted = (spec.type, index_label, pod, metadata, status, phase, deleting, restarts)
        slots[key] = slotted
        if phase == PHASE_RUNNING and not deleting and not restarts:
            seen.active += 1  # by far the most common pod: counted inline
        else:
            _tally(observation, slotted, undo=False, job=job, keep_restarted=keep_restarted)

    observation.job_pods = job_pods
    observation.job_failed_pods = job_failed
    observation.job_active_pods = job_active
    observation.backoff_restarts = backoff_restarts
    observation.occupied_slots = slots.keys()
    return observation


def _tally(
    observation: Observation, slotted: _Slotted, *, undo: bool, job: JobView, keep_restarted: bool
) -> None:
    """Count one slotted pod (R2) into its type, or take a count back when the slot turns out shared."""
    replica_type, index_label, pod, _, status, phase, deleting, restarts = slotted
    seen = observation.types[replica_type]
    step = -1 if undo else 1
    lists: list[list[PodEntry]] = []
    if phase == PHASE_RUNNING:
        if deleting:
            seen.failed += step
            lists.append(seen.failed_pods)
        else:
            seen.active += step
            if restarts:
                if keep_restarted:
                    lists.append(seen.restarted_pods)
                if seen.spec.restart_policy in RESTARTING_POLICIES:
                    lists.append(observation.backoff_restarted)
    elif phase == PHASE_SUCCEEDED:
        seen.succeeded += step
        lists.append(seen.succeeded_pods)
        if replica_type == "Worker" and index_label == "0":
            seen.worker0_completed = not undo and operator_exit_code(status) == 0
    elif phase == PHASE_FAILED:
        seen.failed += step
        lists.append(seen.failed_pods)
    elif phase == PHASE_PENDING:
        seen.pending += step
        if not deleting:
            lists.append(seen.pending_pods)
    # Unknown (node unreachable) and unrecognised phases are not counted, as in R2.
    if undo:
        for entries in lists:
            entries[:] = [entry for entry in entries if entry.pod is not pod]
    elif lists:
        entry = _entry(job, slotted)
        for entries in lists:
            entries.append(entry)


def _entry(job: JobView, slotted: _Slotted) -> PodEntry:
    replica_type, index_label, pod, metadata, status, phase, deleting, _ = slotted
    index = int(index_label)
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        name = job.pod_name(replica_type, index)
    return PodEntry(replica_type, index, name, pod, status, phase, deleting)
