"""``TFJobTrigger``: wait for a TFJob's outcome in the triggerer on the shared watch; yields exactly
one ``TriggerEvent`` on every path, and deletes the TFJob only in :meth:`TFJobTrigger.on_kill`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from tfjob_provider._outcome.wait import (
    SETTLE_SECONDS,
    WaitOutcome,
    WaitTarget,
    earliest,
    has_succeeded,
    parse_utc,
    uid_of,
    utc_now,
)
from tfjob_provider._outcome.wait_clock import WallClockAlarms
from tfjob_provider.hooks.tfjob import TFJobHook
from tfjob_provider.kube.errors import KubeApiError, NotFoundError
from tfjob_provider.kube.kinds import TFJOB, JobKind, kind_for
from tfjob_provider.kube.shared_watch import SharedJobWatch, Subscription
from tfjob_provider.policy import Rules
from tfjob_provider.ui.record import now_iso, observe

if TYPE_CHECKING:
    from tfjob_provider.kube.async_client import AsyncTFJobClient
    from tfjob_provider.kube.tracking import JobSnapshot

CLASSPATH = "tfjob_provider.triggers.tfjob.TFJobTrigger"


def describe_error(error: BaseException) -> str:
    """One line about a failure, naming its class (``ForbiddenError: …``)."""
    text = str(error) or repr(error)
    return f"{type(error).__name__}: {text}"


class TFJobTrigger(BaseTrigger):
    """Fire once when a TFJob succeeds, fails, is deleted, times out — or the wait itself breaks.

    The event payload is :meth:`WaitOutcome.to_event() <tfjob_provider._outcome.wait.WaitOutcome.to_event>`:
    ``{"status": "success"|"failed"|"timeout"|"error", "name", "namespace", "uid", "message",
    "verdict": <Verdict.to_dict()> | None, "start_time", "completion_time", "outputs_pod",
    "outputs_message", "recreations"}`` — a few KiB at most: the verdict carries at most 20 pod
    names and the termination message at most 4097 characters — plus ``"observed"``, what the
    watch last saw, for the task's ``tfjob_record`` (:func:`tfjob_provider.ui.record.observe`:
    one short row per pod instance, at most 300).

    :param name: name of the TFJob.
    :param namespace: namespace of the TFJob.
    :param uid: UID of the TFJob to wait on; another TFJob under the same name means this one was
        deleted (Failed, retryable, reason ``TFJobDeleted``).  None: whichever carries the name.
    :param kubernetes_conn_id: the :ref:`kubernetes connection <howto/connection:kubernetes>`.
    :param deadline: absolute UTC deadline (ISO 8601 text) or None; it survives triggerer
        restarts.  When reached, the state is read afresh and only an unfinished job yields
        ``timeout``.
    :param deadline_name: what the deadline comes from, for the message (``timeout``,
        ``execution_timeout``).
    :param startup_timeout: seconds after the TFJob's ``creationTimestamp`` by which a training
        operator must have written its status and the replicas must have left Pending; None: no
        limit.
    :param rules: :class:`~tfjob_provider.policy.Rules` as a dict (``Rules.to_dict()``), or None.
    :param poll_interval: None (default): judge only when the TFJob or its pods change or a
        time-based rule comes due (``docs/concepts/timers.md``).  A number: also re-judge an unchanged
        state at least this often, as a safety net (no API request is made for it).
    :param cancel_on_kill: delete the TFJob in :meth:`on_kill` (a user killed the task).
    :param wait_for_existence: a TFJob that does not exist yet is waited for (the sensor).
    :param backend: ``"tfjob"`` (default; what triggers serialized before JobSets existed meant) or
        ``"jobset"``: the name is a JobSet's, watched with its Jobs and pods and judged by the
        JobSet's rules (docs/guides/jobset.md).  Serialized only when not ``"tfjob"``.
    """

    def __init__(
        self,
        *,
        name: str,
        namespace: str,
        uid: str | None = None,
        kubernetes_conn_id: str = "kubernetes_default",
        deadline: str | None = None,
        deadline_name: str = "timeout",
        startup_timeout: float | None = None,
        rules: Mapping[str, Any] | None = None,
        poll_interval: float | None = None,
        cancel_on_kill: bool = True,
        wait_for_existence: bool = False,
        backend: str = "tfjob",
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.name = name
        self.namespace = namespace
        self.uid = uid
        self.kubernetes_conn_id = kubernetes_conn_id
        self.deadline = deadline
        self.deadline_name = deadline_name
        self.startup_timeout = None if startup_timeout is None else float(startup_timeout)
        self.rules = None if rules is None else dict(rules)
        self.poll_interval = None if poll_interval is None else float(poll_interval)
        self.cancel_on_kill = cancel_on_kill
        self.wait_for_existence = wait_for_existence
        self.backend = backend
        self._last_seen: JobSnapshot | None = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        kwargs: dict[str, Any] = {} if self.backend == "tfjob" else {"backend": self.backend}
        return (
            CLASSPATH,
            {
                "name": self.name,
                "namespace": self.namespace,
                "uid": self.uid,
                "kubernetes_conn_id": self.kubernetes_conn_id,
                "deadline": self.deadline,
                "deadline_name": self.deadline_name,
                "startup_timeout": self.startup_timeout,
                "rules": None if self.rules is None else dict(self.rules),
                "poll_interval": self.poll_interval,
                "cancel_on_kill": self.cancel_on_kill,
                "wait_for_existence": self.wait_for_existence,
                **kwargs,
            },
        )

    @cached_property
    def hook(self) -> TFJobHook:
        return TFJobHook(kubernetes_conn_id=self.kubernetes_conn_id, namespace=self.namespace)

    @property
    def kind(self) -> JobKind:
        """What is waited on; ValueError for an unknown ``backend``."""
        return TFJOB if self.backend == "tfjob" else kind_for(self.backend)

    def target(self) -> WaitTarget:
        """The wait this trigger performs; ValueError if its kwargs are malformed."""
        return WaitTarget(
            name=self.name,
            namespace=self.namespace,
            uid=self.uid,
            rules=None if self.rules is None else Rules.from_dict(self.rules),
            startup_timeout=self.startup_timeout,
            deadline=parse_utc(self.deadline),
            deadline_name=self.deadline_name,
            wait_for_existence=self.wait_for_existence,
            engine=self.kind.engine,
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            target = self.target()
        except (TypeError, ValueError) as error:
            outcome = WaitOutcome(
                status="error",
                name=self.name,
                namespace=self.namespace,
                uid=self.uid,
                message=f"TFJobTrigger was given invalid arguments: {describe_error(error)}",
            )
        else:
            try:
                outcome = await self._wait(target)
            except Exception as error:  # the contract: every path ends in exactly one event
                self.log.exception("Waiting for %s %s/%s failed", self.kind.noun, self.namespace, self.name)
                where = f"{self.kind.noun} {self.namespace}/{self.name}"
                outcome = target.error(f"waiting for {where} failed: {describe_error(error)}")
        self.log.info(
            "%s %s/%s: %s — %s", self.kind.noun, self.namespace, self.name, outcome.status, outcome.message
        )
        yield TriggerEvent({**outcome.to_event(), "observed": self._observed()})  # type: ignore[no-untyped-call]

    def _observed(self) -> dict[str, Any] | None:
        """What the watch last saw, for the task's ``tfjob_record``; None if it saw nothing."""
        seen = self._last_seen
        if seen is None:
            return None
        return observe(
            seen.tfjob,
            seen.pods,
            earlier=seen.earlier,
            earlier_dropped=seen.earlier_dropped,
            decided_at=now_iso(),
        )

    async def _wait(self, target: WaitTarget) -> WaitOutcome:
        alarms = WallClockAlarms.of(asyncio.get_running_loop())
        async with (
            self.hook.async_client_lease() as client,
            SharedJobWatch.subscribe(
                client, name=self.name, namespace=self.namespace, kind=self.kind
            ) as subscription,
        ):
            snapshot: JobSnapshot | None = None
            arrived = False  # whether ``snapshot`` just came from the watch (else: a timer is due)
            wake_at = target.deadline
            while True:
                if snapshot is not None:
                    if arrived:  # an unchanged snapshot judged at a rule's instant has nothing to wait for
                        snapshot = await self._settle(target, snapshot, subscription)
                    self._last_seen = snapshot
                    outcome, wake_at = await self._judge(client, target, snapshot)
                    if outcome is not None:
                        return outcome.with_recreations(snapshot.recreations)
                now = utc_now()
                if target.deadline_passed(now):
                    outcome = await self._at_deadline(client, target, snapshot)
                    return outcome.with_recreations(snapshot.recreations if snapshot is not None else {})
                if self.poll_interval is not None:
                    wake_at = earliest(wake_at, now + timedelta(seconds=self.poll_interval))
                # Asleep until the next snapshot or until time alone may change the outcome; then
                # the same snapshot is judged again.
                alarm = None if wake_at is None else alarms.at(wake_at, subscription.wake)
                try:
                    newer = await subscription.next_within(None)
                    arrived = newer is not None
                    snapshot = newer or snapshot
                finally:
                    if alarm is not None:
                        alarm.cancel()

    async def _settle(
        self, target: WaitTarget, snapshot: JobSnapshot, subscription: Subscription
    ) -> JobSnapshot:
        """The newest snapshot within :data:`SETTLE_SECONDS` while ``snapshot``'s verdict would need
        a fresh read: usually the other stream completes the picture and the read is saved."""
        deadline = asyncio.get_running_loop().time() + SETTLE_SECONDS
        while snapshot.tfjob is not None:
            outcome = target.judge(snapshot.tfjob, snapshot.pods, now=utc_now(), deleted=snapshot.deleted)
            remaining = deadline - asyncio.get_running_loop().time()
            if not target.needs_confirmation(outcome) or remaining <= 0:
                break
            newer = await subscription.next_within(remaining)
            if newer is None:
                break
            snapshot = newer
        return snapshot

    async def _judge(
        self, client: AsyncTFJobClient, target: WaitTarget, snapshot: JobSnapshot
    ) -> tuple[WaitOutcome | None, datetime | None]:
        """The outcome of ``snapshot`` (confirmed when needed), and when to judge it again."""
        if snapshot.tfjob is None and not snapshot.deleted and not target.wait_for_existence:
            # The shared watch has not seen this job (yet): only the API server can say whether it
            # was deleted before we subscribed or is merely not delivered yet.
            tfjob, pods = await self._read(client)
            return target.assess(tfjob, pods, now=utc_now())
        outcome, wake_at = target.assess(
            snapshot.tfjob, snapshot.pods, now=utc_now(), deleted=snapshot.deleted
        )
        if target.needs_confirmation(outcome):
            assert outcome is not None
            tfjob, pods = await self._read(client)
            now = utc_now()
            confirmed = target.confirm(outcome, tfjob, pods, now=now)
            return (confirmed, None) if confirmed is not None else target.assess(tfjob, pods, now=now)
        return outcome, wake_at

    async def _read(
        self, client: AsyncTFJobClient
    ) -> tuple[Mapping[str, Any] | None, Sequence[Mapping[str, Any]]]:
        """The TFJob and its pods straight from the API server (:func:`.operations.read_job`)."""
        return await client.run(self.kind.read(client.session, self.name, namespace=self.namespace))

    async def _at_deadline(
        self, client: AsyncTFJobClient, target: WaitTarget, snapshot: JobSnapshot | None
    ) -> WaitOutcome:
        """Re-read the real state before declaring a timeout (apache/airflow#40018)."""
        try:
            tfjob, pods = await self._read(client)
        except KubeApiError as error:
            self.log.warning(
                "Could not re-read %s %s at its deadline: %s", self.kind.noun, self.name, error.message
            )
            tfjob = snapshot.tfjob if snapshot is not None else None
            pods = snapshot.pods if snapshot is not None else ()
        now = utc_now()
        return target.judge(tfjob, pods, now=now) or target.timed_out(tfjob, pods, now=now)

    async def on_kill(self) -> None:
        """A user killed the deferred task (Airflow >= 3.3): delete the TFJob if ``cancel_on_kill``.

        Never called on triggerer shutdown, restart or redistribution, nor on a trigger timeout.
        Only the TFJob with this trigger's UID is deleted, never a replacement under the same name,
        and never one that has Succeeded (its training is done; a rerun adopts it).  The TFJob is
        read first through the connection's outage budget; if it cannot be read it is left in place.
        """
        if not self.cancel_on_kill:
            return
        kind = self.kind
        where = f"{self.namespace}/{self.name}"
        async with self.hook.async_client_lease() as client:
            try:
                current = await client.run(kind.get(client.session, self.name, namespace=self.namespace))
                if self.uid is not None and uid_of(current) != self.uid:
                    self.log.info("%s %s is another object now; not deleting it", kind.noun, where)
                    return
                if has_succeeded(current):
                    self.log.info("Task killed: %s %s has Succeeded; not deleting it", kind.noun, where)
                    return
                await client.run(kind.delete(client.session, self.name, namespace=self.namespace))
            except NotFoundError:
                return
            except KubeApiError as error:
                self.log.warning(
                    "Task killed: %s %s was left in place because its state could not be read "
                    "or it could not be deleted: %s",
                    kind.noun,
                    where,
                    error.message,
                )
                return
        self.log.info("Task killed: deleted %s %s (uid %s)", kind.noun, where, self.uid)


__all__ = ["CLASSPATH", "TFJobTrigger", "describe_error"]
