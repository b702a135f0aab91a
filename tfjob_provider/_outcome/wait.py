"""When a wait on a TFJob is over, for every waiter: :class:`WaitTarget` judges snapshots and produces a
:class:`WaitOutcome`, which round-trips through JSON (docs/adr/0007-one-decision-for-every-waiter.md,
docs/adr/0006-fresh-read-before-timeout-and-settle-window.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Final, Literal, Protocol, get_args

from tfjob_provider._outcome.outputs import deciding_pod, termination_message
from tfjob_provider._outcome.report import job_times, pod_name
from tfjob_provider.policy import (
    REASON_TFJOB_DELETED,
    Rules,
    Verdict,
    VerdictState,
    decide_with_next_change,
    startup_timeout,
    tfjob_deleted,
)


class JobEngine(Protocol):
    """How a wait judges its job: the TFJob engine, or the JobSet one
    (:class:`tfjob_provider._jobset.judging.JobSetEngine`); ``noun`` names the job in messages."""

    @property
    def noun(self) -> str: ...

    def decide(
        self, tfjob: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], *, now: datetime, rules: Rules
    ) -> tuple[Verdict, datetime | None]: ...

    def reword(self, message: str, *, where: str) -> str: ...


@dataclass(frozen=True)
class TFJobEngine:
    """:func:`~tfjob_provider.policy.decide_with_next_change` on a TFJob and its pods."""

    noun: str = "TFJob"

    def decide(
        self, tfjob: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], *, now: datetime, rules: Rules
    ) -> tuple[Verdict, datetime | None]:
        return decide_with_next_change(tfjob, pods, now=now, rules=rules)

    def reword(self, message: str, *, where: str) -> str:
        return message


TFJOB_ENGINE: Final = TFJobEngine()

SETTLE_SECONDS: Final = 1.0
"""How long a snapshot whose verdict needs a fresh read waits for the other stream first.

The TFJob and its pods arrive on two streams, so a trigger can wake between them: the pods stream
shows the worker the training operator is deleting under ``cleanPodPolicy`` while the TFJob's
``Succeeded`` condition, written in the same reconcile, is still in flight on the other
connection. Judged at once, that snapshot needs a confirmation read (two requests through the
connection's token bucket of 5 requests/s). With 1,000 waits over 100 namespaces most finishing
jobs woke in that gap, so confirmations queued behind the bucket and detection took up to 130 s.
On a healthy connection the other stream delivers within milliseconds; one second also covers a
busy event loop, and a failure that really needs the read is reported one second later — nothing
beside the requests it saves.

The worker (non-deferrable) wait does not settle: it has a connection and token bucket of its
own, so its confirmation read never queues behind other jobs', and judging at once keeps the
verdict on the pods as they ended (a second later the training operator may have killed the
restarted replicas, and the killed container's 143 would hide the exit code that decided)."""

OutcomeStatus = Literal["success", "failed", "timeout", "error"]
OUTCOME_STATUSES: Final[tuple[str, ...]] = get_args(OutcomeStatus)

#: Why fresh reads list the pods *before* getting the TFJob: the training operator writes a terminal
#: condition before it acts on pods because of it (cleanPodPolicy deletions), so a TFJob read after
#: the pods is at least as new as every pod change it caused.
FRESH_READ_ORDER: Final = ("pods", "tfjob")


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def parse_utc(value: str | datetime | None) -> datetime | None:
    """An aware UTC datetime from an ISO 8601 / RFC 3339 string (``Z`` allowed) or a datetime."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        moment = value
    else:
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        moment = datetime.fromisoformat(text)
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def format_utc(moment: datetime | None) -> str | None:
    """The ISO 8601 form used in trigger kwargs and events (``2026-01-02T03:04:05.123456+00:00``)."""
    return None if moment is None else moment.astimezone(timezone.utc).isoformat()


def earliest_deadline(candidates: Mapping[str, datetime | None]) -> tuple[datetime | None, str | None]:
    """The earliest of several named deadlines (``{"timeout": t1, "execution_timeout": t2}``)."""
    known = [(moment, name) for name, moment in candidates.items() if moment is not None]
    if not known:
        return None, None
    moment, name = min(known, key=lambda item: item[0])
    return moment, name


@dataclass(frozen=True, kw_only=True)
class WaitOutcome:
    """How a wait ended; the payload of the trigger's one ``TriggerEvent``.

    :param status: ``success`` (verdict Succeeded), ``failed`` (verdict Failed — see
        ``verdict.retryable``), ``timeout`` (the deadline passed; ``verdict`` is the last state
        seen) or ``error`` (the wait itself broke: API unreachable, forbidden…; no verdict).
    :param uid: the UID of the TFJob the outcome is about, when one was seen.
    :param start_time: ``status.startTime`` of the TFJob, when known.
    :param completion_time: ``status.completionTime`` — or, before the training operator wrote
        it, the ``finishedAt`` of the pods that decided the verdict.
    :param outputs_pod: on success, the deciding replica's pod
        (:func:`~tfjob_provider._outcome.outputs.deciding_pod`); None when it is gone.
    :param outputs_message: that pod's termination message, unparsed (at most 4097 characters:
        :func:`~tfjob_provider._outcome.outputs.termination_message`); None when it left none.
    :param recreations: per replica type, pods the training operator recreated while the waiter
        watched (:class:`~tfjob_provider.kube.tracking.JobSnapshot`).
    """

    status: OutcomeStatus
    name: str
    namespace: str
    uid: str | None
    message: str
    verdict: Verdict | None = None
    start_time: str | None = None
    completion_time: str | None = None
    outputs_pod: str | None = None
    outputs_message: str | None = None
    recreations: Mapping[str, int] = dataclasses.field(default_factory=dict)

    def with_recreations(self, recreations: Mapping[str, int]) -> WaitOutcome:
        """This outcome with the recreation counts a watch gathered (the judge sees one state only)."""
        return dataclasses.replace(self, recreations=dict(recreations)) if recreations else self

    def to_event(self) -> dict[str, Any]:
        """JSON primitives only: str, bool, int, None, list and dict."""
        return {
            "status": self.status,
            "name": self.name,
            "namespace": self.namespace,
            "uid": self.uid,
            "message": self.message,
            "verdict": None if self.verdict is None else self.verdict.to_dict(),
            "start_time": self.start_time,
            "completion_time": self.completion_time,
            "outputs_pod": self.outputs_pod,
            "outputs_message": self.outputs_message,
            "recreations": dict(self.recreations),
        }

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> WaitOutcome:
        """Rebuild from :meth:`to_event` output; ValueError naming the problem otherwise."""
        if not isinstance(event, Mapping):
            raise ValueError(f"a TFJob trigger event must be a dict, got {type(event).__name__}")
        status = event.get("status")
        if status not in OUTCOME_STATUSES:
            raise ValueError(f"trigger event status {status!r} is not one of {list(OUTCOME_STATUSES)}")
        for key in ("name", "namespace", "message"):
            if not isinstance(event.get(key), str):
                raise ValueError(f"trigger event field {key!r} must be a string, got {event.get(key)!r}")
        raw_verdict = event.get("verdict")
        recreations = event.get("recreations") or {}
        if not isinstance(recreations, Mapping) or not all(
            isinstance(key, str) and isinstance(value, int) and not isinstance(value, bool)
            for key, value in recreations.items()
        ):
            raise ValueError(
                f"trigger event field 'recreations' must map replica types to counts: {recreations!r}"
            )
        for key in ("outputs_pod", "outputs_message"):
            if event.get(key) is not None and not isinstance(event.get(key), str):
                raise ValueError(
                    f"trigger event field {key!r} must be a string or null, got {event.get(key)!r}"
                )
        return cls(
            status=status,
            name=event["name"],
            namespace=event["namespace"],
            uid=event.get("uid") or None,
            message=event["message"],
            verdict=None if raw_verdict is None else Verdict.from_dict(raw_verdict),
            start_time=event.get("start_time") or None,
            completion_time=event.get("completion_time") or None,
            outputs_pod=event.get("outputs_pod") or None,
            outputs_message=event.get("outputs_message") or None,
            recreations=dict(recreations),
        )


def _metadata(tfjob: Mapping[str, Any] | None) -> Mapping[str, Any]:
    metadata = (tfjob or {}).get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def uid_of(tfjob: Mapping[str, Any] | None) -> str | None:
    uid = _metadata(tfjob).get("uid")
    return str(uid) if uid else None


def has_succeeded(tfjob: Mapping[str, Any] | None) -> bool:
    """Whether the training operator has marked the TFJob ``Succeeded`` — final: its training is
    done, so no deletion that follows an error, a timeout or a kill may throw it away."""
    status = (tfjob or {}).get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    return isinstance(conditions, list) and any(
        isinstance(item, Mapping) and item.get("type") == "Succeeded" and item.get("status") == "True"
        for item in conditions
    )


@dataclass(frozen=True, kw_only=True)
class WaitTarget:
    """One wait: which TFJob, by which rules, until when.

    :param uid: the UID of the TFJob being waited on; another object under the same name means
        the original was deleted.  None accepts whichever TFJob carries the name (the sensor).
    :param rules: the verdict rules; ``pending_timeout`` defaults to ``startup_timeout``.
    :param startup_timeout: seconds after ``metadata.creationTimestamp`` by which a training
        operator must have written a status and every replica must have left Pending.
    :param deadline: absolute UTC time after which the wait ends as a timeout.
    :param deadline_name: what the deadline comes from, for messages (``timeout``,
        ``execution_timeout``).
    :param wait_for_existence: a TFJob that does not exist (yet) is waited for, not a failure.
    :param engine: how the job is judged and named (:data:`TFJOB_ENGINE`, or the JobSet's).
    """

    name: str
    namespace: str
    uid: str | None = None
    rules: Rules | None = None
    startup_timeout: float | None = None
    deadline: datetime | None = None
    deadline_name: str = "timeout"
    wait_for_existence: bool = False
    engine: JobEngine = TFJOB_ENGINE

    def effective_rules(self) -> Rules:
        rules = self.rules or Rules()
        if rules.pending_timeout is None and self.startup_timeout is not None and self.startup_timeout > 0:
            rules = dataclasses.replace(rules, pending_timeout=float(self.startup_timeout))
        return rules

    # --- outcomes ------------------------------------------------------------------------------

    def _outcome(
        self,
        status: OutcomeStatus,
        message: str,
        *,
        tfjob: Mapping[str, Any] | None,
        verdict: Verdict | None,
        pods: Sequence[Mapping[str, Any]] = (),
    ) -> WaitOutcome:
        start, completion = job_times(tfjob, verdict=verdict, pods=pods)
        outputs_pod = outputs_message = None
        if status == "success":
            pod = deciding_pod(verdict, pods)
            if pod is not None:
                outputs_pod, outputs_message = pod_name(pod), termination_message(pod)
        return WaitOutcome(
            status=status,
            name=self.name,
            namespace=self.namespace,
            uid=uid_of(tfjob) or self.uid,
            message=message,
            verdict=verdict,
            start_time=start,
            completion_time=completion,
            outputs_pod=outputs_pod,
            outputs_message=outputs_message,
        )

    def deleted(self, *, replaced_by: str | None = None) -> WaitOutcome:
        """The TFJob disappeared (or another object took its name) before it finished."""
        noun = self.engine.noun
        where = f"{noun} {self.namespace}/{self.name}"
        if replaced_by:
            message = (
                f"{where} (uid {self.uid}) was deleted and replaced by another {noun} (uid {replaced_by})"
            )
        elif self.uid is None and not self.wait_for_existence:
            message = f"{where} does not exist"
        else:
            message = f"{where} was deleted before it finished"
        return WaitOutcome(
            status="failed",
            name=self.name,
            namespace=self.namespace,
            uid=self.uid,
            message=message,
            verdict=tfjob_deleted(message),
        )

    def error(self, message: str) -> WaitOutcome:
        return WaitOutcome(
            status="error", name=self.name, namespace=self.namespace, uid=self.uid, message=message
        )

    # --- judging -------------------------------------------------------------------------------

    def judge(
        self,
        tfjob: Mapping[str, Any] | None,
        pods: Sequence[Mapping[str, Any]],
        *,
        now: datetime,
        deleted: bool = False,
    ) -> WaitOutcome | None:
        """The outcome this state of the TFJob and its pods means at ``now``, or None to wait on.

        The deadline is *not* applied here: when :meth:`deadline_passed`, read the state afresh,
        call this again, and only if it still returns None report :meth:`timed_out`.
        """
        return self.assess(tfjob, pods, now=now, deleted=deleted)[0]

    def assess(
        self,
        tfjob: Mapping[str, Any] | None,
        pods: Sequence[Mapping[str, Any]],
        *,
        now: datetime,
        deleted: bool = False,
    ) -> tuple[WaitOutcome | None, datetime | None]:
        """:meth:`judge`, and when the clock alone could end the wait on this same state.

        The instant is the earliest of the verdict's next change
        (:func:`~tfjob_provider.policy.decide_with_next_change`), the end of the startup window and
        the deadline; None when only a change of the TFJob or its pods can end the wait.
        """
        if tfjob is None:
            if deleted or self.uid is not None or not self.wait_for_existence:
                return self.deleted(), None
            return None, self.deadline
        current_uid = uid_of(tfjob)
        if self.uid is not None and current_uid is not None and current_uid != self.uid:
            return self.deleted(replaced_by=current_uid), None
        verdict, changes_at = self.engine.decide(tfjob, pods, now=now, rules=self.effective_rules())
        if _metadata(tfjob).get("deletionTimestamp") and not (verdict.terminal and verdict.operator_finished):
            # Being deleted: its pods are killed *because of* the deletion (and a chief that exits
            # 0 on SIGTERM would look like success), so only an outcome the training operator had
            # written before the deletion (e.g. Succeeded, then ttlSecondsAfterFinished) stands.
            return self.deleted(), None
        if verdict.state is VerdictState.SUCCEEDED:
            return self._outcome("success", verdict.message, tfjob=tfjob, verdict=verdict, pods=pods), None
        if verdict.state is VerdictState.FAILED:
            return self._outcome("failed", verdict.message, tfjob=tfjob, verdict=verdict, pods=pods), None
        startup_ends = self._startup_ends(tfjob) if verdict.state is VerdictState.PENDING else None
        if startup_ends is not None and now >= startup_ends:
            assert self.startup_timeout is not None
            where = f"{self.engine.noun} {self.namespace}/{self.name}"
            failed = startup_timeout(
                tfjob,
                pods,
                progress=verdict,
                waited=self._seconds_since_creation(tfjob, now) or 0.0,
                limit=self.startup_timeout,
                where=where,
            )
            failed = dataclasses.replace(failed, message=self.engine.reword(failed.message, where=where))
            return self._outcome("failed", failed.message, tfjob=tfjob, verdict=failed, pods=pods), None
        return None, earliest(changes_at, startup_ends, self.deadline)

    def needs_confirmation(self, outcome: WaitOutcome | None) -> bool:
        """Whether ``outcome`` must be confirmed on a fresh read (:meth:`confirm`) before it ends the wait.

        The TFJob and its pods arrive on two watch streams that are not ordered with respect to
        each other, and waiters may skip intermediate snapshots, so a snapshot can pair a TFJob
        status with pods from another moment.  Two kinds of outcome can come from that:

        * a Failed verdict the provider reached itself (no terminal condition on the TFJob yet):
          the PS pods the training operator deletes under ``cleanPodPolicy`` right after it
          marked the job Succeeded look like replicas killed under a running job;
        * a verdict taken from a terminal condition that arrived before the pods that explain it
          (no culprit): a failure without cause or retry class, a success whose replica counts
          are stale.

        A success the pods themselves show needs no confirmation: the pods stream is ordered, so
        a failure that happened before the deciding replica succeeded is in the same snapshot.
        Nor does a deletion (a ``DELETED`` event or a 404 is certain).  Usually the pods show the
        outcome first (the kubelet reports before the operator reconciles), so the common case
        costs no request; a confirmation costs two.
        """
        if outcome is None or outcome.status not in ("success", "failed") or outcome.verdict is None:
            return False
        verdict = outcome.verdict
        if verdict.reason == REASON_TFJOB_DELETED:
            return False
        if not verdict.culprits:
            return True
        return outcome.status == "failed" and not verdict.operator_finished

    def confirm(
        self,
        outcome: WaitOutcome,
        tfjob: Mapping[str, Any] | None,
        pods: Sequence[Mapping[str, Any]],
        *,
        now: datetime,
    ) -> WaitOutcome | None:
        """Judge a fresh read (pods listed *before* the TFJob was read, :data:`FRESH_READ_ORDER`)
        taken because of ``outcome``; None if the fresh state says the job is still going.

        When the TFJob has meanwhile disappeared (TTL after success, someone deleting it), the
        snapshot's evidence stands and ``outcome`` is returned unchanged.
        """
        if tfjob is None or (self.uid is not None and uid_of(tfjob) != self.uid):
            return outcome
        return self.judge(tfjob, pods, now=now)

    def deadline_passed(self, now: datetime) -> bool:
        return self.deadline is not None and now >= self.deadline

    def timed_out(
        self, tfjob: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]], *, now: datetime
    ) -> WaitOutcome:
        """The timeout outcome, to be built from a *fresh* read for which :meth:`judge` said None."""
        when = format_utc(self.deadline) or "?"
        if tfjob is None:
            message = (
                f"{self.deadline_name} reached at {when}: {self.engine.noun} {self.namespace}/{self.name} "
                "does not exist"
            )
            return self._outcome("timeout", message, tfjob=None, verdict=None)
        verdict = self.engine.decide(tfjob, pods, now=now, rules=self.effective_rules())[0]
        message = (
            f"{self.deadline_name} reached at {when} while {self.engine.noun} {self.namespace}/{self.name} "
            f"was still {verdict.state.value}: {verdict.message}"
        )
        return self._outcome("timeout", message, tfjob=tfjob, verdict=verdict, pods=pods)

    def _seconds_since_creation(self, tfjob: Mapping[str, Any], now: datetime) -> float | None:
        try:
            created = parse_utc(_metadata(tfjob).get("creationTimestamp"))
        except (TypeError, ValueError):
            return None
        return None if created is None else (now - created).total_seconds()

    def _startup_ends(self, tfjob: Mapping[str, Any]) -> datetime | None:
        """When the startup window closes (creation + ``startup_timeout``), if there is one."""
        if self.startup_timeout is None:
            return None
        try:
            created = parse_utc(_metadata(tfjob).get("creationTimestamp"))
        except (TypeError, ValueError):
            return None
        return None if created is None else created + timedelta(seconds=self.startup_timeout)


def earliest(*moments: datetime | None) -> datetime | None:
    """The earliest of ``moments`` that are known; None when none is."""
    known = [moment for moment in moments if moment is not None]
    return min(known) if known else None


__all__ = [
    "FRESH_READ_ORDER",
    "OUTCOME_STATUSES",
    "SETTLE_SECONDS",
    "TFJOB_ENGINE",
    "JobEngine",
    "OutcomeStatus",
    "TFJobEngine",
    "WaitOutcome",
    "WaitTarget",
    "earliest",
    "earliest_deadline",
    "format_utc",
    "has_succeeded",
    "parse_utc",
    "uid_of",
    "utc_now",
]
