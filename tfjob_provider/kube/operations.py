"""The API operations as generators of :mod:`.effects`: :func:`call` (token bucket and retry policy),
paged lists, and the TFJob, pod, log and event operations (docs/adr/0004-one-effect-core-two-transports.md).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tfjob_provider.constants import PLURAL
from tfjob_provider.kube import requests as rq
from tfjob_provider.kube.effects import (
    Emit,
    NextLine,
    OpenStream,
    Operation,
    Response,
    Send,
    Sleep,
    StreamClosed,
    StreamLine,
)
from tfjob_provider.kube.errors import (
    GoneError,
    KubeApiError,
    NotFoundError,
    TFJobNotServedError,
    error_from_response,
)
from tfjob_provider.kube.ratelimit import TokenBucket
from tfjob_provider.kube.requests import ApiRequest
from tfjob_provider.kube.retry import Outage, RetryPolicy, describe_retry, is_retryable
from tfjob_provider.kube.watching import WatchSettings

log = logging.getLogger(__name__)


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


def read_job(
    session: Session, name: str, *, namespace: str
) -> Operation[tuple[dict[str, Any] | None, list[dict[str, Any]]]]:
    """The TFJob (``None``, and no pods, if absent) and its pods straight from the API server: one
    LIST and one GET, pods first.  The training operator writes a terminal condition before it
    acts on pods because of it (cleanPodPolicy), so a TFJob read after its pods is at least as
    new as every pod change it caused (``_outcome.wait.FRESH_READ_ORDER``).  Every fresh read —
    confirmations, deadlines, polls — goes through here, sync and async alike."""
    pods = yield from list_job_pods(session, name, namespace=namespace)
    try:
        tfjob: dict[str, Any] | None = yield from get_tfjob(session, name, namespace=namespace)
    except NotFoundError:
        return None, []
    return tfjob, pods


# --- small helpers -----------------------------------------------------------------------------


def _items(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    items = body.get("items")
    return [dict(item) for item in items if isinstance(item, Mapping)] if isinstance(items, list) else []


def _meta(obj: Mapping[str, Any], key: str) -> Any:
    metadata = obj.get("metadata")
    return metadata.get(key) if isinstance(metadata, Mapping) else None


def _name(obj: Mapping[str, Any]) -> Any:
    return _meta(obj, "name")


__all__ = [
    "LIST_PAGE_SIZE",
    "Session",
    "back_off",
    "call",
    "call_json",
    "call_list",
    "check_tfjob_served",
    "create_tfjob",
    "delete_tfjob",
    "follow_log",
    "get_tfjob",
    "list_events",
    "list_job_pods",
    "raise_for_status",
    "read_job",
    "read_log_tail",
    "throttle",
]
