"""Waiting until a rule's instant with a fake wall clock: steps forward and back, a suspended machine.

The instants are wall-clock times; sleeps run on the monotonic clock.  These tests move a fake wall
clock under a real event loop (:class:`WallClockAlarms`) and under the worker wait's loop
(:func:`sleep_seconds` driven by a fake feed) and hold both to the promise: a rule fires at most
:data:`CLOCK_CHECK_SECONDS` (1 s) after the wall clock passes its instant, never before it.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from tests.unit.factories import NOW, make_pod, make_tfjob
from tfjob_provider._outcome.wait import WaitTarget
from tfjob_provider._outcome.wait_clock import CLOCK_CHECK_SECONDS, WallClockAlarms, sleep_seconds
from tfjob_provider.kube.tracking import JobSnapshot
from tfjob_provider.operators import _worker_wait
from tfjob_provider.policy import REASON_PENDING_TIMEOUT, Rules

#: What the event loop itself may add to a timer in a busy test process.
LOOP_SLACK = 0.25


def in_loop(test: Callable[[], Awaitable[None]]) -> Callable[[], None]:
    @functools.wraps(test)
    def run() -> None:
        asyncio.run(test())  # type: ignore[arg-type]

    return run


class FakeWallClock:
    """Real time plus an offset the test steps; ``time()`` is what ``time.time`` would say."""

    def __init__(self) -> None:
        self.offset = 0.0

    def time(self) -> float:
        return time.time() + self.offset

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.time(), timezone.utc)


async def fired_after(
    alarms: WallClockAlarms, when: datetime, during: Callable[[], Awaitable[None]]
) -> float:
    """Seconds (monotonic) from the start of ``during`` until the alarm at ``when`` fires."""
    fired = asyncio.Event()
    alarms.at(when, fired.set)
    started = time.monotonic()
    await during()
    await asyncio.wait_for(fired.wait(), timeout=10)
    return time.monotonic() - started


@in_loop
async def test_an_alarm_fires_at_its_instant() -> None:
    clock = FakeWallClock()
    alarms = WallClockAlarms(asyncio.get_running_loop(), clock=clock.time)
    fired_at: list[float] = []
    when = clock.now() + timedelta(seconds=0.3)
    alarms.at(when, lambda: fired_at.append(clock.time()))
    await asyncio.sleep(0.3 + LOOP_SLACK)
    assert len(fired_at) == 1
    assert 0 <= fired_at[0] - when.timestamp() < LOOP_SLACK


@in_loop
async def test_a_forward_step_of_the_clock_fires_an_hour_away_alarm_within_a_second() -> None:
    clock = FakeWallClock()
    alarms = WallClockAlarms(asyncio.get_running_loop(), clock=clock.time)

    async def step_forward() -> None:
        await asyncio.sleep(0.2)
        clock.offset += 3600  # NTP step, or a VM resumed after an hour: the monotonic clock did not move

    when = clock.now() + timedelta(minutes=59)
    started = time.monotonic()
    elapsed = await fired_after(alarms, when, step_forward)
    late = elapsed - (0.2)  # the rule's instant passed at the step
    assert late <= CLOCK_CHECK_SECONDS + LOOP_SLACK, f"fired {late:.2f} s after the clock passed its instant"
    assert time.monotonic() - started >= 0.2


@in_loop
async def test_a_backward_step_never_fires_an_alarm_early() -> None:
    clock = FakeWallClock()
    alarms = WallClockAlarms(asyncio.get_running_loop(), clock=clock.time)
    fired_at: list[float] = []
    when = clock.now() + timedelta(seconds=0.5)
    alarms.at(when, lambda: fired_at.append(clock.time()))
    await asyncio.sleep(0.1)
    clock.offset -= 1.0  # the clock steps back: the instant is now 1.4 s away
    await asyncio.sleep(0.9)
    assert fired_at == []
    await asyncio.sleep(0.5 + CLOCK_CHECK_SECONDS + LOOP_SLACK)
    assert len(fired_at) == 1 and fired_at[0] >= when.timestamp()
    assert fired_at[0] - when.timestamp() <= CLOCK_CHECK_SECONDS + LOOP_SLACK


@in_loop
async def test_cancelled_alarms_never_fire_and_an_idle_clock_sets_no_timer() -> None:
    clock = FakeWallClock()
    reads = [0]

    def counted() -> float:
        reads[0] += 1
        return clock.time()

    alarms = WallClockAlarms(asyncio.get_running_loop(), clock=counted)
    fired: list[int] = []
    handles = [
        alarms.at(clock.now() + timedelta(seconds=0.1 * i), functools.partial(fired.append, i))
        for i in range(200)
    ]
    for handle in handles:
        handle.cancel()
    assert alarms.pending == 0
    reads[0] = 0
    await asyncio.sleep(CLOCK_CHECK_SECONDS * 1.5)
    assert fired == [] and reads[0] == 0  # no wake-up at all while nothing is pending


@in_loop
async def test_ten_thousand_alarms_share_one_timer_and_fire_in_order() -> None:
    clock = FakeWallClock()
    alarms = WallClockAlarms(asyncio.get_running_loop(), clock=clock.time)
    fired: list[int] = []
    base = clock.now() + timedelta(seconds=0.2)
    for index in reversed(range(10_000)):
        alarms.at(base + timedelta(microseconds=index), functools.partial(fired.append, index))
    scheduled = asyncio.get_running_loop()._scheduled  # type: ignore[attr-defined]
    assert len([handle for handle in scheduled if not handle.cancelled()]) == 1
    await asyncio.sleep(0.2 + LOOP_SLACK)
    assert fired == list(range(10_000)) and alarms.pending == 0


def test_sleep_seconds_never_sleeps_past_a_clock_check() -> None:
    assert sleep_seconds(None, NOW) is None
    assert sleep_seconds(NOW + timedelta(hours=2), NOW) == CLOCK_CHECK_SECONDS
    assert sleep_seconds(NOW + timedelta(seconds=0.25), NOW) == 0.25
    assert sleep_seconds(NOW - timedelta(seconds=5), NOW) == 0.0


# -- the worker wait's loop on a fake clock ---------------------------------------------------------


class SimulatedClocks:
    """A wall clock and a monotonic clock that only move when the wait sleeps (or the test steps)."""

    def __init__(self, start: datetime) -> None:
        self.wall = start
        self.monotonic = 0.0
        self.steps: list[tuple[float, timedelta]] = []  # (at monotonic time, wall-clock step)

    def sleep(self, seconds: float) -> None:
        end = self.monotonic + seconds
        for at, step in sorted(self.steps):
            if self.monotonic < at <= end:
                self.wall += step
        self.wall += timedelta(seconds=seconds)
        self.monotonic = end


class SimulatedFeed:
    """One snapshot, then silence: only the clock can end the wait."""

    def __init__(self, snapshot: JobSnapshot, clocks: SimulatedClocks) -> None:
        self.snapshot = snapshot
        self.clocks = clocks
        self.ended = False
        self.error: BaseException | None = None
        self.sleeps: list[float | None] = []

    def take(self) -> JobSnapshot:
        return self.snapshot

    def wait(self, seconds: float | None) -> None:
        self.sleeps.append(seconds)
        if seconds is None:
            raise AssertionError("the wait slept with no instant to wake at, so a rule can never fire")
        if len(self.sleeps) > 100_000:
            raise AssertionError("the wait never ends")
        self.clocks.sleep(seconds)


class StateClient:
    """The fresh read a provider-judged failure is confirmed with: the same state again."""

    session = None

    def __init__(self, snapshot: JobSnapshot) -> None:
        self.snapshot = snapshot

    def run(self, _operation: Any) -> tuple[Any, Any]:
        return self.snapshot.tfjob, list(self.snapshot.pods)


@pytest.fixture
def clocks(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimulatedClocks]:
    simulated = SimulatedClocks(NOW)
    monkeypatch.setattr(_worker_wait, "utc_now", lambda: simulated.wall)
    yield simulated


PENDING_TIMEOUT = 600.0
POD_CREATED = NOW - timedelta(minutes=9)
RULE_AT = POD_CREATED + timedelta(seconds=PENDING_TIMEOUT)  # one minute after NOW


@pytest.mark.parametrize(
    ("steps", "what"),
    [
        ([], "no step"),
        ([(10.0, timedelta(minutes=5))], "a forward step past the instant"),
        ([(10.0, timedelta(seconds=-30))], "a backward step"),
        ([(59.5, timedelta(seconds=0.4))], "a small forward step just before it"),
        ([(5.0, timedelta(hours=3)), (6.0, timedelta(hours=-3))], "a forward step undone a second later"),
    ],
)
def test_the_worker_wait_ends_within_a_second_of_the_wall_clock_passing_the_rule(
    clocks: SimulatedClocks, steps: list[tuple[float, timedelta]], what: str
) -> None:
    clocks.steps = steps
    tfjob = make_tfjob({"Chief": 1})
    snapshot = JobSnapshot(
        tfjob=tfjob, pods=(make_pod("Chief", phase="Pending", created=POD_CREATED),), deleted=False
    )
    feed = SimulatedFeed(snapshot, clocks)
    target = WaitTarget(name="mnist", namespace="ml", uid=None, rules=Rules(pending_timeout=PENDING_TIMEOUT))
    outcome = _worker_wait._wait(
        StateClient(snapshot),  # type: ignore[arg-type]
        target,
        feed,  # type: ignore[arg-type]
        poll_interval=None,
        on_snapshot=None,
        interrupted=None,
    )
    assert outcome.verdict is not None and outcome.verdict.reason == REASON_PENDING_TIMEOUT, what
    # The wall clock passed the rule's instant at some monotonic moment; the wait ended at most
    # one clock check later, and never before the wall clock got there.
    assert clocks.wall >= RULE_AT
    passed_at = _monotonic_when_wall_passed(RULE_AT, steps)
    assert clocks.monotonic - passed_at <= CLOCK_CHECK_SECONDS, what
    assert all(sleep is not None and sleep <= CLOCK_CHECK_SECONDS for sleep in feed.sleeps)


def _monotonic_when_wall_passed(instant: datetime, steps: list[tuple[float, timedelta]]) -> float:
    """The first monotonic moment at which the simulated wall clock reads ``instant`` or later."""
    wall, monotonic, resolution = NOW, 0.0, 0.001
    pending = sorted(steps)
    while wall < instant:
        monotonic += resolution
        wall += timedelta(seconds=resolution)
        while pending and pending[0][0] <= monotonic:
            wall += pending.pop(0)[1]
    return monotonic
