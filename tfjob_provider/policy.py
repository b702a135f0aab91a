"""The TFJob verdict engine: :func:`decide` turns a TFJob and its pods into a :class:`Verdict`, by the
training operator's rules (docs/concepts/rules.md) and ending what the operator would leave hanging
(docs/adr/0005-departures-from-the-training-operator.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Final

from tfjob_provider._policy.next_change import next_change
from tfjob_provider._policy.observation import Observation, PodEntry, observe
from tfjob_provider._policy.pods import (
    Cause,
    deletion_requested_at,
    pending_detail,
    replica_label,
    restart_causes,
    startup_blocker,
)
from tfjob_provider._policy.readers import as_mapping, as_str, parse_time
from tfjob_provider._policy.reconcile import (
    PassOutcome,
    Success,
    classify,
    finished_at,
    replay_pass,
    success_of,
    type_summary,
    workers_decide,
)
from tfjob_provider._policy.rules import SUCCESS_POLICIES, Rules, SuccessPolicy
from tfjob_provider._policy.tfjob import JobView, read_tfjob
from tfjob_provider._policy.verdicts import (
    MAX_CULPRITS,
    REASON_ALL_WORKERS_SUCCEEDED,
    REASON_AWAITING_SUCCESS_POLICY,
    REASON_BACKOFF_LIMIT,
    REASON_CHIEF_SUCCEEDED,
    REASON_CONTAINER_CONFIG,
    REASON_DEADLINE,
    REASON_EVICTED,
    REASON_FAILED,
    REASON_IMAGE_PULL,
    REASON_MANAGED_EXTERNALLY,
    REASON_NODE_LOST,
    REASON_NOT_RECONCILED,
    REASON_OOM_KILLED,
    REASON_PENDING_TIMEOUT,
    REASON_PERMANENT_EXIT_CODE,
    REASON_POD_DELETED,
    REASON_POD_REJECTED,
    REASON_PODS_PENDING,
    REASON_PREEMPTED,
    REASON_REPLICA_FAILED,
    REASON_RESTARTING,
    REASON_RETRYABLE_EXIT_CODE,
    REASON_RUNNING,
    REASON_STARTUP_TIMEOUT,
    REASON_STATES,
    REASON_SUCCEEDED,
    REASON_SUSPENDED,
    REASON_TFJOB_DELETED,
    REASON_WORKER0_SUCCEEDED,
    REASON_WORKER_FAILED,
    TERMINAL_STATES,
    ReplicaSummary,
    Verdict,
    VerdictState,
)

__all__ = [
    "MAX_CULPRITS",
    "NOT_RECONCILED_MESSAGE",
    "REASON_ALL_WORKERS_SUCCEEDED",
    "REASON_AWAITING_SUCCESS_POLICY",
    "REASON_BACKOFF_LIMIT",
    "REASON_CHIEF_SUCCEEDED",
    "REASON_CONTAINER_CONFIG",
    "REASON_DEADLINE",
    "REASON_EVICTED",
    "REASON_FAILED",
    "REASON_IMAGE_PULL",
    "REASON_MANAGED_EXTERNALLY",
    "REASON_NODE_LOST",
    "REASON_NOT_RECONCILED",
    "REASON_OOM_KILLED",
    "REASON_PENDING_TIMEOUT",
    "REASON_PERMANENT_EXIT_CODE",
    "REASON_PODS_PENDING",
    "REASON_POD_DELETED",
    "REASON_POD_REJECTED",
    "REASON_PREEMPTED",
    "REASON_REPLICA_FAILED",
    "REASON_RESTARTING",
    "REASON_RETRYABLE_EXIT_CODE",
    "REASON_RUNNING",
    "REASON_STARTUP_TIMEOUT",
    "REASON_STATES",
    "REASON_SUCCEEDED",
    "REASON_SUSPENDED",
    "REASON_TFJOB_DELETED",
    "REASON_WORKER0_SUCCEEDED",
    "REASON_WORKER_FAILED",
    "SUCCESS_POLICIES",
    "TERMINAL_STATES",
    "ReplicaSummary",
    "Rules",
    "SuccessPolicy",
    "Verdict",
    "VerdictState",
    "decide",
    "decide_with_next_change",
    "has_operator_status",
    "startup_timeout",
    "tfjob_deleted",
]

_DEFAULT_RULES: Final = Rules()


def decide(
    tfjob: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    *,
    now: datetime | None = None,
    rules: Rules | None = None,
) -> Verdict:
    """Judge a TFJob from its own object and its pods, as returned by the API server.

    ``now`` (default: the current UTC time; naive datetimes are read as UTC) is the moment the
    deadlines are measured against.  ``rules`` defaults to the training operator's behaviour plus
    the provider's fail-fast improvements (see ``docs/concepts/rules.md``).  Never raises on malformed
    ``tfjob`` or ``pods``; a ``rules`` or ``now`` of the wrong type is a programming error.
    """
    return _judgement(tfjob, pods, now=now, rules=rules).verdict()


def decide_with_next_change(
    tfjob: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    *,
    now: datetime | None = None,
    rules: Rules | None = None,
) -> tuple[Verdict, datetime | None]:
    """:func:`decide`, and the earliest instant at which the clock alone changes its verdict.

    The instant (aware UTC) is when a time-based rule comes due for these same pods and TFJob;
    None when none can (always None for a terminal verdict).  Waiters sleep until it or the next
    watch event, whichever comes first (``docs/concepts/timers.md``).
    """
    judgement = _judgement(tfjob, pods, now=now, rules=rules)
    verdict = judgement.verdict()
    changes_at = next_change(
        judgement.job, judgement.seen, judgement.rules, now=judgement.now, verdict=verdict
    )
    return verdict, changes_at


def _judgement(
    tfjob: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    *,
    now: datetime | None,
    rules: Rules | None,
) -> _Judgement:
    if rules is None:
        rules = _DEFAULT_RULES
    elif not isinstance(rules, Rules):
        raise TypeError(f"rules must be a Rules instance (see Rules.from_dict), got {type(rules).__name__}")
    if now is None:
        now = datetime.now(timezone.utc)
    elif not isinstance(now, datetime):
        raise TypeError(f"now must be a datetime, got {type(now).__name__}")
    elif now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)

    job = read_tfjob(tfjob)
    seen = observe(job, pods, keep_restarted=rules.fail_on_worker_failure)
    replicas = _summaries(job, seen)
    return _Judgement(job, seen, rules, now, replicas)


#: Start of the ``StartupTimeout`` message when nothing ever wrote a status on the TFJob.
NOT_RECONCILED_MESSAGE: Final = "no training operator is reconciling this TFJob"


def tfjob_deleted(message: str) -> Verdict:
    """The verdict of a wait whose TFJob disappeared (or another UID took its name) unfinished.

    Failed and retryable — a deleted driver must never turn a task green — and
    ``operator_finished`` because nothing of ours is left to delete (a replacement is not ours).
    """
    return Verdict(
        state=VerdictState.FAILED,
        retryable=True,
        reason=REASON_TFJOB_DELETED,
        message=message,
        operator_finished=True,
    )


def has_operator_status(tfjob: Mapping[str, Any]) -> bool:
    """Whether any training operator has written a condition on the TFJob (``Created`` at least)."""
    conditions = as_mapping(tfjob.get("status")).get("conditions")
    return isinstance(conditions, list) and len(conditions) > 0


def startup_timeout(
    tfjob: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    *,
    progress: Verdict,
    waited: float,
    limit: float,
    where: str,
) -> Verdict:
    """The verdict when ``limit`` seconds (``startup_timeout``) after creation the job has not started.

    :param progress: what :func:`decide` says about the same state (a Pending verdict).
    :param waited: seconds since ``metadata.creationTimestamp``.
    :param where: ``"TFJob <namespace>/<name>"``, for the message.

    No status at all means no training operator reconciles the TFJob (or one whose pass stops
    before it writes status); otherwise the replicas still Pending are the culprits.
    """
    if not has_operator_status(tfjob):
        message = (
            f"{NOT_RECONCILED_MESSAGE}: {where} has no status {round(waited, 1):g} s after its creation "
            f"(startup_timeout {limit:g} s). "
            "Is the Kubeflow training operator running, and does it watch this namespace? "
            "If it is, see the TFJob's events: a pod it cannot create (e.g. refused by a "
            "ResourceQuota) stops its pass before it writes any status."
        )
        culprits: tuple[str, ...] = ()
    else:
        culprits = tuple(
            str(as_mapping(pod.get("metadata")).get("name") or "?")
            for pod in pods
            if as_mapping(pod.get("status")).get("phase") in ("Pending", "", None)
        )
        listed = ", ".join(culprits) if culprits else "no pods created yet"
        message = (
            f"{where} did not start within startup_timeout {limit:g} s: "
            f"replicas still Pending ({listed}); {progress.message}"
        )
    return Verdict(
        state=VerdictState.FAILED,
        retryable=True,
        reason=REASON_STARTUP_TIMEOUT,
        message=message,
        culprits=culprits,
        replicas=progress.replicas,
        operator_finished=False,
    )


def _summaries(job: JobView, seen: Observation) -> dict[str, ReplicaSummary]:
    """Per-type counts from the pods; from ``status.replicaStatuses`` once the pods are gone."""
    if seen.job_pods == 0 and job.recorded_counts:
        return {
            name: ReplicaSummary(
                active=job.recorded_counts.get(name, (0, 0, 0))[0],
                succeeded=job.recorded_counts.get(name, (0, 0, 0))[1],
                failed=job.recorded_counts.get(name, (0, 0, 0))[2],
            )
            for name in job.specs
        }
    return {
        name: ReplicaSummary(
            active=observed.active,
            succeeded=observed.succeeded,
            failed=observed.failed,
            pending=observed.pending,
            restarts=observed.restarts,
        )
        for name, observed in seen.types.items()
    }


def _names(items: Iterable[Cause | PodEntry]) -> tuple[str, ...]:
    names: list[str] = []
    for item in items:
        name = item.pod if isinstance(item, Cause) else item.name
        if name not in names:
            names.append(name)
            if len(names) == MAX_CULPRITS:
                break
    return tuple(names)


def _primary(causes: Sequence[Cause]) -> Cause:
    """The cause to lead with: the first permanent one (it decides retryability), else the first."""
    return next((cause for cause in causes if not cause.retryable), causes[0])


def _latest(moments: Iterable[datetime | None]) -> datetime | None:
    """The latest of ``moments``, or None when any is unknown (the evidence is incomplete)."""
    latest: datetime | None = None
    for moment in moments:
        if moment is None:
            return None
        latest = moment if latest is None or moment > latest else latest
    return latest


class _Judgement:
    """One call of :func:`decide`: the inputs read once, and a method per step of the order."""

    def __init__(
        self,
        job: JobView,
        seen: Observation,
        rules: Rules,
        now: datetime,
        replicas: dict[str, ReplicaSummary],
    ) -> None:
        self.job = job
        self.seen = seen
        self.rules = rules
        self.now = now
        self.replicas = replicas

    def _verdict(
        self,
        state: VerdictState,
        reason: str,
        message: str,
        *,
        culprits: tuple[str, ...] = (),
        retryable: bool = False,
        operator_finished: bool = False,
    ) -> Verdict:
        return Verdict(
            state=state,
            retryable=retryable if state is VerdictState.FAILED else False,
            reason=reason,
            message=message,
            culprits=culprits,
            replicas=self.replicas,
            operator_finished=operator_finished,
        )

    def _failed(
        self, causes: Sequence[Cause], *, operator_finished: bool, reason: str | None = None
    ) -> Verdict:
        primary = _primary(causes)
        others = len({cause.pod for cause in causes}) - 1
        more = f", and {others} other replica pod(s) failed" if others > 0 else ""
        return self._verdict(
            VerdictState.FAILED,
            primary.reason,
            f"TFJob {self.job.display_name} failed: {primary.description}{more}.",
            culprits=_names(causes),
            retryable=all(cause.retryable for cause in causes),
            operator_finished=operator_finished,
        )

    def _succeeded(self, success: Success, *, operator_finished: bool) -> Verdict:
        return self._verdict(
            VerdictState.SUCCEEDED,
            success.reason,
            f"TFJob {self.job.display_name} succeeded: {success.clause}.",
            culprits=_names(success.pods),
            operator_finished=operator_finished,
        )

    def verdict(self) -> Verdict:
        job = self.job
        if job.managed_externally:
            return self._managed_externally()
        if job.failed_condition is not None:
            return self._finished_failed()
        if job.succeeded_condition is not None:
            return self._finished_succeeded()
        if job.suspend:
            return self._verdict(
                VerdictState.SUSPENDED,
                REASON_SUSPENDED,
                f"TFJob {job.display_name} is suspended (runPolicy.suspend is true); its pods are removed.",
            )
        if not job.reconciled and self.seen.job_pods == 0:
            return self._verdict(
                VerdictState.PENDING,
                REASON_NOT_RECONCILED,
                f"TFJob {job.display_name} has no status yet: no training operator has reconciled it.",
            )
        backoff = self._backoff()
        if backoff is not None:
            return backoff
        outcome = replay_pass(job, self.seen, self.rules)
        deadline = self._deadline(outcome)
        if deadline is not None:
            return deadline
        if outcome.failures:
            return self._failed(outcome.failures, operator_finished=False)
        if outcome.success is not None:
            return self._succeeded(outcome.success, operator_finished=False)
        blocked = self._startup_failures()
        if blocked:
            return self._failed(blocked, operator_finished=False)
        return self._progress(outcome)

    # -- step 1 ---------------------------------------------------------------------------
    def _managed_externally(self) -> Verdict:
        job = self.job
        if job.failed_condition is not None:
            message = as_str(job.failed_condition.get("message")) or "its Failed condition is set"
            return self._verdict(
                VerdictState.FAILED,
                REASON_FAILED,
                f"TFJob {job.display_name} failed under {job.managed_by}: {message.rstrip('.')}.",
                retryable=True,
                operator_finished=True,
            )
        if job.succeeded_condition is not None:
            return self._verdict(
                VerdictState.SUCCEEDED,
                REASON_SUCCEEDED,
                f"TFJob {job.display_name} succeeded under {job.managed_by}.",
                operator_finished=True,
            )
        if job.suspend:
            return self._verdict(
                VerdictState.SUSPENDED, REASON_SUSPENDED, f"TFJob {job.display_name} is suspended."
            )
        if job.progress_condition == "Restarting":
            return self._verdict(
                VerdictState.RESTARTING, REASON_RESTARTING, f"TFJob {job.display_name} is restarting."
            )
        if job.progress_condition == "Running":
            return self._verdict(
                VerdictState.RUNNING, REASON_RUNNING, f"TFJob {job.display_name} is running."
            )
        return self._verdict(
            VerdictState.PENDING,
            REASON_MANAGED_EXTERNALLY,
            f"TFJob {job.display_name} is managed by {job.managed_by}, not the training operator here; "
            "waiting for that controller to report a condition.",
        )

    # -- step 2 ---------------------------------------------------------------------------
    def _failed_causes(
        self, *, include_deleting: bool = True, deleted_before: datetime | None = None
    ) -> list[Cause]:
        """Causes of the pods counted failed; a Running pod being deleted only if it is wanted and,
        with ``deleted_before``, only if its deletion was requested before that moment."""
        causes: list[Cause] = []
        for observed in self.seen.types.values():
            for entry in observed.failed_pods:
                if entry.phase != "Failed" and entry.deleting:
                    if not include_deleting:
                        continue
                    if deleted_before is not None:
                        requested = deletion_requested_at(entry.pod)
                        if requested is None or requested >= deleted_before:
                            continue
                causes.append(classify(entry, self.rules))
        return causes

    def _restart_evidence(self) -> list[Cause]:
        """Why the restarts counted by backoffLimit happened (last termination of each container)."""
        causes: list[Cause] = []
        for entry in self.seen.backoff_restarted:
            causes.extend(
                restart_causes(
                    entry.status,
                    replica_type=entry.replica_type,
                    index=entry.index,
                    name=entry.name,
                    rules=self.rules,
                    tensorflow_only=False,
                )
            )
        return causes + self._failed_causes(include_deleting=False)

    def _backoff_verdict(self, *, limit_text: str, operator_finished: bool) -> Verdict:
        evidence = self._restart_evidence()
        job = self.job
        if evidence:
            primary = _primary(evidence)
            clause = f"; {primary.description}"
        else:
            clause = ""
        return self._verdict(
            VerdictState.FAILED,
            REASON_BACKOFF_LIMIT,
            f"TFJob {job.display_name} reached its backoffLimit{limit_text}{clause}.",
            culprits=_names(evidence),
            retryable=bool(evidence) and all(cause.retryable for cause in evidence),
            operator_finished=operator_finished,
        )

    def _finished_failed(self) -> Verdict:
        job = self.job
        if job.backoff_failure:
            limit = f" of {job.backoff_limit}" if job.backoff_limit is not None else ""
            return self._backoff_verdict(limit_text=limit, operator_finished=True)
        if job.deadline_failure:
            return self._deadline_verdict(operator_finished=True)
        condition = job.failed_condition or {}
        # Running pods deleted after the job failed are cleanPodPolicy at work, not the cause.
        failed_at = parse_time(condition.get("lastTransitionTime")) or parse_time(
            condition.get("lastUpdateTime")
        )
        causes = self._failed_causes(deleted_before=failed_at)
        if causes:
            return self._failed(causes, operator_finished=True)
        message = as_str(condition.get("message")) or "the training operator marked it Failed"
        return self._verdict(
            VerdictState.FAILED,
            REASON_FAILED,
            f"TFJob {job.display_name} failed: {message.rstrip('.')} (its pods no longer show why).",
            retryable=True,
            operator_finished=True,
        )

    def _finished_succeeded(self) -> Verdict:
        job = self.job
        policy = self.rules.success_policy
        success = success_of(job, self.seen, policy)
        if success is not None:
            return self._succeeded(success, operator_finished=True)
        if policy is not None:
            # The operator's rule is satisfied but the team's stricter one is not (yet).
            deciding = self._deciding_types(policy)
            failed = [
                classify(entry, self.rules)
                for name in deciding
                for entry in self.seen.types[name].failed_pods
                if entry.phase == "Failed"
            ]
            if failed:
                return self._failed(failed, operator_finished=True)
            waiting = sum(
                self.seen.types[name].active + len(self.seen.types[name].pending_pods) for name in deciding
            )
            if waiting:
                return self._verdict(
                    VerdictState.RUNNING,
                    REASON_AWAITING_SUCCESS_POLICY,
                    f"TFJob {job.display_name} is Succeeded for the training operator, but "
                    f"Rules.success_policy={policy!r} still waits for {waiting} running or pending "
                    f"{' and '.join(deciding)} pod(s).",
                    operator_finished=True,
                )
        return self._verdict(
            VerdictState.SUCCEEDED,
            REASON_SUCCEEDED,
            f"TFJob {job.display_name} succeeded (its Succeeded condition is set).",
            operator_finished=True,
        )

    def _deciding_types(self, policy: SuccessPolicy) -> list[str]:
        job = self.job
        if workers_decide(job, policy) and "Worker" in self.seen.types:
            return ["Worker"]
        return [job.chief_type] if job.chief_type is not None else []

    # -- step 4 ---------------------------------------------------------------------------
    def _backoff(self) -> Verdict | None:
        """R9 as the operator evaluates it (before anything else in a reconcile pass)."""
        job = self.job
        limit = job.backoff_limit
        if limit is None:
            return None
        seen = self.seen
        restarts = seen.backoff_restarts
        past_limit = restarts > 0 if limit == 0 else restarts >= limit
        new_failures = (
            limit <= 0
            and seen.job_failed_pods > job.recorded_failed
            and seen.job_active_pods != job.total_replicas
        )
        if not (past_limit or new_failures):
            return None
        return self._backoff_verdict(limit_text=f" of {limit}", operator_finished=False)

    def _deadline_verdict(self, *, operator_finished: bool) -> Verdict:
        job = self.job
        seconds = job.active_deadline
        limit = f" of {seconds}s" if seconds is not None else ""
        return self._verdict(
            VerdictState.FAILED,
            REASON_DEADLINE,
            f"TFJob {job.display_name} ran past its activeDeadlineSeconds{limit} "
            f"(started {job.start_time.isoformat() if job.start_time else 'at an unknown time'}).",
            operator_finished=operator_finished,
        )

    def _deadline(self, outcome: PassOutcome) -> Verdict | None:
        """R10 against ``now`` (the operator only checks at its next reconcile, kubeflow/trainer#3358).

        An outcome the pods prove happened before the deadline (every deciding container finished
        earlier) stands: the operator's reconcile at that moment would have recorded it.
        """
        deadline_at = self.job.deadline_at
        if deadline_at is None or self.now < deadline_at:
            return None
        if outcome.failures:
            evidence = _latest(cause.finished_at for cause in outcome.failures)
        elif outcome.success is not None:
            evidence = (
                _latest(finished_at(entry) for entry in outcome.success.pods)
                if outcome.success.pods
                else None
            )
        else:
            evidence = None
        if evidence is not None and evidence < deadline_at:
            return None
        return self._deadline_verdict(operator_finished=False)

    # -- step 6 ---------------------------------------------------------------------------
    def _startup_failures(self) -> list[Cause]:
        rules = self.rules
        timeout = rules.pending_timeout
        if not rules.image_pull_fail_fast and timeout is None:
            return []
        blocked: list[Cause] = []
        for observed in self.seen.types.values():
            for entry in observed.pending_pods:
                if rules.image_pull_fail_fast:
                    blocker = startup_blocker(
                        entry.status,
                        replica_type=entry.replica_type,
                        index=entry.index,
                        name=entry.name,
                        waited=self._pending_for(entry),
                        image_pull_timeout=rules.image_pull_timeout,
                    )
                    if blocker is not None:
                        blocked.append(blocker)
                        continue
                if timeout is not None:
                    stuck = self._pending_too_long(entry, timeout)
                    if stuck is not None:
                        blocked.append(stuck)
        if timeout is not None:
            blocked.extend(self._never_created(timeout))
        return blocked

    def _never_created(self, timeout: float) -> list[Cause]:
        """Replicas with no pod at all ``timeout`` seconds after the TFJob was created.

        A ResourceQuota, an admission webhook or a missing ServiceAccount makes the training
        operator's pod creation fail; the job then waits forever with nothing Pending to time out.
        Judged only before the job first ran (no Running/Restarting condition yet): later, a
        missing pod is normally one the operator is about to recreate.  The clock starts at the
        TFJob's creation or, for a resumed job, at its new startTime; a resume not reconciled yet
        (Suspended still True) is not judged.

        The operator's pass stops at the first pod it fails to create, before writing any status,
        so such a job may never get a condition: pods of this job prove an operator is at work.
        With neither status nor pods, the waiter's startup timeout reports that no operator
        reconciles the job.  Suspended and externally managed jobs never reach this step.
        """
        job = self.job
        if job.ever_ran or job.suspended_condition or job.created_at is None:
            return []
        if not job.reconciled and not self.seen.job_pods:
            return []
        # startTime is written at the first reconcile and again at a resume, never before creation.
        since = job.start_time or job.created_at
        event = "was created" if job.start_time is None else "started (status.startTime)"
        waited = self.now - since
        if waited < timedelta(seconds=timeout):
            return []
        occupied = self.seen.occupied_slots
        dynamic_workers_ignored = job.dynamic_workers and not workers_decide(job, self.rules.success_policy)
        missing: list[Cause] = []
        for replica_type, spec in job.specs.items():
            if replica_type == "Worker" and dynamic_workers_ignored:
                continue  # dynamic workers come and go; their failures never fail the job either
            label = replica_type.lower()
            for index in range(spec.replicas):
                if (label, str(index)) in occupied:
                    continue
                pod = job.pod_name(replica_type, index)
                clause = (
                    f"{replica_label(replica_type, index, pod)} has no pod {int(waited.total_seconds())}s "
                    f"after the TFJob {event}, longer than Rules.pending_timeout={timeout:g}s "
                    "(the training operator could not create it: see the TFJob's events, "
                    "e.g. FailedCreatePod from a ResourceQuota or an admission webhook)"
                )
                missing.append(Cause(pod, replica_type, index, REASON_PENDING_TIMEOUT, True, clause))
        return missing

    def _pending_for(self, entry: PodEntry) -> timedelta:
        """How long a Pending pod has waited, from its creationTimestamp (zero when unknown)."""
        created = parse_time(as_mapping(entry.pod.get("metadata")).get("creationTimestamp"))
        return timedelta(0) if created is None else self.now - created

    def _pending_too_long(self, entry: PodEntry, timeout: float) -> Cause | None:
        created = parse_time(as_mapping(entry.pod.get("metadata")).get("creationTimestamp"))
        if created is None:
            return None
        waited = self.now - created
        if waited < timedelta(seconds=timeout):
            return None
        clause = (
            f"{replica_label(entry.replica_type, entry.index, entry.name)} has been Pending for "
            f"{int(waited.total_seconds())}s, longer than Rules.pending_timeout={timeout:g}s "
            f"({pending_detail(entry.status)})"
        )
        return Cause(entry.name, entry.replica_type, entry.index, REASON_PENDING_TIMEOUT, True, clause)

    # -- step 7 ---------------------------------------------------------------------------
    def _progress(self, outcome: PassOutcome) -> Verdict:
        job = self.job
        counts = ", ".join(type_summary(observed) for observed in self.seen.types.values())
        policy = self.rules.success_policy
        if policy is not None and success_of(job, self.seen, None) is not None:
            # The operator is about to write Succeeded; the team's own success rule is not met yet.
            return self._verdict(
                VerdictState.RUNNING,
                REASON_AWAITING_SUCCESS_POLICY,
                f"TFJob {job.display_name} meets the training operator's success rule, but "
                f"Rules.success_policy={policy!r} is not met yet ({counts}).",
            )
        if outcome.progress == "Restarting":
            recovering = outcome.restarts or outcome.masked
            if recovering:
                others = len(recovering) + outcome.restarts_not_shown - 1
                more = f" (and {others} other pod(s))" if others > 0 else ""
                detail = f"{recovering[0].description}{more}; the training operator replaces failed pods"
            else:
                detail = (job.restarting_message or "a replica failed and is being replaced").rstrip(".")
            return self._verdict(
                VerdictState.RESTARTING,
                REASON_RESTARTING,
                f"TFJob {job.display_name} is restarting: {detail}.",
                culprits=_names(recovering),
            )
        if outcome.progress == "Running":
            return self._verdict(
                VerdictState.RUNNING, REASON_RUNNING, f"TFJob {job.display_name} is running ({counts})."
            )
        pending = [entry for observed in self.seen.types.values() for entry in observed.pending_pods]
        if pending:
            first = pending[0]
            detail = (
                f"{replica_label(first.replica_type, first.index, first.name)} is Pending "
                f"({pending_detail(first.status)})"
            )
            if len(pending) > 1:
                detail += f", as are {len(pending) - 1} other pod(s)"
        elif self.seen.job_pods == 0:
            detail = "the training operator has not created its pods yet"
        else:
            detail = f"the replica that decides has not started ({counts})"
        return self._verdict(
            VerdictState.PENDING,
            REASON_PODS_PENDING,
            f"TFJob {job.display_name} is waiting for its replicas: {detail}.",
            culprits=_names(pending),
        )
