""":class:`SharedJobWatch`: one pair of watch streams per (connection, namespace) per triggerer,
fanned out to each trigger's :class:`Subscription` (docs/adr/0002-shared-watch-per-namespace.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterable
from typing import Any

from tfjob_provider.kube import effects, list_watch
from tfjob_provider.kube.async_client import AsyncTFJobClient
from tfjob_provider.kube.errors import ForbiddenError, KubeApiError
from tfjob_provider.kube.kinds import TFJOB, JobKind
from tfjob_provider.kube.tracking import JobKey, JobSnapshot, JobTracker

log = logging.getLogger(__name__)


class Subscription:
    """One trigger's view of its job: an async iterator of :class:`JobSnapshot`.

    Each ``__anext__`` returns the newest snapshot not returned yet (intermediate ones are
    skipped — the verdict only needs the current state).  A job the shared watch has not seen
    yet is reported as ``JobSnapshot(tfjob=None, pods=(), deleted=False)``.  If the shared watch
    fails for good, the error is raised here.
    """

    def __init__(self, key: JobKey) -> None:
        self.key = key
        self._latest: JobSnapshot | None = None
        self._version = 0
        self._delivered = 0
        self._changed = asyncio.Event()
        self._error: BaseException | None = None

    def _publish(self, snapshot: JobSnapshot) -> None:
        if snapshot == self._latest and self._version:
            return
        self._latest = snapshot
        self._version += 1
        self._changed.set()

    def _fail(self, error: BaseException) -> None:
        self._error = error
        self._changed.set()

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> JobSnapshot:
        while self._delivered == self._version:
            if self._error is not None:
                raise self._error
            self._changed.clear()
            await self._changed.wait()
        self._delivered = self._version
        assert self._latest is not None
        return self._latest

    def wake(self) -> None:
        """End a pending :meth:`next_within` now (it returns None unless a snapshot is new)."""
        self._changed.set()

    async def next_within(self, timeout: float | None) -> JobSnapshot | None:
        """The next snapshot, or ``None`` when none arrives within ``timeout`` seconds (None: no
        limit) or :meth:`wake` is called first.

        Why not ``asyncio.wait_for(subscription.__anext__(), timeout)``: it wraps the wait in a
        new Task each time (with its coroutine, context and registry entry), and a triggerer
        holding 10,000 waits re-arms every one of them each ``poll_interval``.  A timer on the
        subscription's own event costs one timer handle.  (It also spares the ``TimeoutError``
        that is not the built-in one before Python 3.11.)
        """
        if self._delivered == self._version and self._error is None:
            self._changed.clear()
            if timeout is None:
                await self._changed.wait()
            else:
                timer = asyncio.get_running_loop().call_later(max(0.0, timeout), self._changed.set)
                try:
                    await self._changed.wait()
                finally:
                    timer.cancel()
        if self._delivered == self._version:
            if self._error is not None:
                raise self._error
            return None
        self._delivered = self._version
        return self._latest


def _registry_key(
    client: AsyncTFJobClient, namespace: str, kind: JobKind
) -> tuple[int, str] | tuple[int, str, str]:
    """TFJob watches keep the key they always had; a JobSet watch has its own streams beside it."""
    return (id(client), namespace) if kind is TFJOB else (id(client), namespace, kind.backend)


class SharedJobWatch:
    """The shared streams of one client (connection + event loop), namespace and kind of job.

    Use :meth:`subscribe`; instances are created and stopped by it.
    """

    _instances: dict[tuple[int, str] | tuple[int, str, str], SharedJobWatch] = {}  # process-wide registry

    def __init__(self, client: AsyncTFJobClient, namespace: str, kind: JobKind = TFJOB) -> None:
        self.client = client
        self.namespace = namespace
        self.kind = kind
        self.tracker = kind.shared_tracker(namespace)
        self.subscribers: dict[JobKey, set[Subscription]] = {}
        self.ready = False
        self._task: asyncio.Task[None] | None = None

    # --- subscription ---------------------------------------------------------------------------

    @classmethod
    @contextlib.asynccontextmanager
    async def subscribe(
        cls, client: AsyncTFJobClient, *, name: str, namespace: str, kind: JobKind = TFJOB
    ) -> AsyncIterator[Subscription]:
        """Follow TFJob (or ``kind``) ``namespace/name`` through the shared streams for as long as
        the block runs."""
        registry_key = _registry_key(client, namespace, kind)
        watch = cls._instances.get(registry_key)
        if watch is None:
            watch = cls._instances[registry_key] = SharedJobWatch(client, namespace, kind)
        subscription = watch._add(name)
        try:
            yield subscription
        finally:
            watch._remove(subscription)
            if not watch.subscribers and cls._instances.get(registry_key) is watch:
                del cls._instances[registry_key]
                await watch._stop()

    @classmethod
    def active(cls, client: AsyncTFJobClient, namespace: str, kind: JobKind = TFJOB) -> SharedJobWatch | None:
        """The running shared watch for ``client`` and ``namespace``, if any (for tests and metrics)."""
        return cls._instances.get(_registry_key(client, namespace, kind))

    def _add(self, name: str) -> Subscription:
        key = (self.namespace, name)
        subscription = Subscription(key)
        self.subscribers.setdefault(key, set()).add(subscription)
        if self.ready:
            subscription._publish(self.tracker.snapshot(key))
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"tfjob-shared-watch-{self.namespace}"
            )
        return subscription

    def _remove(self, subscription: Subscription) -> None:
        peers = self.subscribers.get(subscription.key)
        if peers is not None:
            peers.discard(subscription)
            if not peers:
                del self.subscribers[subscription.key]

    async def _stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # --- the streams ----------------------------------------------------------------------------

    def _dispatch(self, changed: set[JobKey], initial: bool) -> Iterable[effects.Effect]:
        # Work in proportion to what changed, never to the number of subscribers: with 10,000
        # waits an event touches one or two jobs, and copying the subscriber keys per event cost
        # more CPU than everything else the triggerer did while the jobs finished.
        self.ready = True
        for key in (changed | set(self.subscribers)) if initial else changed:
            subscriptions = self.subscribers.get(key)
            if subscriptions:
                snapshot = self.tracker.snapshot(key)
                for subscription in subscriptions:
                    subscription._publish(snapshot)
            elif self.tracker.snapshot(key).deleted:
                self.tracker.forget(key)  # keep memory bounded: nobody waits for a job that is gone
        return ()

    async def _run(self) -> None:
        session = self.client.session
        try:
            try:
                streams = self.kind.shared_streams(session, self.tracker, self.namespace)
                await self.client.run(
                    list_watch.run_list_watches(session, streams, on_changes=self._dispatch)
                )
            except ForbiddenError as error:
                if not list_watch.watch_forbidden(error):
                    raise
                log.warning("%s — polling every %.0f s instead", error.message, session.watch.poll_interval)
                await self._poll_forever()
        except asyncio.CancelledError:
            raise
        except (KubeApiError, Exception) as error:  # every subscriber must learn about it
            log.error("shared %s watch in %s failed: %s", self.kind.noun, self.namespace, error)
            for peers in self.subscribers.values():
                for subscription in peers:
                    subscription._fail(error)
            registry_key = _registry_key(self.client, self.namespace, self.kind)
            if SharedJobWatch._instances.get(registry_key) is self:
                del SharedJobWatch._instances[registry_key]

    async def _poll_forever(self) -> None:
        session = self.client.session
        tracker = JobTracker(namespace=self.namespace, slim=True)
        while True:
            for key in list(self.subscribers):
                _, name = key
                tfjob, pods = await self.client.run(self.kind.read(session, name, namespace=self.namespace))
                snapshot = _merge_poll(tracker, key, tfjob, pods)
                self.ready = True
                for subscription in self.subscribers.get(key, ()):
                    subscription._publish(snapshot)
            await asyncio.sleep(session.watch.poll_interval)


def _merge_poll(
    tracker: JobTracker, key: JobKey, tfjob: dict[str, Any] | None, pods: list[dict[str, Any]]
) -> JobSnapshot:
    """Fold one poll of ``key`` into the shared polling tracker and return its snapshot."""
    if tfjob is not None:
        tracker.apply_tfjob_event("MODIFIED", tfjob)
    else:
        tracker.apply_tfjob_event("DELETED", {"metadata": {"name": key[1], "namespace": key[0]}})
    current = {str((p.get("metadata") or {}).get("name")) for p in pods}
    for stale in tracker.snapshot(key).pods:
        stale_name = (stale.get("metadata") or {}).get("name")
        if str(stale_name) not in current:
            tracker.apply_pod_event("DELETED", stale)
    for pod in pods:
        tracker.apply_pod_event("MODIFIED", pod)
    return tracker.snapshot(key)


__all__ = ["SharedJobWatch", "Subscription"]
