"""The list→watch loop over several streams (:func:`run_list_watches`) and the job watch built on it
(:func:`watch_job`, :func:`job_streams`, with polling as the fallback when ``watch`` is forbidden).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from tfjob_provider.constants import LABEL_OPERATOR_NAME, OPERATOR_NAME
from tfjob_provider.kube import requests as rq
from tfjob_provider.kube.effects import (
    CloseStream,
    Effect,
    Emit,
    NextLine,
    OpenStream,
    Operation,
    Sleep,
    StreamClosed,
    StreamLine,
)
from tfjob_provider.kube.errors import ForbiddenError, KubeApiError
from tfjob_provider.kube.operations import (
    Session,
    back_off,
    call,
    call_list,
    raise_for_status,
    read_job,
    throttle,
)
from tfjob_provider.kube.retry import Outage
from tfjob_provider.kube.tracking import JobKey, JobSnapshot, JobTracker
from tfjob_provider.kube.watching import Expired, ListWatch, WatchEvent

log = logging.getLogger(__name__)


@dataclass
class WatchedStream:
    """One list→watch stream and how its results fold into a tracker."""

    name: str
    watch: ListWatch
    apply: Callable[[str, Mapping[str, Any]], set[JobKey]]
    relist: Callable[[list[Mapping[str, Any]]], set[JobKey]]
    #: applied to each listed item as its page arrives (see :func:`call_list`); ``relist`` then
    #: receives the shrunk items.
    shrink: Callable[[Mapping[str, Any]], Any] | None = None
    generation: int = 0
    open: bool = False

    @property
    def key(self) -> str:
        return f"{self.name}#{self.generation}"


ChangeHandler = Callable[[set[JobKey], bool], Iterable[Effect]]


def run_list_watches(
    session: Session, streams: Sequence[WatchedStream], *, on_changes: ChangeHandler
) -> Operation[None]:
    """The list→watch loop over several streams at once; runs until an error it cannot ride out.

    ``on_changes(keys, initial)`` is called after the first lists (``initial=True``, every key)
    and after every relist or event that changed something; the effects it returns (usually
    :class:`Emit`) are yielded in order.  Raises :class:`ForbiddenError` when listing or watching
    is not allowed — the caller decides whether to fall back to polling.
    """
    by_key: dict[str, WatchedStream] = {}
    state = _LoopState()
    while True:
        try:
            yield from _relist_where_needed(session, streams, on_changes, state)
            yield from _open_missing_streams(session, streams, by_key, state.outage)
            if any(stream.watch.needs_list for stream in streams):
                continue  # a watch answered HTTP 410: list again before reading on
            item = yield NextLine()
            yield from _handle_item(session, item, by_key, on_changes, state)
        except KubeApiError as error:
            # One outage budget for the whole loop: the relists (which share ``state.outage``)
            # and the streams' reconnects; any line received, list answered or stream opened ends it.
            yield from back_off(session, state.outage, error, what="watch")


@dataclass
class _LoopState:
    outage: Outage = field(default_factory=Outage)
    initial: bool = True


def _relist_where_needed(
    session: Session, streams: Sequence[WatchedStream], on_changes: ChangeHandler, state: _LoopState
) -> Operation[None]:
    changed: set[JobKey] = set()
    relisted = False
    for stream in streams:
        if stream.watch.needs_list:
            request = stream.watch.next_request()
            body = yield from call_list(
                session, request, send=partial(call, outage=state.outage), shrink=stream.shrink
            )
            changed |= stream.relist(stream.watch.on_list(body))
            relisted = True
    if state.initial or (relisted and changed):
        initial, state.initial = state.initial, False
        yield from on_changes(changed, initial)


def _open_missing_streams(
    session: Session, streams: Sequence[WatchedStream], by_key: dict[str, WatchedStream], outage: Outage
) -> Operation[None]:
    for stream in streams:
        if stream.open or stream.watch.needs_list:
            continue
        request = stream.watch.next_request()
        yield from throttle(session)
        stream.generation += 1
        response = yield OpenStream(stream.key, request)
        try:
            raise_for_status(response, request)
        except KubeApiError as error:
            stream.watch.on_error(error)  # 410 -> relist next round; anything else raises here
            continue
        stream.open = True
        by_key[stream.key] = stream
        outage.over()  # the API answered: a break of another stream queued meanwhile starts afresh


def _handle_item(
    session: Session,
    item: StreamLine | StreamClosed,
    by_key: dict[str, WatchedStream],
    on_changes: ChangeHandler,
    state: _LoopState,
) -> Operation[None]:
    stream = by_key.get(item.key)
    if stream is None:
        return  # a line still queued from a stream closed for a relist
    if isinstance(item, StreamClosed):
        stream.open = False
        del by_key[item.key]
        if item.silent:
            stream.watch.on_silence()
            return
        if item.error is None:
            stream.watch.on_end()
            yield Sleep(session.watch.reconnect_delay)
            return
        raise item.error
    try:
        result = stream.watch.on_line(item.line)
    except KubeApiError:
        yield CloseStream(item.key)
        stream.open = False
        del by_key[item.key]
        raise
    if isinstance(result, Expired):
        yield CloseStream(item.key)
        stream.open = False
        del by_key[item.key]
        return
    state.outage.over()
    if isinstance(result, WatchEvent):
        changed = stream.apply(result.type, result.object)
        if changed:
            yield from on_changes(changed, False)


def job_streams(
    session: Session,
    tracker: JobTracker,
    *,
    namespace: str,
    job_name: str | None = None,
) -> list[WatchedStream]:
    """The two streams behind a job watch: TFJobs and their pods.

    With ``job_name`` they follow one job (TFJob by ``metadata.name`` field selector, pods by the
    ``job-name`` label); without it every TFJob of the namespace and every pod the TFJob
    controller created there (``operator-name=tfjob-controller``) — the shared watch.
    """
    field_selector = f"metadata.name={job_name}" if job_name else None
    pod_selector = rq.job_pods_selector(job_name) if job_name else f"{LABEL_OPERATOR_NAME}={OPERATOR_NAME}"
    tfjob_watch = ListWatch(
        list_request=lambda: rq.list_tfjobs(namespace=namespace, field_selector=field_selector),
        watch_request=lambda rv, timeout, read_timeout: rq.watch_tfjobs(
            namespace=namespace,
            resource_version=rv,
            timeout_seconds=timeout,
            read_timeout=read_timeout,
            field_selector=field_selector,
        ),
        settings=session.watch,
    )
    pod_watch = ListWatch(
        list_request=lambda: rq.list_pods(namespace=namespace, label_selector=pod_selector),
        watch_request=lambda rv, timeout, read_timeout: rq.watch_pods(
            namespace=namespace,
            resource_version=rv,
            timeout_seconds=timeout,
            read_timeout=read_timeout,
            label_selector=pod_selector,
        ),
        settings=session.watch,
    )
    return [
        WatchedStream(
            "tfjobs",
            tfjob_watch,
            tracker.apply_tfjob_event,
            partial(tracker.relist_tfjobs, shrunk=True),
            shrink=tracker.shrink_tfjob,
        ),
        WatchedStream(
            "pods",
            pod_watch,
            tracker.apply_pod_event,
            partial(tracker.relist_pods, shrunk=True),
            shrink=tracker.shrink_pod,
        ),
    ]


def poll_job_snapshots(
    session: Session, name: str, *, namespace: str, tracker: JobTracker
) -> Operation[None]:
    """Polling fallback for one job: every ``poll_interval`` a :func:`read_job`; emit on change."""
    key = (namespace, name)
    last: JobSnapshot | None = None
    while True:
        tfjob, pods = yield from read_job(session, name, namespace=namespace)
        tracker.relist_tfjobs([tfjob] if tfjob is not None else [])
        tracker.relist_pods(pods)
        snapshot = tracker.snapshot(key)
        if snapshot != last:
            yield Emit(snapshot)
            last = snapshot
        yield Sleep(session.watch.poll_interval)


def watch_job(session: Session, name: str, *, namespace: str) -> Operation[None]:
    """Emit a :class:`JobSnapshot` after the initial lists and after every change of the TFJob or
    one of its pods.  Falls back to polling when listing or watching is forbidden."""
    key = (namespace, name)
    tracker = JobTracker(namespace=namespace, only=[key])

    def poll() -> Operation[None]:
        poll_tracker = JobTracker(namespace=namespace, only=[key])
        return poll_job_snapshots(session, name, namespace=namespace, tracker=poll_tracker)

    streams = job_streams(session, tracker, namespace=namespace, job_name=name)
    yield from follow_one_job(session, key, tracker.snapshot, streams, poll=poll)


def follow_one_job(
    session: Session,
    key: JobKey,
    snapshot: Callable[[JobKey], JobSnapshot],
    streams: Sequence[WatchedStream],
    *,
    poll: Callable[[], Operation[None]],
) -> Operation[None]:
    """Run ``streams`` and emit ``snapshot(key)`` after the initial lists and after every change of
    ``key``; when ``watch`` is forbidden, close them and run ``poll()`` instead."""

    def emit(changed: set[JobKey], initial: bool) -> Iterable[Effect]:
        return [Emit(snapshot(key))] if initial or key in changed else []

    try:
        yield from run_list_watches(session, streams, on_changes=emit)
    except ForbiddenError as error:
        if not watch_forbidden(error):
            raise
        for stream in streams:
            if stream.open:
                yield CloseStream(stream.key)
        log.warning("%s — falling back to polling every %.0f s", error.message, session.watch.poll_interval)
        yield from poll()


def watch_forbidden(error: ForbiddenError) -> bool:
    """True when a 403 was for the ``watch`` verb: the one denial polling can work around."""
    return error.rule is not None and error.rule.verb == "watch"


__all__ = [
    "ChangeHandler",
    "WatchedStream",
    "follow_one_job",
    "job_streams",
    "poll_job_snapshots",
    "run_list_watches",
    "watch_forbidden",
    "watch_job",
]
