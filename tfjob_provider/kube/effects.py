"""The effects an operation yields to its transport, the results it gets back, and :func:`stoppable`.

An :data:`Operation` is a generator of :data:`Effect`; :mod:`.sync_client` and :mod:`.async_client`
perform them (docs/adr/0004-one-effect-core-two-transports.md).
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tfjob_provider.kube.errors import KubeApiError
from tfjob_provider.kube.requests import ApiRequest

T = TypeVar("T")


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
    "CloseStream",
    "Effect",
    "Emit",
    "NextLine",
    "OpenStream",
    "Operation",
    "Response",
    "Send",
    "Sleep",
    "StreamClosed",
    "StreamLine",
    "stoppable",
]
