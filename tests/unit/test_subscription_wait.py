"""``Subscription.next_within``: the trigger's timed wait for its job's next snapshot.

It replaces ``asyncio.wait_for(subscription.__anext__(), timeout)``, which creates a Task per
wait; these tests hold the replacement to the same answers and show it creates none.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable

import pytest

from tfjob_provider.kube.shared_watch import Subscription
from tfjob_provider.kube.tracking import JobSnapshot

KEY = ("default", "mnist")


def in_loop(test: Callable[[], Awaitable[None]]) -> Callable[[], None]:
    """Run an async test in a fresh event loop (the unit suite has no async plugin)."""

    @functools.wraps(test)
    def run() -> None:
        asyncio.run(test())  # type: ignore[arg-type]

    return run


def snapshot(deleted: bool = False) -> JobSnapshot:
    return JobSnapshot(tfjob={"metadata": {"name": "mnist"}}, pods=(), deleted=deleted)


@in_loop
async def test_nothing_new_within_the_timeout_is_none_after_the_timeout() -> None:
    subscription = Subscription(KEY)
    started = time.monotonic()
    assert await subscription.next_within(0.2) is None
    assert time.monotonic() - started >= 0.19


@in_loop
async def test_a_snapshot_published_while_waiting_ends_the_wait_at_once() -> None:
    subscription = Subscription(KEY)
    published = snapshot()
    asyncio.get_running_loop().call_later(0.05, subscription._publish, published)
    started = time.monotonic()
    assert await subscription.next_within(5.0) is published
    assert time.monotonic() - started < 2.0


@in_loop
async def test_a_pending_snapshot_is_returned_without_waiting_and_only_once() -> None:
    subscription = Subscription(KEY)
    first, newest = snapshot(), snapshot(deleted=True)
    subscription._publish(first)
    subscription._publish(newest)  # intermediate snapshots are skipped: only the newest matters
    assert await subscription.next_within(0.0) is newest
    assert await subscription.next_within(0.05) is None


@in_loop
async def test_a_failed_watch_raises_once_what_was_published_is_delivered() -> None:
    subscription = Subscription(KEY)
    published = snapshot()
    subscription._publish(published)
    subscription._fail(RuntimeError("the shared watch gave up"))
    assert await subscription.next_within(1.0) is published
    with pytest.raises(RuntimeError, match="gave up"):
        await subscription.next_within(1.0)


@in_loop
async def test_waiting_creates_no_task() -> None:
    subscription = Subscription(KEY)
    before = len(asyncio.all_tasks())
    waiting = asyncio.ensure_future(subscription.next_within(5.0))
    await asyncio.sleep(0.05)
    assert len(asyncio.all_tasks()) == before + 1  # the waiter itself, nothing inside it
    subscription._publish(snapshot())
    assert await waiting is not None


@in_loop
async def test_without_a_timeout_only_a_snapshot_or_a_wake_ends_the_wait() -> None:
    subscription = Subscription(KEY)
    loop = asyncio.get_running_loop()
    loop.call_later(0.3, subscription.wake)  # what a due WallClockAlarms alarm does
    started = time.monotonic()
    assert await subscription.next_within(None) is None
    assert time.monotonic() - started >= 0.29
    published = snapshot()
    loop.call_later(0.05, subscription._publish, published)
    assert await subscription.next_within(None) is published
