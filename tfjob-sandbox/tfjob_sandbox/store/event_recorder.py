"""``record_event(store, ...)``: a core/v1 Event, aggregated by ``count`` like client-go's recorder."""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING, Any

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.api.resource_types import EVENTS

if TYPE_CHECKING:
    from tfjob_sandbox.store.store import Store

log = logging.getLogger(__name__)

_AggregationKey = tuple[str, str, str, str, str, str]
_recent: weakref.WeakKeyDictionary[Store, dict[_AggregationKey, tuple[str, str]]] = (
    weakref.WeakKeyDictionary()
)


def record_event(
    store: Store,
    *,
    involved: dict[str, Any],
    reason: str,
    message: str,
    type: str = "Normal",
    component: str,
    host: str | None = None,
) -> dict[str, Any]:
    """Record (or aggregate into an existing) core/v1 Event about ``involved``; returns the Event.

    :param involved: the object the event is about, as stored (kind/apiVersion/metadata are read).
    :param reason: short CamelCase reason, e.g. ``SuccessfulCreatePod``.
    :param message: human-readable message.
    :param type: ``Normal`` or ``Warning``.
    :param component: the reporting component, e.g. ``tfjob-controller`` or ``kubelet``.
    :param host: the node name for node-level components (``source.host``).
    """
    from tfjob_sandbox.store.store import format_time

    meta = involved.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    key = (component, meta.get("uid", ""), meta.get("name", ""), type, reason, message)
    now_time = store.clock()
    now = format_time(now_time)
    known = _recent.setdefault(store, {})
    existing = known.get(key)
    if existing is not None:
        event_ns, event_name = existing

        def bump(event: dict[str, Any]) -> None:
            event["count"] = int(event.get("count") or 1) + 1
            event["lastTimestamp"] = now

        try:
            return store.mutate(EVENTS, event_name, bump, namespace=event_ns)
        except ApiError:
            known.pop(key, None)  # the aggregated event was deleted; start a new one
    involved_object = {
        "kind": involved.get("kind", ""),
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "apiVersion": involved.get("apiVersion", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    source: dict[str, str] = {"component": component}
    if host:
        source["host"] = host
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            # client-go names events "<object>.<unix nanoseconds in hex>".
            "name": f"{meta.get('name', 'unknown')}.{int(now_time.timestamp() * 1e9):x}",
            "namespace": namespace,
        },
        "involvedObject": {k: v for k, v in involved_object.items() if v},
        "reason": reason,
        "message": message,
        "source": source,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "type": type,
        "eventTime": None,
        "reportingComponent": component,
        "reportingInstance": host or "",
    }
    try:
        created = _create_unique(store, event)
    except ApiError as error:
        # The real recorder drops events it cannot write (e.g. the namespace is terminating).
        log.info("sandbox event %s/%s dropped: %s", reason, meta.get("name"), error.message)
        return event
    known[key] = (namespace, created["metadata"]["name"])
    return created


def _create_unique(store: Store, event: dict[str, Any]) -> dict[str, Any]:
    base = event["metadata"]["name"]
    for attempt in range(100):
        if attempt:
            event["metadata"]["name"] = f"{base}{attempt:x}"
        try:
            return store.create(EVENTS, event)
        except ApiError as error:
            if error.code != 409:
                raise
    raise ApiError(409, "AlreadyExists", f'events "{base}" already exists')
