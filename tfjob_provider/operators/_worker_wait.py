""":func:`wait_in_worker`: the operator's non-deferrable wait, a watch drained by a thread into a
one-slot mailbox (docs/adr/0019-worker-wait-in-a-thread.md).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from tfjob_provider._airflow.carrying_out import read_job
from tfjob_provider._outcome.wait import WaitOutcome, WaitTarget, earliest, utc_now
from tfjob_provider._outcome.wait_clock import sleep_seconds
from tfjob_provider.kube.errors import KubeApiError
from tfjob_provider.kube.kinds import kind_of_engine

if TYPE_CHECKING:
    from tfjob_provider.kube.sync_client import SyncTFJobClient
    from tfjob_provider.kube.tracking import JobSnapshot


class SnapshotFeed:
    """A daemon thread iterating ``open_watch()`` and keeping the newest snapshot.

    :param open_watch: returns the blocking iterator of snapshots, given the event that asks it
        to stop (see :func:`~tfjob_provider.kube.effects.stoppable`); called inside the thread.
    """

    def __init__(self, open_watch: Callable[[threading.Event], Iterator[JobSnapshot]], *, name: str) -> None:
        self._open_watch = open_watch
        self._lock = threading.Lock()
        self._changed = threading.Event()
        self._stopping = threading.Event()
        self._latest: JobSnapshot | None = None
        self.error: BaseException | None = None
        self.ended = False
        self._thread = threading.Thread(target=self._run, name=f"tfjob-watch-{name}", daemon=True)

    def start(self) -> None:
        _RUNNING_FEEDS.add(self)
        self._thread.start()

    def _run(self) -> None:
        iterator: Iterator[JobSnapshot] | None = None
        try:
            iterator = self._open_watch(self._stopping)
            for snapshot in iterator:
                with self._lock:
                    self._latest = snapshot
                self._changed.set()
                if self._stopping.is_set():
                    break
        except BaseException as error:  # handed to the main thread, which decides
            self.error = error
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()
            self.ended = True
            self._changed.set()

    def take(self) -> JobSnapshot | None:
        """The newest snapshot (None before the first); clears the "changed" signal."""
        self._changed.clear()
        with self._lock:
            return self._latest

    def wait(self, seconds: float | None) -> None:
        """Block until a new snapshot arrives, the feed ends, :meth:`wake` is called, or ``seconds``
        pass (None: no limit)."""
        self._changed.wait(seconds)

    def wake(self) -> None:
        self._changed.set()

    def stop(self) -> None:
        _RUNNING_FEEDS.discard(self)
        self._stopping.set()


#: The feeds of the worker waits running in this process (one, in an Airflow task process).
_RUNNING_FEEDS: weakref.WeakSet[SnapshotFeed] = weakref.WeakSet()


def wait_in_worker(
    client: SyncTFJobClient,
    target: WaitTarget,
    *,
    poll_interval: float | None = None,
    on_snapshot: Callable[[JobSnapshot], None] | None = None,
    interrupted: Callable[[], str | None] | None = None,
) -> WaitOutcome:
    """Watch the TFJob until ``target`` says the wait is over; same decisions as the trigger.

    API errors of the fresh reads (after the client's own retries) end the wait as ``error``.

    :param on_snapshot: called with each new snapshot (the log streamer follows pods with it).
    :param interrupted: returns a reason when the task is being killed; the wait then ends as
        an ``error`` outcome at the next wake-up.
    """

    kind = kind_of_engine(target.engine)

    def open_watch(stopping: threading.Event) -> Iterator[JobSnapshot]:
        return client.watch_job(target.name, namespace=target.namespace, stopping=stopping, watch=kind.watch)

    feed = SnapshotFeed(open_watch, name=target.name)
    feed.start()
    try:
        return _wait(
            client,
            target,
            feed,
            poll_interval=poll_interval,
            on_snapshot=on_snapshot,
            interrupted=interrupted,
        )
    except KubeApiError as error:  # a fresh read failed even after the client's retries
        return target.error(f"reading {kind.noun} {target.namespace}/{target.name} failed: {error.message}")
    finally:
        feed.stop()


def _wait(
    client: SyncTFJobClient,
    target: WaitTarget,
    feed: SnapshotFeed,
    *,
    poll_interval: float | None,
    on_snapshot: Callable[[JobSnapshot], None] | None,
    interrupted: Callable[[], str | None] | None,
) -> WaitOutcome:
    last: JobSnapshot | None = None
    kind = kind_of_engine(target.engine)
    noun = kind.noun
    wake_at = target.deadline  # when time alone may change the outcome of ``last``
    while True:
        ended, error = feed.ended, feed.error  # read before the snapshot: never miss the last one
        snapshot = feed.take()
        now = utc_now()
        if snapshot is not None and (snapshot is not last or (wake_at is not None and now >= wake_at)):
            if snapshot is not last and on_snapshot is not None:
                on_snapshot(snapshot)
            last = snapshot
            outcome, wake_at = _judge(client, target, snapshot)
            if outcome is not None:
                return outcome.with_recreations(snapshot.recreations)
            if poll_interval is not None:
                wake_at = earliest(wake_at, utc_now() + timedelta(seconds=poll_interval))
        if error is not None:
            message = error.message if isinstance(error, KubeApiError) else str(error)
            return target.error(f"watching {noun} {target.namespace}/{target.name} failed: {message}")
        if ended:
            return target.error(f"the watch on {noun} {target.namespace}/{target.name} ended unexpectedly")
        reason = interrupted() if interrupted is not None else None
        if reason:
            return target.error(reason)
        if target.deadline_passed(now):
            tfjob, pods = read_job(client, name=target.name, namespace=target.namespace, kind=kind)
            now = utc_now()
            outcome = target.judge(tfjob, pods, now=now) or target.timed_out(tfjob, pods, now=now)
            return outcome.with_recreations(last.recreations if last is not None else {})
        # Asleep until the next snapshot or the instant time alone may change the outcome, looking
        # at the wall clock at least every CLOCK_CHECK_SECONDS meanwhile (nothing is judged then).
        feed.wait(sleep_seconds(wake_at, utc_now()))


def _judge(
    client: SyncTFJobClient, target: WaitTarget, snapshot: JobSnapshot
) -> tuple[WaitOutcome | None, datetime | None]:
    """The outcome of ``snapshot`` (confirmed on a fresh read when needed), and when to judge again."""
    outcome, wake_at = target.assess(snapshot.tfjob, snapshot.pods, now=utc_now(), deleted=snapshot.deleted)
    if not target.needs_confirmation(outcome):
        return outcome, wake_at
    assert outcome is not None
    kind = kind_of_engine(target.engine)
    tfjob, pods = read_job(client, name=target.name, namespace=target.namespace, kind=kind)
    now = utc_now()
    confirmed = target.confirm(outcome, tfjob, pods, now=now)
    return (confirmed, None) if confirmed is not None else target.assess(tfjob, pods, now=now)


def wake_worker_waits() -> None:
    """Wake every worker wait of this process now (``on_kill``: the wait then ends at once)."""
    for feed in list(_RUNNING_FEEDS):
        feed.wake()


__all__ = ["SnapshotFeed", "wait_in_worker", "wake_worker_waits"]
