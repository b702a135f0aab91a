"""The JobSet backend's API operations and watch: JobSets, their Jobs and their pods read together
and handed up as the TFJob view (:func:`tfjob_provider._jobset.judging.as_tfjob`), so every waiter
above judges and records a JobSet as it does a TFJob (docs/adr/0040-jobset-wiring.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

from tfjob_provider._jobset import names
from tfjob_provider._jobset.judging import as_tfjob
from tfjob_provider.constants import LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from tfjob_provider.kube import jobset_requests as jrq
from tfjob_provider.kube import requests as rq
from tfjob_provider.kube.effects import Emit, Operation, Sleep
from tfjob_provider.kube.errors import KubeApiError, NotFoundError
from tfjob_provider.kube.instances import EarlierInstances
from tfjob_provider.kube.list_watch import WatchedStream, follow_one_job
from tfjob_provider.kube.operations import Session, call, call_json, call_list, parse_json
from tfjob_provider.kube.requests import ApiRequest
from tfjob_provider.kube.tracking import JobKey, JobSnapshot, slim_pod, strip_managed_fields
from tfjob_provider.kube.watching import ListWatch

JOBSET_NOT_SERVED_MESSAGE = (
    "the cluster does not serve jobset.x-k8s.io/v1alpha2 JobSet — install JobSet "
    "(kubernetes-sigs/jobset; Kubeflow Trainer v2 installs it) or use backend='tfjob'"
)


class JobSetNotServedError(KubeApiError):
    """The cluster does not serve ``jobset.x-k8s.io/v1alpha2`` ``jobsets``."""

    def __init__(self, *, status: int | None = None) -> None:
        super().__init__(
            JOBSET_NOT_SERVED_MESSAGE, status=status, reason="NotServed", request=jrq.discover_jobset_api()
        )


# --- one-shot operations -------------------------------------------------------------------------


def check_jobset_served(session: Session) -> Operation[None]:
    """Raise :class:`JobSetNotServedError` unless discovery lists ``jobsets`` in the JobSet API."""
    try:
        body = yield from call_json(session, jrq.discover_jobset_api())
    except NotFoundError:
        raise JobSetNotServedError(status=404) from None
    resources = body.get("resources")
    served = isinstance(resources, list) and any(
        isinstance(item, Mapping) and item.get("name") == names.PLURAL for item in resources
    )
    if not served:
        raise JobSetNotServedError(status=200)


def create_jobset(
    session: Session, manifest: Mapping[str, Any], *, namespace: str
) -> Operation[dict[str, Any]]:
    """Create a JobSet; return its TFJob view (no Jobs or pods yet)."""
    request = jrq.create_jobset(manifest, namespace=namespace)
    response = yield from call(session, request)
    return as_tfjob(parse_json(response, request), [], [])[0]


def get_jobset(session: Session, name: str, *, namespace: str) -> Operation[dict[str, Any]]:
    """The JobSet alone as its TFJob view (its conditions, identity and deletion; no pods)."""
    request = jrq.get_jobset(name, namespace=namespace)
    response = yield from call(session, request)
    return as_tfjob(parse_json(response, request), [], [])[0]


def delete_jobset(session: Session, name: str, *, namespace: str) -> Operation[bool]:
    """Delete a JobSet (Foreground); ``False`` when it was already gone."""
    try:
        yield from call(session, jrq.delete_jobset(name, namespace=namespace))
    except NotFoundError:
        return False
    return True


def _items(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    items = body.get("items")
    return [dict(item) for item in items if isinstance(item, Mapping)] if isinstance(items, list) else []


def read_jobset(
    session: Session, name: str, *, namespace: str
) -> Operation[tuple[dict[str, Any] | None, list[dict[str, Any]]]]:
    """The JobSet's TFJob view (None, and no pods, if absent) and its pods, straight from the API
    server: pods first, then Jobs, then the JobSet — each read is at least as new as the changes
    the one before caused (``_outcome.wait.FRESH_READ_ORDER``)."""
    selector = jrq.jobset_children_selector(name)
    pods = _items((yield from call_list(session, rq.list_pods(namespace=namespace, label_selector=selector))))
    jobs = _items(
        (yield from call_list(session, jrq.list_jobs(namespace=namespace, label_selector=selector)))
    )
    try:
        request = jrq.get_jobset(name, namespace=namespace)
        jobset = parse_json((yield from call(session, request)), request)
    except NotFoundError:
        return None, []
    tfjob, view_pods = as_tfjob(jobset, jobs, pods)
    return tfjob, sorted(view_pods, key=_name)


def list_jobset_pods(session: Session, name: str, *, namespace: str) -> Operation[list[dict[str, Any]]]:
    """The JobSet's pods as judged (one per replica slot, with the TFJob labels); [] if it is gone."""
    _, pods = yield from read_jobset(session, name, namespace=namespace)
    return pods


# --- the tracker ---------------------------------------------------------------------------------


def _meta(obj: Mapping[str, Any], key: str) -> Any:
    metadata = obj.get("metadata")
    return metadata.get(key) if isinstance(metadata, Mapping) else None


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj, "name") or "")


class JobSetTracker:
    """JobSets, their Jobs and their pods folded from lists and watch events; :meth:`snapshot`
    gives a :class:`JobSnapshot` of the TFJob view.  The same methods as
    :class:`~tfjob_provider.kube.tracking.JobTracker` where the watch loops call them.

    A replica slot whose pod changes name between two snapshots counts as a recreation, and the
    replaced pod is kept as an earlier instance.  ``slim=True`` (the shared watch of many jobs) keeps
    only what the verdict reads of each pod, as :class:`~tfjob_provider.kube.tracking.JobTracker` does.
    """

    def __init__(
        self, *, namespace: str | None = None, only: Iterable[JobKey] | None = None, slim: bool = False
    ) -> None:
        self._namespace = namespace
        self._slim = slim
        self._only = frozenset(only) if only is not None else None
        self._jobsets: dict[JobKey, Mapping[str, Any]] = {}
        self._children: dict[str, dict[JobKey, dict[str, Mapping[str, Any]]]] = {"jobs": {}, "pods": {}}
        self._seen: set[JobKey] = set()
        self._deleted: set[JobKey] = set()
        self._slots: dict[JobKey, dict[tuple[str, str], Mapping[str, Any]]] = {}
        self._recreated: dict[JobKey, dict[str, int]] = {}
        self._earlier: dict[JobKey, EarlierInstances] = {}

    def _wanted(self, key: JobKey | None) -> bool:
        return key is not None and (self._only is None or key in self._only)

    def _key(self, obj: Mapping[str, Any], *, child: bool) -> JobKey | None:
        namespace = _meta(obj, "namespace") or self._namespace
        if child:
            labels = _meta(obj, "labels")
            name = labels.get(names.LABEL_JOBSET_NAME) if isinstance(labels, Mapping) else None
        else:
            name = _meta(obj, "name")
        return (str(namespace), str(name)) if name and namespace else None

    # -- JobSets
    def apply_jobset_event(self, event_type: str, obj: Mapping[str, Any]) -> set[JobKey]:
        key = self._key(obj, child=False)
        if not self._wanted(key):
            return set()
        assert key is not None
        if event_type == "DELETED":
            if self._jobsets.pop(key, None) is not None or key in self._seen:
                self._deleted.add(key)
            return {key}
        self._jobsets[key] = strip_managed_fields(obj)
        self._seen.add(key)
        self._deleted.discard(key)
        return {key}

    def relist_jobsets(self, items: Iterable[Mapping[str, Any]]) -> set[JobKey]:
        fresh: dict[JobKey, Mapping[str, Any]] = {}
        for obj in items:
            key = self._key(obj, child=False)
            if self._wanted(key):
                assert key is not None
                fresh[key] = obj
        changed = set(self._jobsets) | set(fresh)
        self._deleted |= set(self._jobsets) - set(fresh)
        self._deleted -= set(fresh)
        self._seen |= set(fresh)
        self._jobsets = fresh
        return changed

    # -- Jobs and pods
    def _apply_child(self, kind: str, event_type: str, obj: Mapping[str, Any]) -> set[JobKey]:
        key = self._key(obj, child=True)
        name = _name(obj)
        if not self._wanted(key) or not name:
            return set()
        assert key is not None
        children = self._children[kind].setdefault(key, {})
        if event_type == "DELETED":
            current = children.get(name)
            if current is not None and _meta(current, "uid") in (None, _meta(obj, "uid")):
                del children[name]
        else:
            children[name] = self._kept(kind, obj)
        if not children:
            self._children[kind].pop(key, None)
        return {key}

    def _relist_children(self, kind: str, items: Iterable[Mapping[str, Any]]) -> set[JobKey]:
        fresh: dict[JobKey, dict[str, Mapping[str, Any]]] = {}
        for obj in items:
            key = self._key(obj, child=True)
            if self._wanted(key) and _name(obj):
                assert key is not None
                fresh.setdefault(key, {})[_name(obj)] = self._kept(kind, obj)
        changed = set(self._children[kind]) | set(fresh)
        self._children[kind] = fresh
        return changed

    def _kept(self, kind: str, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        """What is stored of a Job or pod: a slim pod keeps its completion-index annotation too."""
        if not (self._slim and kind == "pods"):
            return strip_managed_fields(obj)
        slim = slim_pod(obj)
        index = _annotations(obj).get(names.COMPLETION_INDEX)
        if index is not None:
            slim["metadata"]["annotations"] = {names.COMPLETION_INDEX: index}
        return slim

    def apply_job_event(self, event_type: str, obj: Mapping[str, Any]) -> set[JobKey]:
        return self._apply_child("jobs", event_type, obj)

    def relist_jobs(self, items: Iterable[Mapping[str, Any]]) -> set[JobKey]:
        return self._relist_children("jobs", items)

    def apply_pod_event(self, event_type: str, obj: Mapping[str, Any]) -> set[JobKey]:
        return self._apply_child("pods", event_type, obj)

    def relist_pods(self, items: Iterable[Mapping[str, Any]]) -> set[JobKey]:
        return self._relist_children("pods", items)

    # -- reading
    def _note_slots(self, key: JobKey, pods: Iterable[Mapping[str, Any]]) -> None:
        slots = self._slots.setdefault(key, {})
        for pod in pods:
            labels = _meta(pod, "labels") or {}
            slot = (str(labels.get(LABEL_REPLICA_TYPE)), str(labels.get(LABEL_REPLICA_INDEX)))
            previous = slots.get(slot)
            if previous is not None and _name(previous) != _name(pod):
                replica_type = slot[0][:1].upper() + slot[0][1:]
                counts = self._recreated.setdefault(key, {})
                counts[replica_type] = counts.get(replica_type, 0) + 1
                self._earlier.setdefault(key, EarlierInstances()).add("", previous)
            slots[slot] = pod

    def snapshot(self, key: JobKey) -> JobSnapshot:
        jobset = self._jobsets.get(key)
        earlier = self._earlier.get(key)
        if jobset is None:
            return JobSnapshot(
                tfjob=None,
                pods=(),
                deleted=key in self._deleted,
                recreations=dict(self._recreated.get(key, {})),
                earlier=earlier.of(None) if earlier is not None else (),
                earlier_dropped=earlier.dropped if earlier is not None else 0,
            )
        jobs = list(self._children["jobs"].get(key, {}).values())
        pods = list(self._children["pods"].get(key, {}).values())
        tfjob, view_pods = as_tfjob(jobset, jobs, pods)
        view_pods.sort(key=_name)
        self._note_slots(key, view_pods)
        earlier = self._earlier.get(key)
        return JobSnapshot(
            tfjob=tfjob,
            pods=tuple(view_pods),
            deleted=key in self._deleted,
            recreations=dict(self._recreated.get(key, {})),
            earlier=earlier.of(None) if earlier is not None else (),
            earlier_dropped=earlier.dropped if earlier is not None else 0,
        )

    def forget(self, key: JobKey) -> None:
        """Drop everything about one JobSet (its last subscriber left)."""
        self._jobsets.pop(key, None)
        for children in self._children.values():
            children.pop(key, None)
        for table in (self._slots, self._recreated, self._earlier):
            table.pop(key, None)
        self._seen.discard(key)
        self._deleted.discard(key)

    def __len__(self) -> int:
        return len(self._jobsets)


# --- the watch -----------------------------------------------------------------------------------


def _list_watch(
    session: Session,
    lister: Callable[..., ApiRequest],
    watcher: Callable[..., ApiRequest],
    namespace: str,
    selectors: Mapping[str, str | None],
) -> ListWatch:
    """A list→watch of one resource in ``namespace`` with the same selectors on the LIST and WATCH."""
    return ListWatch(
        list_request=lambda: lister(namespace=namespace, **selectors),
        watch_request=lambda rv, timeout, read_timeout: watcher(
            namespace=namespace,
            resource_version=rv,
            timeout_seconds=timeout,
            read_timeout=read_timeout,
            **selectors,
        ),
        settings=session.watch,
    )


def jobset_streams(
    session: Session, tracker: JobSetTracker, *, namespace: str, job_name: str | None = None
) -> list[WatchedStream]:
    """The three streams behind a JobSet watch: JobSets (by name, or all of the namespace), and
    the Jobs and pods labelled with the JobSet's name (or with any JobSet's)."""
    by_name = {"field_selector": f"metadata.name={job_name}" if job_name else None}
    children = {"label_selector": jrq.jobset_children_selector(job_name)}
    jobset_watch = _list_watch(session, jrq.list_jobsets, jrq.watch_jobsets, namespace, by_name)
    job_watch = _list_watch(session, jrq.list_jobs, jrq.watch_jobs, namespace, children)
    pod_watch = _list_watch(session, rq.list_pods, rq.watch_pods, namespace, children)
    return [
        WatchedStream("jobsets", jobset_watch, tracker.apply_jobset_event, tracker.relist_jobsets),
        WatchedStream("jobs", job_watch, tracker.apply_job_event, tracker.relist_jobs),
        WatchedStream("pods", pod_watch, tracker.apply_pod_event, tracker.relist_pods),
    ]


def poll_jobset_snapshots(session: Session, name: str, *, namespace: str) -> Operation[None]:
    """Polling fallback when ``watch`` is forbidden: every ``poll_interval`` a :func:`read_jobset`."""
    last: JobSnapshot | None = None
    seen = False
    while True:
        tfjob, pods = yield from read_jobset(session, name, namespace=namespace)
        seen = seen or tfjob is not None
        snapshot = JobSnapshot(tfjob=tfjob, pods=tuple(pods), deleted=seen and tfjob is None)
        if snapshot != last:
            yield Emit(snapshot)
            last = snapshot
        yield Sleep(session.watch.poll_interval)


def watch_jobset(session: Session, name: str, *, namespace: str) -> Operation[None]:
    """Emit a :class:`JobSnapshot` of the JobSet's TFJob view after the initial lists and after
    every change of the JobSet, one of its Jobs or one of its pods; polls when ``watch`` is forbidden."""
    key = (namespace, name)
    tracker = JobSetTracker(namespace=namespace, only=[key])
    streams = jobset_streams(session, tracker, namespace=namespace, job_name=name)
    yield from follow_one_job(
        session,
        key,
        tracker.snapshot,
        streams,
        poll=partial(poll_jobset_snapshots, session, name, namespace=namespace),
    )


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return annotations if isinstance(annotations, Mapping) else {}


__all__ = [
    "JOBSET_NOT_SERVED_MESSAGE",
    "JobSetNotServedError",
    "JobSetTracker",
    "check_jobset_served",
    "create_jobset",
    "delete_jobset",
    "get_jobset",
    "jobset_streams",
    "list_jobset_pods",
    "poll_jobset_snapshots",
    "read_jobset",
    "watch_jobset",
]
