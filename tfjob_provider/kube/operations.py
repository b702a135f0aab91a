"""Every API operation, written once, as a generator of *effects*.

The problem: the provider needs the same operations from synchronous code (operator, sensor in
a worker) and from asyncio code (the triggerer), and the two Kubernetes clients differ in every
call.  Writing each operation twice doubles the bugs (Airflow's ``pod_manager.py`` branches on
``isinstance(..., AsyncPodManager)`` on every call; kr8s runs an event loop in a thread).

The mechanism: an operation is a generator.  Whenever it needs the outside world it *yields* a
small effect object — :class:`Send` a request, :class:`Sleep`, :class:`OpenStream`,
:class:`NextLine`, :class:`CloseStream`, or :class:`Emit` a value to the consumer — and the driver
sends the result back in (or throws a :class:`~tfjob_provider.kube.errors.KubeApiError` in).  The
operation's ``return`` value is the call's result.  The sync driver performs effects with
``urllib3`` and ``time.sleep``, the async one with ``aiohttp`` and ``await asyncio.sleep``; that
loop of ~30 lines is all each transport contains.  Retries, rate limiting, status mapping, JSON
parsing, the list→watch loop, 410 relists and the polling fallback are therefore written and
unit-tested here once, with no I/O at all (a test drives a generator with scripted responses).

Why generators rather than a request-builder/response-parser pair (lightkube's shape)?  Because
our operations are multi-step: a retry loop, a discovery that may need a second look, a watch that
interleaves two streams with relists and reconnects.  A generator keeps that control flow
readable as straight-line code, and ``yield from`` composes steps (every request goes through
:func:`call`, which applies the token bucket and the retry policy).

Streams: :class:`OpenStream` returns the HTTP response head; lines of *all* open streams then
arrive, tagged by the stream's key, through :class:`NextLine` — the sync transport uses one reader
thread per stream feeding a queue, the async one a task per stream.  Keys carry a generation
number so lines still queued from a stream closed for a relist are recognised and dropped.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, TypeVar

from tfjob_provider.constants import LABEL_OPERATOR_NAME, OPERATOR_NAME, PLURAL
from tfjob_provider.kube import requests as rq
from tfjob_provider.kube.errors import (
    ForbiddenError,
    GoneError,
    KubeApiError,
    NotFoundError,
    TFJobNotServedError,
    error_from_response,
)
from tfjob_provider.kube.ratelimit import TokenBucket
from tfjob_provider.kube.requests import ApiRequest
from tfjob_provider.kube.retry import Outage, RetryPolicy, describe_retry, is_retryable
from tfjob_provider.kube.tracking import JobKey, JobSnapshot, JobTracker
from tfjob_provider.kube.watching import Expired, ListWatch, WatchEvent, WatchSettings

log = logging.getLogger(__name__)

T = TypeVar("T")

# --- effects and their results ------------------------------------------------------------------


@dataclass(frozen=True)
class Send:
    """Perform ``request`` and read the whole body.  Result: :class:`Response` (any status)."""

    request: ApiRequest


@dataclass(frozen=True)
class Sleep:
    """Wait ``seconds``.  Result: ``None``."""

    seconds: float


@dataclass(frozen=True)
class OpenStream:
    """Start streaming ``request`` under ``key``.  Result: :class:`Response` — on a 2xx its body is
    empty and the lines arrive through :class:`NextLine`; otherwise the body is the error body."""

    key: str
    request: ApiRequest


@dataclass(frozen=True)
class NextLine:
    """Wait for the next item of any open stream.  Result: :class:`StreamLine` or :class:`StreamClosed`."""


@dataclass(frozen=True)
class CloseStream:
    """Stop streaming ``key`` and discard what it still had queued.  Result: ``None``."""

    key: str


@dataclass(frozen=True)
class Emit:
    """Hand ``value`` to the consumer of an iterating operation.  Result: ``None``."""

    value: Any


Effect = Send | Sleep | OpenStream | NextLine | CloseStream | Emit


@dataclass(frozen=True)
class Response:
    """A response as the transports report it.

    :param cause: the client library's exception for a non-2xx answer, if it raised one, so that our
        error can be raised ``from`` it.
    """

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    cause: BaseException | None = None


@dataclass(frozen=True)
class StreamLine:
    key: str
    line: bytes


@dataclass(frozen=True)
class StreamClosed:
    """Stream ``key`` ended: cleanly (``error`` None), by ``silent`` inactivity, or by ``error``."""

    key: str
    error: KubeApiError | None = None
    silent: bool = False


Operation = Generator[Effect, Any, T]


@dataclass
class Session:
    """What every operation needs besides its arguments: the shared policies of one connection."""

    retry: RetryPolicy = field(default_factory=RetryPolicy)
    bucket: TokenBucket = field(default_factory=TokenBucket)
    watch: WatchSettings = field(default_factory=WatchSettings)


# --- the building blocks ------------------------------------------------------------------------


def raise_for_status(response: Response, request: ApiRequest) -> None:
    """Raise the mapped error for a non-2xx ``response`` (``from`` the library's exception)."""
    if 200 <= response.status < 300:
        return
    error = error_from_response(response.status, response.body, response.headers, request=request)
    raise error from response.cause


def parse_json(response: Response, request: ApiRequest) -> dict[str, Any]:
    try:
        parsed = json.loads(response.body or b"{}")
    except ValueError as exc:
        raise KubeApiError(
            f"response is not JSON ({request.describe()}): {response.body[:120]!r}", reason="BadResponse"
        ) from exc
    if not isinstance(parsed, dict):
        raise KubeApiError(f"response is not a JSON object ({request.describe()})", reason="BadResponse")
    return parsed


def throttle(session: Session) -> Operation[None]:
    """Take a token from the connection's bucket, sleeping if the bucket is empty."""
    delay = session.bucket.reserve()
    if delay > 0:
        yield Sleep(delay)


def call(session: Session, request: ApiRequest, *, outage: Outage | None = None) -> Operation[Response]:
    """Send ``request`` through the rate limiter and the retry policy; return the 2xx response.

    :param outage: the run of failures this request belongs to (a watch loop shares one across
        its relists); by default the request's own.
    """
    outage = outage if outage is not None else Outage()
    while True:
        yield from throttle(session)
        try:
            response = yield Send(request)
            raise_for_status(response, request)
        except KubeApiError as error:
            yield from back_off(session, outage, error, what=request.describe())
            continue
        outage.over()
        return response  # type: ignore[no-any-return]


def back_off(session: Session, outage: Outage, error: KubeApiError, *, what: str) -> Operation[None]:
    """Sleep as the retry policy says after ``error``, logging the step; re-raise ``error`` once the
    policy gives up (not retryable, or the outage budget is spent)."""
    attempt, elapsed = outage.failed(session.retry.clock)
    wait = session.retry.wait_for(error, attempt=attempt, elapsed=elapsed)
    if wait is None:
        if is_retryable(error) and attempt > 1:
            log.warning(
                "%s: giving up after %d attempts in %.0f s (outage budget %g s): %s",
                what,
                attempt,
                elapsed,
                session.retry.budget,
                error.message,
            )
        raise error
    budget = session.retry.budget
    log.warning(
        "%s: %s", what, describe_retry(error, attempt=attempt, wait=wait, elapsed=elapsed, budget=budget)
    )
    yield Sleep(wait)


def call_json(session: Session, request: ApiRequest) -> Operation[dict[str, Any]]:
    response = yield from call(session, request)
    return parse_json(response, request)


LIST_PAGE_SIZE = 500
"""Items per LIST page: client-go's reflector and kubectl use 500.  Unpaged, one LIST of a busy
namespace's pods is a response of many megabytes that the API server must build in one go (and
that is held whole in the triggerer's memory while it is parsed)."""

LIST_RESTARTS = 3
"""How often a paged LIST starts over when its continue token expires (HTTP 410 between pages)."""


def call_list(
    session: Session,
    request: ApiRequest,
    *,
    send: Callable[[Session, ApiRequest], Operation[Response]] = call,
    page_size: int = LIST_PAGE_SIZE,
    shrink: Callable[[Mapping[str, Any]], Any] | None = None,
) -> Operation[dict[str, Any]]:
    """A LIST read in pages of ``page_size`` (``limit`` + ``continue``), returned as one body.

    ``shrink`` is applied to each item as its page arrives, so what a list holds at its peak is
    the kept copies plus one page of whole objects, not every whole object at once: a triggerer
    listing 10,000 TFJobs and 20,000 pods otherwise decodes hundreds of megabytes it frees a
    moment later, and the freed memory stays with the process (scattered among the kept objects).

    The pages of one LIST are one consistent snapshot, so the result carries the snapshot's
    ``metadata.resourceVersion`` (from the last page) and a watch can start from it exactly as
    after an unpaged LIST.  When the server has compacted the snapshot away between two pages it
    answers 410; the LIST then starts over, as the reflector does.
    """
    for restart in range(LIST_RESTARTS + 1):
        items: list[Any] = []
        token = ""
        try:
            while True:
                query = (*request.query, ("limit", str(page_size)))
                page_request = replace(request, query=(*query, ("continue", token)) if token else query)
                response = yield from send(session, page_request)
                body = parse_json(response, page_request)
                page = body.get("items")
                page = page if isinstance(page, list) else []
                if shrink is not None:
                    page = [shrink(item) if isinstance(item, Mapping) else item for item in page]
                items.extend(page)
                found = body.get("metadata")
                metadata: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
                token = str(metadata.get("continue") or "")
                if not token:
                    return {**body, "metadata": dict(metadata), "items": items}
        except GoneError:
            if not token or restart == LIST_RESTARTS:
                raise
            log.info("%s: the list's continue token expired; listing again", request.describe())
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def _tfjob_call(session: Session, request: ApiRequest) -> Operation[Response]:
    """:func:`call` for tfjobs paths: a 404 without a ``Status`` body means the *type* is not
    served (the API server's plain "404 page not found"), not that the object is missing."""
    try:
        return (yield from call(session, request))
    except NotFoundError as error:
        if error.status_body is None:
            raise TFJobNotServedError(request=request, status=404) from error
        raise


# --- one-shot operations -------------------------------------------------------------------------


def check_tfjob_served(session: Session) -> Operation[None]:
    """Raise :class:`TFJobNotServedError` unless discovery lists ``tfjobs`` in ``kubeflow.org/v1``."""
    request = rq.discover_tfjob_api()
    try:
        body = yield from call_json(session, request)
    except NotFoundError as error:
        raise TFJobNotServedError(request=request, status=404) from error
    resources = body.get("resources")
    names = (
        {r.get("name") for r in resources if isinstance(r, Mapping)} if isinstance(resources, list) else set()
    )
    if PLURAL not in names:
        raise TFJobNotServedError(request=request, status=200)


def create_tfjob(
    session: Session, manifest: Mapping[str, Any], *, namespace: str, dry_run: bool = False
) -> Operation[dict[str, Any]]:
    """Create a TFJob with strict field validation; return the stored object.

    A create retried after an ambiguous failure (timeout, reset) may find its own first attempt
    already stored and get :class:`AlreadyExistsError`; callers that create deterministic names
    (the operator) resolve that by identity labels and UID, which only they know.
    """
    request = rq.create_tfjob(manifest, namespace=namespace, dry_run=dry_run)
    response = yield from _tfjob_call(session, request)
    return parse_json(response, request)


def get_tfjob(session: Session, name: str, *, namespace: str) -> Operation[dict[str, Any]]:
    request = rq.get_tfjob(name, namespace=namespace)
    response = yield from _tfjob_call(session, request)
    return parse_json(response, request)


def delete_tfjob(
    session: Session,
    name: str,
    *,
    namespace: str,
    propagation: str = "Foreground",
    grace_period_seconds: int | None = None,
) -> Operation[bool]:
    """Delete a TFJob; ``False`` when it was already gone."""
    request = rq.delete_tfjob(
        name, namespace=namespace, propagation=propagation, grace_period_seconds=grace_period_seconds
    )
    try:
        yield from _tfjob_call(session, request)
    except NotFoundError:
        return False
    return True


def list_job_pods(session: Session, name: str, *, namespace: str) -> Operation[list[dict[str, Any]]]:
    request = rq.list_pods(namespace=namespace, label_selector=rq.job_pods_selector(name))
    body = yield from call_list(session, request)
    return sorted(_items(body), key=lambda pod: str(_name(pod)))


def read_log_tail(
    session: Session,
    pod: str,
    *,
    namespace: str,
    container: str = "tensorflow",
    tail_lines: int = 100,
    limit_bytes: int = 65536,
    previous: bool = False,
) -> Operation[str]:
    """The last ``tail_lines`` lines (at most ``limit_bytes``), cut by the server: never a whole log."""
    request = rq.read_log(
        pod,
        namespace=namespace,
        container=container,
        tail_lines=tail_lines,
        limit_bytes=limit_bytes,
        previous=previous,
    )
    response = yield from call(session, request)
    return response.body[:limit_bytes].decode("utf-8", "replace")


def list_events(
    session: Session, *, namespace: str, involved_names: Iterable[str]
) -> Operation[list[dict[str, Any]]]:
    """core/v1 events about the given objects, oldest first (one request per name)."""
    events: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(involved_names):
        body = yield from call_list(session, rq.list_events(namespace=namespace, involved_name=name))
        for event in _items(body):
            events[str(_meta(event, "uid") or id(event))] = event
    return sorted(events.values(), key=_event_time)


def _event_time(event: Mapping[str, Any]) -> str:
    for key in ("lastTimestamp", "eventTime", "firstTimestamp"):
        value = event.get(key)
        if value:
            return str(value)
    return str(_meta(event, "creationTimestamp") or "")


# --- streaming operations ----------------------------------------------------------------------


def follow_log(
    session: Session,
    pod: str,
    *,
    namespace: str,
    container: str = "tensorflow",
    since_seconds: int | None = None,
) -> Operation[None]:
    """Emit the lines (``str``, without newline) of a followed log until the container ends."""
    request = rq.read_log(
        pod, namespace=namespace, container=container, follow=True, since_seconds=since_seconds
    )
    outage = Outage()
    while True:
        yield from throttle(session)
        response = yield OpenStream("log", request)
        try:
            raise_for_status(response, request)
            break
        except KubeApiError as error:
            yield from back_off(session, outage, error, what=request.describe())
    while True:
        item = yield NextLine()
        if isinstance(item, StreamLine):
            yield Emit(item.line.decode("utf-8", "replace").rstrip("\r"))
        elif isinstance(item, StreamClosed):
            if item.error is not None and not item.silent:
                raise item.error
            return


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


def read_job(
    session: Session, name: str, *, namespace: str
) -> Operation[tuple[dict[str, Any] | None, list[dict[str, Any]]]]:
    """The TFJob (``None``, and no pods, if absent) and its pods straight from the API server: one
    LIST and one GET, pods first.  The training operator writes a terminal condition before it
    acts on pods because of it (cleanPodPolicy), so a TFJob read after its pods is at least as
    new as every pod change it caused (``wait_outcome.FRESH_READ_ORDER``).  Every fresh read —
    confirmations, deadlines, polls — goes through here, sync and async alike."""
    pods = yield from list_job_pods(session, name, namespace=namespace)
    try:
        tfjob: dict[str, Any] | None = yield from get_tfjob(session, name, namespace=namespace)
    except NotFoundError:
        return None, []
    return tfjob, pods


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

    def emit(changed: set[JobKey], initial: bool) -> Iterable[Effect]:
        return [Emit(tracker.snapshot(key))] if initial or key in changed else []

    streams = job_streams(session, tracker, namespace=namespace, job_name=name)
    try:
        yield from run_list_watches(session, streams, on_changes=emit)
    except ForbiddenError as error:
        if not watch_forbidden(error):
            raise
        for stream in streams:
            if stream.open:
                yield CloseStream(stream.key)
        log.warning("%s — falling back to polling every %.0f s", error.message, session.watch.poll_interval)
        poll_tracker = JobTracker(namespace=namespace, only=[key])
        yield from poll_job_snapshots(session, name, namespace=namespace, tracker=poll_tracker)


def watch_forbidden(error: ForbiddenError) -> bool:
    """True when a 403 was for the ``watch`` verb: the one denial polling can work around."""
    return error.rule is not None and error.rule.verb == "watch"


# --- small helpers -----------------------------------------------------------------------------


def _items(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    items = body.get("items")
    return [dict(item) for item in items if isinstance(item, Mapping)] if isinstance(items, list) else []


def _meta(obj: Mapping[str, Any], key: str) -> Any:
    metadata = obj.get("metadata")
    return metadata.get(key) if isinstance(metadata, Mapping) else None


def _name(obj: Mapping[str, Any]) -> Any:
    return _meta(obj, "name")


def stoppable(operation: Operation[T], stopping: threading.Event) -> Operation[T | None]:
    """Pass every effect of ``operation`` through; end it at the first result after ``stopping`` is set.

    The synchronous transport blocks its driving thread until the next line of an open stream
    arrives, and a generator cannot be closed from another thread while it runs.  Wrapped like
    this, a watch or log stream ends at its next line, bookmark, timeout or error once the waiter
    no longer needs it (the transport then closes its streams), instead of reconnecting forever.
    """
    try:
        effect = next(operation)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    try:
        while True:
            try:
                result = yield effect
            except GeneratorExit:
                raise
            except BaseException as error:  # an effect failed: the operation decides, unless we stop
                if stopping.is_set():
                    return None
                try:
                    effect = operation.throw(error)
                except StopIteration as stop:
                    return stop.value  # type: ignore[no-any-return]
                continue
            if stopping.is_set():
                return None
            try:
                effect = operation.send(result)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
    finally:
        operation.close()


__all__ = [
    "LIST_PAGE_SIZE",
    "CloseStream",
    "Effect",
    "Emit",
    "NextLine",
    "OpenStream",
    "Operation",
    "Response",
    "Send",
    "Session",
    "Sleep",
    "StreamClosed",
    "StreamLine",
    "WatchedStream",
    "back_off",
    "call",
    "call_json",
    "call_list",
    "check_tfjob_served",
    "create_tfjob",
    "delete_tfjob",
    "follow_log",
    "get_tfjob",
    "job_streams",
    "list_events",
    "list_job_pods",
    "poll_job_snapshots",
    "raise_for_status",
    "read_job",
    "read_log_tail",
    "run_list_watches",
    "stoppable",
    "watch_forbidden",
    "watch_job",
]
