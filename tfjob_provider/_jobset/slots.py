""":func:`slotted_pods`: a JobSet's pods of the current run, one per replica slot (the newest), with
the training operator's labels so that the TFJob engine counts them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from tfjob_provider._jobset import names
from tfjob_provider._jobset.policies import ChildJob
from tfjob_provider._jobset.replicas import ReplicatedJob
from tfjob_provider._policy.readers import as_int, as_list, as_mapping, as_str, parse_time
from tfjob_provider.constants import (
    LABEL_JOB_NAME,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    OPERATOR_NAME,
)

_JOBSET_NAME: Final = names.LABEL_JOBSET_NAME
_RESTART_ATTEMPT: Final = names.LABEL_RESTART_ATTEMPT
_REPLICATED_JOB: Final = names.LABEL_REPLICATED_JOB
_JOB_INDEX: Final = names.LABEL_JOB_INDEX
_COMPLETION_INDEX: Final = names.COMPLETION_INDEX


def controller_uid(metadata: Mapping[str, Any]) -> str | None:
    references = metadata.get("ownerReferences")
    if type(references) is list and len(references) == 1 and type(references[0]) is dict:
        owner = references[0]  # the usual shape: the one reference of the owning controller
        return as_str(owner.get("uid")) if owner.get("controller") is True else None
    for item in as_list(references):
        reference = as_mapping(item)
        if reference.get("controller") is True:
            return as_str(reference.get("uid"))
    return None


def _annotation(metadata: Mapping[str, Any], key: str) -> Any:
    annotations = metadata.get("annotations")
    return annotations.get(key) if type(annotations) is dict else as_mapping(annotations).get(key)


def _index(value: object) -> int | None:
    """A non-negative index label (``"12"``), read without the generic reader on the hot path."""
    if type(value) is str and value.isdecimal():
        return int(value)
    parsed = as_int(value)
    return parsed if parsed is not None and parsed >= 0 else None


def slotted_pods(
    jobset: Mapping[str, Any],
    pods: Sequence[Any],
    rjobs: Mapping[str, ReplicatedJob],
    current: Mapping[str, ChildJob],
) -> list[dict[str, Any]]:
    """The current run's pods, one per replica slot (the newest: the Job controller's replacement).

    The loop runs once per pod per event, so it reads the usual shapes inline and parses a
    creation time only when two pods share a slot.
    """
    metadata = as_mapping(jobset.get("metadata"))
    name = as_str(metadata.get("name"))
    restarts = as_int(as_mapping(jobset.get("status")).get("restarts")) or 0
    current_uids = {job.uid for job in current.values() if job.uid}
    rjobs_lower = {rjob.replica_type: rjob.replica_type.lower() for rjob in rjobs.values()}
    newest: dict[tuple[str, str | None], tuple[int, Mapping[str, Any]]] = {}
    for order, pod in enumerate(pods):
        if type(pod) is not dict and not isinstance(pod, Mapping):
            continue
        pod_metadata = pod.get("metadata")
        if type(pod_metadata) is not dict:
            pod_metadata = as_mapping(pod_metadata)
        labels = pod_metadata.get("labels")
        if type(labels) is not dict:
            labels = as_mapping(labels)
        if labels.get(_JOBSET_NAME) != name:
            continue
        controller = controller_uid(pod_metadata)
        if controller is not None and current_uids:
            if controller not in current_uids:
                continue  # a pod of a Job of an older run
        elif (_index(labels.get(_RESTART_ATTEMPT)) or 0) < restarts:
            continue
        rjob_name = labels.get(_REPLICATED_JOB)
        rjob = rjobs.get(rjob_name) if type(rjob_name) is str else None
        if rjob is None:
            continue
        slot = (rjob.replica_type, _slot_index(labels, pod_metadata, rjob.completions))
        if slot[1] is None:
            continue
        seen = newest.get(slot)
        if seen is None or _newer(pod_metadata, order, as_mapping(seen[1].get("metadata")), seen[0]):
            newest[slot] = (order, pod)
    mapped: list[dict[str, Any]] = []
    for (replica_type, index), (_, pod) in newest.items():
        pod_metadata = as_mapping(pod.get("metadata"))
        kept = {
            "name": pod_metadata.get("name"),
            "creationTimestamp": pod_metadata.get("creationTimestamp"),
            "labels": {
                LABEL_OPERATOR_NAME: OPERATOR_NAME,
                LABEL_JOB_NAME: name,
                LABEL_REPLICA_TYPE: rjobs_lower[replica_type],
                LABEL_REPLICA_INDEX: index,
            },
        }
        if pod_metadata.get("deletionTimestamp"):
            kept["deletionTimestamp"] = pod_metadata["deletionTimestamp"]
            kept["deletionGracePeriodSeconds"] = pod_metadata.get("deletionGracePeriodSeconds")
        mapped.append({"metadata": kept, "status": pod.get("status")})
    return mapped


def _is_canonical_index(text: str) -> bool:
    """``"7"``, not ``"07"`` or ``"+7"``: text that is already the index's label."""
    return text.isdecimal() and (text == "0" or text[0] != "0")


def _slot_index(labels: Mapping[str, Any], metadata: Mapping[str, Any], completions: int) -> str | None:
    """The replica index of a pod, as label text: ``job-index * completions + completion index``.

    The completion index is a label since Kubernetes 1.28 and an annotation before; with one Job
    per replica type (job index 0) its text is the replica index as it stands.
    """
    completion = labels.get(_COMPLETION_INDEX)
    if completion is None:
        completion = _annotation(metadata, _COMPLETION_INDEX)
    job_index = labels.get(_JOB_INDEX)
    if isinstance(completion, str) and _is_canonical_index(completion) and job_index == "0":
        return completion
    parsed_job, parsed_completion = _index(job_index), _index(completion)
    if parsed_job is None or parsed_completion is None:
        return None
    return str(parsed_job * completions + parsed_completion)


def _newer(
    metadata: Mapping[str, Any], order: int, seen_metadata: Mapping[str, Any], seen_order: int
) -> bool:
    """Whether a pod is newer than the one already in its slot (creation time, else list order)."""
    created = parse_time(metadata.get("creationTimestamp"))
    seen_created = parse_time(seen_metadata.get("creationTimestamp"))
    if created is not None and seen_created is not None and created != seen_created:
        return created > seen_created
    return order > seen_order
