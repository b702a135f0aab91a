"""The list→watch protocol as a state machine without I/O (:class:`ListWatch`, :class:`WatchSettings`,
:class:`LineBuffer`; docs/adr/0021-list-watch-as-a-state-machine.md).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tfjob_provider.kube.errors import GoneError, KubeApiError, error_from_watch_status
from tfjob_provider.kube.requests import ApiRequest


@dataclass(frozen=True)
class WatchSettings:
    """Timing of watch streams and of the polling fallback.  Each default says why it is what it is."""

    inactivity_timeout: float = 70.0
    """Seconds without a byte after which a stream is reopened.  The API server's watch cache sends
    a bookmark about every 60 s (``defaultBookmarkFrequency``) and keeps events for 75 s
    (``eventFreshDuration``): 70 s is longer than one bookmark gap yet short enough to resume
    from our RV inside the fresh window, without a 410 and a relist (kopf uses the same number)."""

    server_timeout_min: int = 300
    """Lower bound of the ``timeoutSeconds`` asked of the server: client-go's ``minWatchTimeout``
    (5 min).  Streams are renewed every few minutes so a stuck one cannot live forever."""

    server_timeout_max: int = 600
    """Upper bound (2 x the minimum, as client-go does), spreading reconnects of many streams."""

    reconnect_delay: float = 0.1
    """Pause before reopening a stream the server ended normally — kopf's ``reconnect_backoff``:
    enough to avoid a hot loop against a server that closes at once, too short to miss anything
    (we resume from the RV)."""

    poll_interval: float = 10.0
    """Polling period when the ``watch`` verb is forbidden: the KubernetesJobTrigger's 10 s.
    Two requests per job per poll = 12 per job per minute, the price of not being allowed to
    watch; faster polling cannot beat the kubelet's 1 s PLEG anyway."""

    def random_server_timeout(self, rng: Callable[[], float] = random.random) -> int:
        span = self.server_timeout_max - self.server_timeout_min
        return int(self.server_timeout_min + span * rng())


@dataclass(frozen=True)
class WatchEvent:
    """One ``ADDED``/``MODIFIED``/``DELETED`` event with its object."""

    type: str
    object: Mapping[str, Any]


@dataclass(frozen=True)
class Expired:
    """The stream reported 410 Gone (event form): close it and list again."""

    message: str = ""


#: What :meth:`ListWatch.on_line` returns: an event to apply, an expiry, or ``None`` (bookmark, blank).
LineResult = WatchEvent | Expired | None


class ListWatch:
    """State of one list-then-watch stream (one resource type, one selector).

    :param list_request: builds the LIST request.
    :param watch_request: builds the WATCH request from ``(resource_version, timeout_seconds,
        read_timeout)``.
    :param settings: timings.
    :param rng: randomness for the server timeout (injected for tests).
    """

    def __init__(
        self,
        *,
        list_request: Callable[[], ApiRequest],
        watch_request: Callable[[str, int, float], ApiRequest],
        settings: WatchSettings | None = None,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self._list_request = list_request
        self._watch_request = watch_request
        self.settings = settings or WatchSettings()
        self._rng = rng
        self.resource_version: str | None = None
        self.last_request: ApiRequest | None = None

    @property
    def needs_list(self) -> bool:
        return self.resource_version is None

    def next_request(self) -> ApiRequest:
        """The LIST when no RV is known, else a WATCH from the last RV."""
        if self.resource_version is None:
            request = self._list_request()
        else:
            request = self._watch_request(
                self.resource_version,
                self.settings.random_server_timeout(self._rng),
                self.settings.inactivity_timeout,
            )
        self.last_request = request
        return request

    def on_list(self, body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """Record a LIST response's RV and return its items."""
        metadata = body.get("metadata")
        version = metadata.get("resourceVersion") if isinstance(metadata, Mapping) else None
        if not version:
            raise KubeApiError("LIST response carries no metadata.resourceVersion", reason="BadList")
        self.resource_version = str(version)
        items = body.get("items")
        return [item for item in items if isinstance(item, Mapping)] if isinstance(items, list) else []

    def on_line(self, line: bytes | str) -> LineResult:
        """Interpret one line of a watch stream; raise on a non-410 ``ERROR`` event."""
        text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
        if not text.strip():
            return None
        try:
            event = json.loads(text)
        except ValueError as exc:
            raise KubeApiError(f"malformed watch event: {text[:120]!r}", reason="BadWatchEvent") from exc
        if not isinstance(event, Mapping):
            raise KubeApiError(f"malformed watch event: {text[:120]!r}", reason="BadWatchEvent")
        kind = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, Mapping):
            obj = {}
        if kind == "ERROR":
            error = error_from_watch_status(obj, request=self.last_request)
            if isinstance(error, GoneError):
                return self.on_gone(error.message)
            raise error
        version = _resource_version(obj)
        if version:
            self.resource_version = version
        if kind == "BOOKMARK":
            return None
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            return WatchEvent(str(kind), obj)
        return None  # unknown event types are ignored, as client-go does

    def on_gone(self, message: str = "") -> Expired:
        """410 in either form: forget the RV so the next request is a LIST."""
        self.resource_version = None
        return Expired(message)

    def on_error(self, error: KubeApiError) -> Expired:
        """An HTTP error opening the watch: 410 → relist; anything else is the caller's to handle."""
        if isinstance(error, GoneError):
            return self.on_gone(error.message)
        raise error

    def on_silence(self) -> None:
        """No byte for ``inactivity_timeout``: reopen from the same RV (nothing to forget)."""

    def on_end(self) -> None:
        """The server closed the stream (its ``timeoutSeconds``): reopen from the same RV."""


def _resource_version(obj: Mapping[str, Any]) -> str | None:
    metadata = obj.get("metadata")
    if isinstance(metadata, Mapping):
        version = metadata.get("resourceVersion")
        if version:
            return str(version)
    return None


@dataclass
class LineBuffer:
    """Split a byte stream into lines whatever the chunking (watch events are newline-delimited)."""

    max_line_bytes: int = 16 * 1024 * 1024
    _pending: bytearray = field(default_factory=bytearray)

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        self._pending.extend(chunk)
        while True:
            index = self._pending.find(b"\n")
            if index < 0:
                break
            line = bytes(self._pending[:index])
            del self._pending[: index + 1]
            yield line
        if len(self._pending) > self.max_line_bytes:
            raise KubeApiError("watch line longer than the limit", reason="LineTooLong")

    def flush(self) -> Iterator[bytes]:
        if self._pending:
            line = bytes(self._pending)
            self._pending.clear()
            yield line


__all__ = ["Expired", "LineBuffer", "LineResult", "ListWatch", "WatchEvent", "WatchSettings"]
