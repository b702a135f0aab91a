"""``WorkQueue``: the keys a controller must process, drained on the event loop (each key once per
pass however often it was added), with delayed re-adds — client-go's work queue, on asyncio.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    """Call ``process(key)`` for every key added while running; ``on_error(key)`` when it raises.

    ``before_pass`` runs at the start of every drain (a controller's own housekeeping).  Use on one
    event loop only: :meth:`start` takes the running loop.
    """

    def __init__(
        self,
        process: Callable[[K], None],
        *,
        on_error: Callable[[K], None],
        before_pass: Callable[[], None] | None = None,
    ) -> None:
        self._process = process
        self._on_error = on_error
        self._before_pass = before_pass
        self._keys: set[K] = set()
        self._timers: dict[K, asyncio.TimerHandle] = {}
        self._drain_handle: asyncio.Handle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._running = False

    @property
    def running(self) -> bool:
        return self._running

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._running = True

    def stop(self) -> None:
        """Stop draining; pending keys and timers are dropped."""
        self._running = False
        if self._drain_handle is not None:
            self._drain_handle.cancel()
            self._drain_handle = None
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._keys.clear()

    def add(self, key: K) -> None:
        if not self._running:
            return
        self._keys.add(key)
        self.wake()

    def wake(self) -> None:
        """Schedule a drain (for ``before_pass`` work) if none is scheduled."""
        if self._running and self._loop is not None and self._drain_handle is None:
            self._drain_handle = self._loop.call_soon(self._drain)

    def add_after(self, key: K, delay: float) -> None:
        """Add ``key`` in ``delay`` seconds, replacing an earlier delayed add of it."""
        if self._loop is None or not self._running:
            return
        self.forget(key)
        self._timers[key] = self._loop.call_later(max(delay, 0.0), self._fire, key)

    def forget(self, key: K) -> None:
        """Cancel the delayed add of ``key``, if any."""
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def _fire(self, key: K) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def _drain(self) -> None:
        self._drain_handle = None
        if self._before_pass is not None:
            self._before_pass()
        while self._keys and self._running:
            key = self._keys.pop()
            try:
                self._process(key)
            except Exception:
                self._on_error(key)
