"""The TFJob tab's reads from the API server, as :mod:`tfjob_provider.kube.operations` generators.

A view costs one GET of the TFJob, one LIST of its pods by label selector and one LIST of the
namespace's events (field selectors cannot name several objects; the events are filtered here).
Every request carries a short read timeout; the caller's session decides retries (none).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

from tfjob_provider.kube import operations as ops
from tfjob_provider.kube import requests as rq
from tfjob_provider.kube.effects import Operation
from tfjob_provider.kube.errors import NotFoundError
from tfjob_provider.kube.kinds import JOBSET

#: Seconds a view's request may stay silent before it is abandoned.
READ_TIMEOUT_SECONDS: Final = 3.0
#: Events listed per page, and pages read at most (a namespace with more events is cut).
EVENTS_PAGE_SIZE: Final = 2000
MAX_EVENT_PAGES: Final = 2


@dataclass(frozen=True)
class LiveState:
    """What one live read returned; ``tfjob`` None when the TFJob does not exist."""

    tfjob: Mapping[str, Any] | None
    pods: list[dict[str, Any]]
    events: list[dict[str, Any]] | None
    events_cut: bool = False


def _quick(request: rq.ApiRequest) -> rq.ApiRequest:
    return dataclasses.replace(request, read_timeout=READ_TIMEOUT_SECONDS)


def namespace_events_request(namespace: str) -> rq.ApiRequest:
    return rq.ApiRequest(
        "GET",
        f"/api/v1/namespaces/{quote(namespace, safe='')}/events",
        headers={"Accept": "application/json"},
        rbac=rq.RbacRule("list", "", "events", namespace),
        read_timeout=READ_TIMEOUT_SECONDS,
    )


def list_namespace_events(
    session: ops.Session, namespace: str
) -> Operation[tuple[list[dict[str, Any]], bool]]:
    """The namespace's events, at most :data:`MAX_EVENT_PAGES` pages; True if more were left."""
    request = namespace_events_request(namespace)
    items: list[dict[str, Any]] = []
    token = ""
    for _ in range(MAX_EVENT_PAGES):
        query = (("limit", str(EVENTS_PAGE_SIZE)), *((("continue", token),) if token else ()))
        page = dataclasses.replace(request, query=query)
        response = yield from ops.call(session, page)
        body = ops.parse_json(response, page)
        found = body.get("items")
        items.extend(item for item in (found if isinstance(found, list) else []) if isinstance(item, dict))
        metadata = body.get("metadata")
        token = str(metadata.get("continue") or "") if isinstance(metadata, Mapping) else ""
        if not token:
            return items, False
    return items, True


def list_pods(session: ops.Session, name: str, namespace: str) -> Operation[list[dict[str, Any]]]:
    """The TFJob's pods (one LIST by label selector), sorted by name."""
    request = _quick(rq.list_pods(namespace=namespace, label_selector=rq.job_pods_selector(name)))
    body = yield from ops.call_list(session, request)
    found = body.get("items")
    pods = [item for item in (found if isinstance(found, list) else []) if isinstance(item, dict)]
    return sorted(pods, key=lambda pod: str((pod.get("metadata") or {}).get("name")))


def read_live(
    session: ops.Session, name: str, namespace: str, *, backend: str = "tfjob"
) -> Operation[LiveState]:
    """GET the TFJob; when it exists, LIST its pods and the namespace's events.  A JobSet
    (``backend="jobset"``) is read with its Jobs and pods as its TFJob view."""
    if backend == JOBSET.backend:
        view, view_pods = yield from JOBSET.read(session, name, namespace=namespace)
        if view is None:
            return LiveState(tfjob=None, pods=[], events=None)
        events, cut = yield from list_namespace_events(session, namespace)
        return LiveState(tfjob=view, pods=view_pods, events=events, events_cut=cut)
    try:
        response = yield from ops.call(session, _quick(rq.get_tfjob(name, namespace=namespace)))
    except NotFoundError:
        return LiveState(tfjob=None, pods=[], events=None)
    tfjob = ops.parse_json(response, rq.get_tfjob(name, namespace=namespace))
    pods = yield from list_pods(session, name, namespace)
    events, cut = yield from list_namespace_events(session, namespace)
    return LiveState(tfjob=tfjob, pods=pods, events=events, events_cut=cut)


def read_log_tail(
    session: ops.Session, pod: str, namespace: str, *, lines: int, limit_bytes: int
) -> Operation[bytes]:
    """The last ``lines`` lines of the ``tensorflow`` container's log, at most ``limit_bytes``."""
    request = _quick(
        rq.read_log(
            pod, namespace=namespace, container="tensorflow", tail_lines=lines, limit_bytes=limit_bytes
        )
    )
    response = yield from ops.call(session, request)
    body: bytes = response.body[:limit_bytes]
    return body


__all__ = [
    "EVENTS_PAGE_SIZE",
    "MAX_EVENT_PAGES",
    "READ_TIMEOUT_SECONDS",
    "LiveState",
    "list_namespace_events",
    "list_pods",
    "namespace_events_request",
    "read_live",
    "read_log_tail",
]
