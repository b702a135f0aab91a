"""Sleeping until a wall-clock instant in steps of at most :data:`CLOCK_CHECK_SECONDS`, so a clock
step never delays a rule by more: :func:`sleep_seconds` for a thread, :class:`WallClockAlarms` for an
asyncio loop (all alarms on one timer). docs/adr/0034-timers-from-the-verdict-engine.md says why.
"""

from __future__ import annotations

import asyncio
import heapq
import time
import weakref
from collections.abc import Callable
from datetime import datetime
from typing import ClassVar, Final

#: Longest sleep towards an instant before the wall clock is read again (the 1 s bound on lateness).
CLOCK_CHECK_SECONDS: Final = 1.0
#: The loop timer is moved earlier only for an alarm due more than this much sooner than it fires.
_RESOLUTION: Final = 0.001


def sleep_seconds(wake_at: datetime | None, now: datetime) -> float | None:
    """How long a thread may sleep at ``now`` before it must look at the clock: None for "until an event"."""
    if wake_at is None:
        return None
    return max(0.0, min((wake_at - now).total_seconds(), CLOCK_CHECK_SECONDS))


class Alarm:
    """One pending callback of :class:`WallClockAlarms`; :meth:`cancel` it when no longer wanted."""

    __slots__ = ("_owner", "callback", "done")

    def __init__(self, owner: WallClockAlarms, callback: Callable[[], None]) -> None:
        self._owner = owner
        self.callback = callback
        self.done = False

    def cancel(self) -> None:
        if not self.done:
            self.done = True
            self._owner._cancelled()


class WallClockAlarms:
    """Callbacks at wall-clock instants for one event loop, on a single loop timer.

    Use :meth:`of` for the running loop's instance.  The timer is set only while an alarm is
    pending: for the earliest instant, or :data:`CLOCK_CHECK_SECONDS` ahead if that is sooner.
    ``clock`` (seconds since the epoch) is injectable for tests.
    """

    _by_loop: ClassVar[weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, WallClockAlarms]] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        clock: Callable[[], float] = time.time,
        check_seconds: float = CLOCK_CHECK_SECONDS,
    ) -> None:
        self._loop = loop
        self._clock = clock
        self._check_seconds = check_seconds
        self._heap: list[tuple[float, int, Alarm]] = []
        self._sequence = 0
        self._pending = 0
        self._timer: asyncio.TimerHandle | None = None

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop) -> WallClockAlarms:
        alarms = cls._by_loop.get(loop)
        if alarms is None:
            alarms = cls._by_loop[loop] = cls(loop)
        return alarms

    @property
    def pending(self) -> int:
        return self._pending

    def at(self, when: datetime, callback: Callable[[], None]) -> Alarm:
        """Call ``callback`` (in the loop) once the wall clock reads ``when`` or later."""
        alarm = Alarm(self, callback)
        self._sequence += 1
        heapq.heappush(self._heap, (when.timestamp(), self._sequence, alarm))
        self._pending += 1
        self._schedule()
        return alarm

    def _cancelled(self) -> None:
        self._pending -= 1
        if len(self._heap) > 2 * self._pending + 64:  # drop cancelled entries now and then
            self._heap = [entry for entry in self._heap if not entry[2].done]
            heapq.heapify(self._heap)
        if self._pending == 0 and self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _schedule(self) -> None:
        heap = self._heap
        while heap and heap[0][2].done:
            heapq.heappop(heap)
        if not heap:
            return
        delay = min(max(heap[0][0] - self._clock(), 0.0), self._check_seconds)
        target = self._loop.time() + delay
        if self._timer is not None:
            if self._timer.when() <= target + _RESOLUTION:
                return  # it fires sooner (or near enough), and looks again then
            self._timer.cancel()
        self._timer = self._loop.call_at(target, self._tick)

    def _tick(self) -> None:
        self._timer = None
        now = self._clock()
        # self._heap, not a local: a callback that cancels alarms may replace the list.
        while self._heap and (self._heap[0][2].done or self._heap[0][0] <= now):
            _, _, alarm = heapq.heappop(self._heap)
            if not alarm.done:
                alarm.done = True
                self._pending -= 1
                alarm.callback()
        self._schedule()


__all__ = ["CLOCK_CHECK_SECONDS", "Alarm", "WallClockAlarms", "sleep_seconds"]
