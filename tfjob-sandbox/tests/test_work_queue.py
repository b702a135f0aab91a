"""The controllers' shared ``WorkQueue``: each key once per pass, delayed re-adds, errors, stop."""

from __future__ import annotations

import asyncio

from tfjob_sandbox.store.work_queue import WorkQueue


def test_a_key_added_many_times_before_a_pass_is_processed_once() -> None:
    seen: list[str] = []

    async def scenario() -> None:
        queue: WorkQueue[str] = WorkQueue(seen.append, on_error=lambda key: None)
        queue.add("ignored-before-start")
        queue.start()
        for _ in range(3):
            queue.add("a")
        queue.add("b")
        await asyncio.sleep(0.01)

    asyncio.run(scenario())
    assert sorted(seen) == ["a", "b"]


def test_a_delayed_add_fires_once_and_a_later_one_replaces_it_and_forget_cancels() -> None:
    seen: list[str] = []

    async def scenario() -> None:
        queue: WorkQueue[str] = WorkQueue(seen.append, on_error=lambda key: None)
        queue.start()
        queue.add_after("late", 0.05)
        queue.add_after("late", 0.02)  # replaces the first
        queue.add_after("cancelled", 0.02)
        queue.forget("cancelled")
        await asyncio.sleep(0.1)

    asyncio.run(scenario())
    assert seen == ["late"]


def test_a_failing_key_goes_to_on_error_and_the_pass_goes_on() -> None:
    failed: list[str] = []
    seen: list[str] = []

    def process(key: str) -> None:
        if key == "bad":
            raise RuntimeError("boom")
        seen.append(key)

    async def scenario() -> None:
        queue: WorkQueue[str] = WorkQueue(process, on_error=failed.append)
        queue.start()
        queue.add("bad")
        queue.add("good")
        await asyncio.sleep(0.01)

    asyncio.run(scenario())
    assert (failed, seen) == (["bad"], ["good"])


def test_before_pass_runs_first_and_stop_drops_pending_keys_and_timers() -> None:
    order: list[str] = []

    async def scenario() -> None:
        queue: WorkQueue[str] = WorkQueue(
            order.append, on_error=lambda key: None, before_pass=lambda: order.append("pass")
        )
        queue.start()
        queue.add("a")
        await asyncio.sleep(0.01)
        queue.add("dropped")
        queue.add_after("dropped-later", 0.01)
        queue.stop()
        await asyncio.sleep(0.05)
        assert not queue.running

    asyncio.run(scenario())
    assert order == ["pass", "a"]
