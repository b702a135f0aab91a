"""The two kinds of job a task can run (``backend="tfjob"`` or ``"jobset"``): their requests,
fresh reads, watches and verdict engine behind one interface, :class:`JobKind`
(docs/adr/0040-jobset-wiring.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from tfjob_provider._jobset.judging import JOBSET_ENGINE
from tfjob_provider._outcome.wait import TFJOB_ENGINE, JobEngine
from tfjob_provider.kube import jobsets, list_watch
from tfjob_provider.kube import operations as ops
from tfjob_provider.kube.effects import Operation
from tfjob_provider.kube.list_watch import WatchedStream
from tfjob_provider.kube.operations import Session
from tfjob_provider.kube.tracking import JobKey, JobSnapshot, JobTracker

#: The values of the ``backend`` parameter of the operator, the decorator and the sensor.
BACKENDS: Final = ("tfjob", "jobset")


class SharedTracker(Protocol):
    """What the shared watch asks of a tracker (:class:`JobTracker`, :class:`jobsets.JobSetTracker`)."""

    def snapshot(self, key: JobKey) -> JobSnapshot: ...

    def forget(self, key: JobKey) -> None: ...


Read = Callable[..., Operation[tuple[dict[str, Any] | None, list[dict[str, Any]]]]]


@dataclass(frozen=True)
class JobKind:
    """One backend: what it submits and watches, read as a TFJob (a JobSet as its TFJob view).

    Every operation takes the session first, as those of :mod:`.operations` do, and is run with
    ``client.run(...)`` on either transport.
    """

    backend: str
    #: How messages name the object (``"TFJob"``, ``"JobSet"``).
    noun: str
    engine: JobEngine
    check_served: Callable[[Session], Operation[None]]
    create: Callable[..., Operation[dict[str, Any]]]
    get: Callable[..., Operation[dict[str, Any]]]
    delete: Callable[..., Operation[bool]]
    #: the pods as judged, sorted by name
    list_pods: Callable[..., Operation[list[dict[str, Any]]]]
    #: the object and its pods straight from the API server, in the fresh-read order
    read: Read
    #: emits a :class:`~tfjob_provider.kube.tracking.JobSnapshot` after every change
    watch: Callable[..., Operation[None]]
    #: the shared watch's tracker of every job of a namespace, and its streams
    shared_tracker: Callable[[str], SharedTracker]
    shared_streams: Callable[[Session, Any, str], list[WatchedStream]]

    def with_pods(
        self, session: Session, existing: Mapping[str, Any], name: str, *, namespace: str
    ) -> Operation[tuple[Mapping[str, Any], list[dict[str, Any]]]]:
        """``existing`` (just read) and its pods: a TFJob's pods are listed; a JobSet is read
        again with its Jobs and pods, which its view needs."""
        if self.backend == "tfjob":
            pods = yield from self.list_pods(session, name, namespace=namespace)
            return existing, pods
        fresh, pods = yield from self.read(session, name, namespace=namespace)
        return (existing, []) if fresh is None else (fresh, pods)


def _create_tfjob(
    session: Session, manifest: Mapping[str, Any], *, namespace: str
) -> Operation[dict[str, Any]]:
    return ops.create_tfjob(session, manifest, namespace=namespace)


def _delete_tfjob(session: Session, name: str, *, namespace: str) -> Operation[bool]:
    return ops.delete_tfjob(session, name, namespace=namespace)


def _tfjob_tracker(namespace: str) -> JobTracker:
    return JobTracker(namespace=namespace, slim=True)


def _tfjob_streams(session: Session, tracker: JobTracker, namespace: str) -> list[WatchedStream]:
    return list_watch.job_streams(session, tracker, namespace=namespace)


def _jobset_tracker(namespace: str) -> jobsets.JobSetTracker:
    return jobsets.JobSetTracker(namespace=namespace, slim=True)


def _jobset_streams(session: Session, tracker: jobsets.JobSetTracker, namespace: str) -> list[WatchedStream]:
    return jobsets.jobset_streams(session, tracker, namespace=namespace)


TFJOB: Final = JobKind(
    backend="tfjob",
    noun="TFJob",
    engine=TFJOB_ENGINE,
    check_served=ops.check_tfjob_served,
    create=_create_tfjob,
    get=ops.get_tfjob,
    delete=_delete_tfjob,
    list_pods=ops.list_job_pods,
    read=ops.read_job,
    watch=list_watch.watch_job,
    shared_tracker=_tfjob_tracker,
    shared_streams=_tfjob_streams,
)

JOBSET: Final = JobKind(
    backend="jobset",
    noun="JobSet",
    engine=JOBSET_ENGINE,
    check_served=jobsets.check_jobset_served,
    create=jobsets.create_jobset,
    get=jobsets.get_jobset,
    delete=jobsets.delete_jobset,
    list_pods=jobsets.list_jobset_pods,
    read=jobsets.read_jobset,
    watch=jobsets.watch_jobset,
    shared_tracker=_jobset_tracker,
    shared_streams=_jobset_streams,
)

_KINDS: Final = {kind.backend: kind for kind in (TFJOB, JOBSET)}


def kind_for(backend: str) -> JobKind:
    """The :class:`JobKind` of a ``backend`` value; ValueError naming the allowed values."""
    kind = _KINDS.get(backend) if isinstance(backend, str) else None
    if kind is None:
        raise ValueError(f"backend is {backend!r}; use one of {list(BACKENDS)}")
    return kind


def kind_of_engine(engine: JobEngine) -> JobKind:
    """The kind whose engine a :class:`~tfjob_provider._outcome.wait.WaitTarget` judges with."""
    return JOBSET if engine.noun == JOBSET.noun else TFJOB


__all__ = ["BACKENDS", "JOBSET", "TFJOB", "JobKind", "kind_for", "kind_of_engine"]
