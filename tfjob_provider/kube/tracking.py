""":class:`JobTracker`: TFJobs and their pods folded from lists and watch events into immutable
:class:`JobSnapshot` values (optionally slim), with pod recreations counted.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tfjob_provider.constants import (
    LABEL_JOB_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    REPLICA_TYPES,
)
from tfjob_provider.kube.instances import EarlierInstances, PodInstance

JobKey = tuple[str, str]
"""``(namespace, name)`` of a TFJob."""


@dataclass(frozen=True)
class JobSnapshot:
    """What is known about one TFJob at one moment.

    :param tfjob: the TFJob object, or ``None`` when it does not exist (yet, or any more).
    :param pods: its pods, sorted by name.
    :param deleted: the TFJob was seen and has since disappeared (externally deleted).
    :param recreations: per replica type (``"Worker"``), how often one of its pods was seen
        replaced by a new pod (another UID) in the same slot while this tracker watched; types
        without a recreation are absent.
    :param earlier: pod instances seen replaced or deleted meanwhile (bounded, oldest first).
    :param earlier_dropped: gone instances not kept in ``earlier`` (over its bound).
    """

    tfjob: Mapping[str, Any] | None
    pods: tuple[Mapping[str, Any], ...]
    deleted: bool
    recreations: Mapping[str, int] = field(default_factory=dict)
    earlier: tuple[PodInstance, ...] = ()
    earlier_dropped: int = 0


# --- slimming -----------------------------------------------------------------------------------

_METADATA_KEEP = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "ownerReferences",
)
_POD_SPEC_KEEP = ("nodeName", "restartPolicy", "schedulerName", "priorityClassName")


def _slim_metadata(metadata: Any) -> dict[str, Any]:
    if not isinstance(metadata, Mapping):
        return {}
    slim = {key: metadata[key] for key in _METADATA_KEEP if key in metadata}
    owners = slim.get("ownerReferences")
    if isinstance(owners, list):
        slim["ownerReferences"] = [
            {k: o[k] for k in ("kind", "name", "uid", "controller") if k in o}
            for o in owners
            if isinstance(o, Mapping)
        ]
    return slim


def _names_only(containers: Any) -> list[dict[str, Any]]:
    if not isinstance(containers, list):
        return []
    return [{"name": c.get("name")} for c in containers if isinstance(c, Mapping)]


#: Pod status fields the verdict never reads (addresses, QoS class, claims).
_POD_STATUS_DROP = frozenset(
    {
        "hostIP",
        "hostIPs",
        "podIP",
        "podIPs",
        "qosClass",
        "resourceClaimStatuses",
        "ephemeralContainerStatuses",
    }
)
#: Container status fields the verdict never reads (it reads name, state, lastState, restartCount,
#: and the image, which it names when the image cannot be pulled).
_CONTAINER_STATUS_DROP = frozenset(
    {
        "imageID",
        "containerID",
        "volumeMounts",
        "allocatedResources",
        "resources",
        "user",
        "allocatedResourcesStatus",
        "stopSignal",
    }
)


def _slim_container_statuses(statuses: Any) -> Any:
    if not isinstance(statuses, list):
        return statuses
    return [
        {k: v for k, v in item.items() if k not in _CONTAINER_STATUS_DROP}
        if isinstance(item, Mapping)
        else item
        for item in statuses
    ]


#: Pod conditions the verdict reads (why a pod is unscheduled; who disrupted it); Ready,
#: ContainersReady, Initialized and PodReadyToStartContainers are most of a status's bytes.
_POD_CONDITIONS_KEEP = frozenset({"PodScheduled", "DisruptionTarget"})


def _slim_pod_status(status: Any) -> Any:
    if not isinstance(status, Mapping):
        return status
    slim = {key: value for key, value in status.items() if key not in _POD_STATUS_DROP}
    for key in ("containerStatuses", "initContainerStatuses"):
        if key in slim:
            slim[key] = _slim_container_statuses(slim[key])
    conditions = slim.get("conditions")
    if isinstance(conditions, list):
        slim["conditions"] = [
            item
            for item in conditions
            if not isinstance(item, Mapping) or item.get("type") in _POD_CONDITIONS_KEEP
        ]
    return slim


def _compact(value: Any) -> Any:
    """A copy sharing its keys and short strings with every other snapshot (``sys.intern``).

    JSON decoding makes new string objects for every key and value of every event, so 10,000
    waiting jobs would hold 10,000 copies of ``"lastTransitionTime"``, ``"Running"`` and each
    label; interned, the tracker's memory per job drops by about a third.
    """
    if type(value) is dict:
        return {sys.intern(k) if type(k) is str else k: _compact(v) for k, v in value.items()}
    if type(value) is list:
        return [_compact(item) for item in value]
    if type(value) is str and len(value) <= 64:
        return sys.intern(value)
    return value


def slim_pod(pod: Mapping[str, Any]) -> dict[str, Any]:
    """A pod reduced to metadata identity/labels, a few spec fields and the status fields the
    verdict reads (phase, reason, message, conditions, container states and restart counts)."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    slim_spec: dict[str, Any] = {key: spec[key] for key in _POD_SPEC_KEEP if key in spec}
    slim_spec["containers"] = _names_only(spec.get("containers"))
    if spec.get("initContainers"):
        slim_spec["initContainers"] = _names_only(spec.get("initContainers"))
    slim: dict[str, Any] = {"metadata": _slim_metadata(pod.get("metadata")), "spec": slim_spec}
    if "status" in pod:
        slim["status"] = _slim_pod_status(pod["status"])
    compact: dict[str, Any] = _compact(slim)
    return compact


def _slim_replica_specs(spec: Any) -> Any:
    """Replica specs with each pod template cut to its container names: the verdict reads replica
    counts and restart policies, never the templates, which hold most of a TFJob's bytes."""
    if not isinstance(spec, Mapping) or not isinstance(spec.get("tfReplicaSpecs"), Mapping):
        return spec
    replicas: dict[str, Any] = {}
    for replica_type, replica in spec["tfReplicaSpecs"].items():
        if isinstance(replica, Mapping) and isinstance(replica.get("template"), Mapping):
            template_spec = replica["template"].get("spec")
            containers = template_spec.get("containers") if isinstance(template_spec, Mapping) else None
            replica = {**replica, "template": {"spec": {"containers": _names_only(containers)}}}
        replicas[replica_type] = replica
    return {**spec, "tfReplicaSpecs": replicas}


def slim_tfjob(tfjob: Mapping[str, Any]) -> dict[str, Any]:
    """A TFJob without ``managedFields``, foreign annotations and pod templates (the verdict reads
    replica counts, restart policies, run policy, success policy and the status)."""
    slim = dict(tfjob)
    if "spec" in slim:
        slim["spec"] = _slim_replica_specs(slim["spec"])
    metadata = tfjob.get("metadata")
    if isinstance(metadata, Mapping):
        kept = {k: v for k, v in metadata.items() if k not in ("managedFields", "annotations")}
        # Keep the provider's own identity annotations: they decide whether a job is ours.
        annotations = metadata.get("annotations")
        if isinstance(annotations, Mapping):
            ours = {k: v for k, v in annotations.items() if str(k).startswith("tfjob-provider.")}
            if ours:
                kept["annotations"] = ours
        slim["metadata"] = kept
    compact: dict[str, Any] = _compact(slim)
    return compact


def strip_managed_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Only drop ``metadata.managedFields`` (server bookkeeping nobody here reads)."""
    copy = dict(obj)
    metadata = obj.get("metadata")
    if isinstance(metadata, Mapping) and "managedFields" in metadata:
        copy["metadata"] = {k: v for k, v in metadata.items() if k != "managedFields"}
    return copy


# --- the tracker -----------------------------------------------------------------------------


def _meta(obj: Mapping[str, Any], key: str) -> Any:
    metadata = obj.get("metadata")
    return metadata.get(key) if isinstance(metadata, Mapping) else None


def _key_of_tfjob(obj: Mapping[str, Any], default_namespace: str | None) -> JobKey | None:
    name = _meta(obj, "name")
    namespace = _meta(obj, "namespace") or default_namespace
    return (str(namespace), str(name)) if name and namespace else None


def _key_of_pod(obj: Mapping[str, Any], default_namespace: str | None) -> JobKey | None:
    labels = _meta(obj, "labels")
    job = labels.get(LABEL_JOB_NAME) if isinstance(labels, Mapping) else None
    namespace = _meta(obj, "namespace") or default_namespace
    return (str(namespace), str(job)) if job and namespace else None


def _controller_uid(pod: Mapping[str, Any]) -> str | None:
    owners = _meta(pod, "ownerReferences")
    if isinstance(owners, list):
        for owner in owners:
            if isinstance(owner, Mapping) and owner.get("controller"):
                uid = owner.get("uid")
                return str(uid) if uid else None
    return None


_CANONICAL_TYPES = {name.lower(): name for name in REPLICA_TYPES}

Slot = tuple[str, str, str]
"""``(controller uid or "", replica type, replica index)`` of a pod."""


def _slot_of(pod: Mapping[str, Any]) -> Slot | None:
    labels = _meta(pod, "labels")
    if not isinstance(labels, Mapping):
        return None
    raw_type, index = labels.get(LABEL_REPLICA_TYPE), labels.get(LABEL_REPLICA_INDEX)
    if not raw_type or index is None:
        return None
    replica_type = _CANONICAL_TYPES.get(str(raw_type).lower(), str(raw_type))
    return (_controller_uid(pod) or "", replica_type, str(index))


class JobTracker:
    """Fold TFJob and pod events into per-job state.

    :param namespace: namespace assumed for objects that do not say (watch events always do).
    :param only: track just these jobs (``watch_job``); ``None`` tracks every job seen (shared watch).
    :param slim: cut objects to what the verdict needs (see the module docstring).

    Every mutating method returns the set of job keys whose snapshot may have changed.
    """

    def __init__(
        self, *, namespace: str | None = None, only: Iterable[JobKey] | None = None, slim: bool = False
    ):
        self._namespace = namespace
        self._only = frozenset(only) if only is not None else None
        self._slim = slim
        self._tfjobs: dict[JobKey, Mapping[str, Any]] = {}
        self._pods: dict[JobKey, dict[str, Mapping[str, Any]]] = {}
        self._seen: set[JobKey] = set()
        self._deleted: set[JobKey] = set()
        # Recreation counting: the last pod UID seen per slot, and the count per (owner, type).
        self._slot_uids: dict[JobKey, dict[Slot, str]] = {}
        self._recreated: dict[JobKey, dict[tuple[str, str], int]] = {}
        # Pod instances seen go (replaced or deleted), for the record the waiter leaves.
        self._earlier: dict[JobKey, EarlierInstances] = {}

    # -- helpers
    def _wanted(self, key: JobKey | None) -> bool:
        return key is not None and (self._only is None or key in self._only)

    def shrink_tfjob(self, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        """The copy of a TFJob this tracker keeps (slim, or just without ``managedFields``)."""
        return slim_tfjob(obj) if self._slim else strip_managed_fields(obj)

    def shrink_pod(self, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        """The copy of a pod this tracker keeps (slim, or just without ``managedFields``)."""
        return slim_pod(obj) if self._slim else strip_managed_fields(obj)

    # -- TFJobs
    def apply_tfjob_event(self, event_type: str, obj: Mapping[str, Any]) -> set[JobKey]:
        key = _key_of_tfjob(obj, self._namespace)
        if not self._wanted(key):
            return set()
        assert key is not None
        if event_type == "DELETED":
            if self._tfjobs.pop(key, None) is not None or key in self._seen:
                self._deleted.add(key)
            return {key}
        self._tfjobs[key] = self.shrink_tfjob(obj)
        self._seen.add(key)
        self._deleted.discard(key)
        return {key}

    def relist_tfjobs(self, items: Iterable[Mapping[str, Any]], *, shrunk: bool = False) -> set[JobKey]:
        """Replace every tracked TFJob by the list's; jobs missing from it count as deleted.

        ``shrunk``: the items already went through :meth:`shrink_tfjob` (a paged LIST shrinks
        each page as it arrives, so a list of 10,000 jobs never holds them all whole).
        """
        fresh: dict[JobKey, Mapping[str, Any]] = {}
        for obj in items:
            key = _key_of_tfjob(obj, self._namespace)
            if self._wanted(key):
                assert key is not None
                fresh[key] = obj if shrunk else self.shrink_tfjob(obj)
        changed = set(self._tfjobs) | set(fresh)
        for key in set(self._tfjobs) - set(fresh):
            self._deleted.add(key)
        for key in fresh:
            self._deleted.discard(key)
            self._seen.add(key)
        self._tfjobs = fresh
        return changed

    # -- pods
    def _remember_gone(self, key: JobKey, pod: Mapping[str, Any]) -> None:
        self._earlier.setdefault(key, EarlierInstances()).add(_controller_uid(pod) or "", pod)

    def _note_incarnation(self, key: JobKey, obj: Mapping[str, Any]) -> None:
        """Count a recreation when a slot's pod has another UID than the last one seen there."""
        slot, uid = _slot_of(obj), _meta(obj, "uid")
        if slot is None or not uid:
            return
        uids = self._slot_uids.setdefault(key, {})
        previous = uids.get(slot)
        if previous is not None and previous != uid:
            counts = self._recreated.setdefault(key, {})
            counts[slot[:2]] = counts.get(slot[:2], 0) + 1
            replaced = self._pods.get(key, {}).get(str(_meta(obj, "name")))
            if replaced is not None and _meta(replaced, "uid") == previous:
                self._remember_gone(key, replaced)
        uids[slot] = str(uid)

    def apply_pod_event(self, event_type: str, obj: Mapping[str, Any]) -> set[JobKey]:
        key = _key_of_pod(obj, self._namespace)
        name = _meta(obj, "name")
        if not self._wanted(key) or not name:
            return set()
        assert key is not None
        pods = self._pods.setdefault(key, {})
        if event_type == "DELETED":
            current = pods.get(str(name))
            # A DELETED for an older incarnation (other UID) must not remove the recreated pod.
            if current is not None and (_meta(current, "uid") in (None, _meta(obj, "uid"))):
                del pods[str(name)]
                self._remember_gone(key, self.shrink_pod(obj))
            if not pods:
                self._pods.pop(key, None)
            return {key}
        self._note_incarnation(key, obj)
        pods[str(name)] = self.shrink_pod(obj)
        return {key}

    def relist_pods(self, items: Iterable[Mapping[str, Any]], *, shrunk: bool = False) -> set[JobKey]:
        """Replace every tracked pod by the list's (pods that vanished meanwhile are dropped);
        ``shrunk`` as for :meth:`relist_tfjobs`."""
        fresh: dict[JobKey, dict[str, Mapping[str, Any]]] = {}
        for obj in items:
            key = _key_of_pod(obj, self._namespace)
            name = _meta(obj, "name")
            if self._wanted(key) and name:
                assert key is not None
                self._note_incarnation(key, obj)
                fresh.setdefault(key, {})[str(name)] = obj if shrunk else self.shrink_pod(obj)
        for key, pods in self._pods.items():
            for name, pod in pods.items():
                if name not in fresh.get(key, {}):
                    self._remember_gone(key, pod)
        changed = set(self._pods) | set(fresh)
        self._pods = fresh
        return changed

    # -- reading
    def snapshot(self, key: JobKey) -> JobSnapshot:
        tfjob = self._tfjobs.get(key)
        uid = _meta(tfjob, "uid") if tfjob is not None else None
        pods = self._pods.get(key, {})
        selected = tuple(
            pods[name] for name in sorted(pods) if uid is None or _controller_uid(pods[name]) in (None, uid)
        )
        recreations: dict[str, int] = {}
        for (owner, replica_type), count in self._recreated.get(key, {}).items():
            if uid is None or owner in ("", uid):
                recreations[replica_type] = recreations.get(replica_type, 0) + count
        earlier = self._earlier.get(key)
        return JobSnapshot(
            tfjob=tfjob,
            pods=selected,
            deleted=key in self._deleted,
            recreations=recreations,
            earlier=earlier.of(uid) if earlier is not None else (),
            earlier_dropped=earlier.dropped if earlier is not None else 0,
        )

    def forget(self, key: JobKey) -> None:
        """Drop everything about one job (its last subscriber left)."""
        self._tfjobs.pop(key, None)
        self._pods.pop(key, None)
        self._seen.discard(key)
        self._deleted.discard(key)
        self._slot_uids.pop(key, None)
        self._recreated.pop(key, None)
        self._earlier.pop(key, None)

    def __len__(self) -> int:
        return len(self._tfjobs)


__all__ = ["JobKey", "JobSnapshot", "JobTracker", "slim_pod", "slim_tfjob", "strip_managed_fields"]
