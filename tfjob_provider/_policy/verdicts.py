""":class:`Verdict` and its ``REASON_*`` codes (docs/concepts/rules.md): frozen, lossless JSON round trip."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final


class VerdictState(str, Enum):
    """Where a TFJob stands; the values are the TFJob condition types plus ``Pending``."""

    PENDING = "Pending"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    SUSPENDED = "Suspended"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"

    def __str__(self) -> str:
        return self.value


TERMINAL_STATES: Final = frozenset({VerdictState.SUCCEEDED, VerdictState.FAILED})
#: At most this many pod names are carried in ``Verdict.culprits`` (trigger events stay small).
MAX_CULPRITS: Final = 20

# --- Reason codes (stable; documented in docs/concepts/rules.md) -------------------------------------
# Pending
REASON_NOT_RECONCILED: Final = "NotReconciled"
REASON_PODS_PENDING: Final = "PodsPending"
REASON_MANAGED_EXTERNALLY: Final = "ManagedExternally"
# Running / Restarting / Suspended
REASON_RUNNING: Final = "TFJobRunning"
REASON_AWAITING_SUCCESS_POLICY: Final = "AwaitingSuccessPolicy"
REASON_RESTARTING: Final = "TFJobRestarting"
REASON_SUSPENDED: Final = "TFJobSuspended"
# Succeeded
REASON_CHIEF_SUCCEEDED: Final = "ChiefSucceeded"
REASON_WORKER0_SUCCEEDED: Final = "Worker0Succeeded"
REASON_ALL_WORKERS_SUCCEEDED: Final = "AllWorkersSucceeded"
REASON_SUCCEEDED: Final = "TFJobSucceeded"
# Failed: the cause seen on a replica's pod
REASON_REPLICA_FAILED: Final = "ReplicaFailed"
REASON_PERMANENT_EXIT_CODE: Final = "PermanentExitCode"
REASON_RETRYABLE_EXIT_CODE: Final = "RetryableExitCode"
REASON_OOM_KILLED: Final = "OOMKilled"
REASON_EVICTED: Final = "Evicted"
REASON_PREEMPTED: Final = "Preempted"
REASON_NODE_LOST: Final = "NodeLost"
REASON_POD_REJECTED: Final = "PodRejected"
REASON_POD_DELETED: Final = "PodDeleted"
REASON_IMAGE_PULL: Final = "ImagePullFailed"
REASON_CONTAINER_CONFIG: Final = "ContainerConfigError"
# Failed: a rule of the job or of the provider
REASON_BACKOFF_LIMIT: Final = "BackoffLimitExceeded"
REASON_DEADLINE: Final = "DeadlineExceeded"
REASON_PENDING_TIMEOUT: Final = "PendingTimeout"
REASON_WORKER_FAILED: Final = "WorkerFailed"
REASON_FAILED: Final = "TFJobFailed"
# Failed: verdicts about a wait rather than about the pods — made by
# :func:`tfjob_provider.policy.tfjob_deleted` and :func:`tfjob_provider.policy.startup_timeout`
# (not by :func:`~tfjob_provider.policy.decide`, which judges one state and knows no waiter).
REASON_TFJOB_DELETED: Final = "TFJobDeleted"
REASON_STARTUP_TIMEOUT: Final = "StartupTimeout"

#: Every reason code with the state it goes with (a test keeps docs/concepts/rules.md in step with it).
REASON_STATES: Final[Mapping[str, VerdictState]] = {
    REASON_NOT_RECONCILED: VerdictState.PENDING,
    REASON_PODS_PENDING: VerdictState.PENDING,
    REASON_MANAGED_EXTERNALLY: VerdictState.PENDING,
    REASON_RUNNING: VerdictState.RUNNING,
    REASON_AWAITING_SUCCESS_POLICY: VerdictState.RUNNING,
    REASON_RESTARTING: VerdictState.RESTARTING,
    REASON_SUSPENDED: VerdictState.SUSPENDED,
    REASON_CHIEF_SUCCEEDED: VerdictState.SUCCEEDED,
    REASON_WORKER0_SUCCEEDED: VerdictState.SUCCEEDED,
    REASON_ALL_WORKERS_SUCCEEDED: VerdictState.SUCCEEDED,
    REASON_SUCCEEDED: VerdictState.SUCCEEDED,
    REASON_REPLICA_FAILED: VerdictState.FAILED,
    REASON_PERMANENT_EXIT_CODE: VerdictState.FAILED,
    REASON_RETRYABLE_EXIT_CODE: VerdictState.FAILED,
    REASON_OOM_KILLED: VerdictState.FAILED,
    REASON_EVICTED: VerdictState.FAILED,
    REASON_PREEMPTED: VerdictState.FAILED,
    REASON_NODE_LOST: VerdictState.FAILED,
    REASON_POD_REJECTED: VerdictState.FAILED,
    REASON_POD_DELETED: VerdictState.FAILED,
    REASON_IMAGE_PULL: VerdictState.FAILED,
    REASON_CONTAINER_CONFIG: VerdictState.FAILED,
    REASON_BACKOFF_LIMIT: VerdictState.FAILED,
    REASON_DEADLINE: VerdictState.FAILED,
    REASON_PENDING_TIMEOUT: VerdictState.FAILED,
    REASON_WORKER_FAILED: VerdictState.FAILED,
    REASON_FAILED: VerdictState.FAILED,
    REASON_TFJOB_DELETED: VerdictState.FAILED,
    REASON_STARTUP_TIMEOUT: VerdictState.FAILED,
}

_SUMMARY_FIELDS: Final = ("active", "succeeded", "failed", "pending", "restarts")


@dataclass(frozen=True, kw_only=True)
class ReplicaSummary:
    """Pod counts of one replica type, for logs and XCom.

    ``active``/``succeeded``/``failed`` are counted as the training operator counts them (a
    Running pod being deleted is failed); ``pending`` are pods not started yet (invisible to the
    operator); ``restarts`` sums the container restart counts of the type's pods.
    """

    active: int = 0
    succeeded: int = 0
    failed: int = 0
    pending: int = 0
    restarts: int = 0

    def to_dict(self) -> dict[str, int]:
        return {
            "active": self.active,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "pending": self.pending,
            "restarts": self.restarts,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReplicaSummary:
        """Rebuild from :meth:`to_dict` output; raises ValueError on anything else."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a replica summary must be an object, got {type(data).__name__}")
        unknown = set(data) - set(_SUMMARY_FIELDS)
        if unknown:
            raise ValueError(f"unknown replica summary field(s): {sorted(map(str, unknown))}")
        counts: dict[str, int] = {}
        for name in _SUMMARY_FIELDS:
            value = data.get(name, 0)
            if type(value) is not int or value < 0:
                raise ValueError(
                    f"replica summary field {name!r} must be a non-negative integer, got {value!r}"
                )
            counts[name] = value
        return cls(**counts)


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """The engine's conclusion about one TFJob.

    ``retryable`` only means something when ``state`` is Failed: True when running the training
    again may well succeed (signals, evictions, lost nodes), False when it would fail the same
    way (the program's own exit code, a bad image, a deadline).  ``operator_finished`` is True
    when the TFJob already carries a terminal condition written by the training operator; a
    Failed verdict with ``operator_finished`` False is the provider's own conclusion, and the
    caller should delete the TFJob so no replica keeps running.
    ``replicas`` is meant to be read only (it is excluded from hashing).
    """

    state: VerdictState
    retryable: bool
    reason: str
    message: str
    culprits: tuple[str, ...] = ()
    replicas: Mapping[str, ReplicaSummary] = field(default_factory=dict, hash=False)
    operator_finished: bool = False

    def __post_init__(self) -> None:
        # Accept the plain string of a state and any iterable of names from hand-built verdicts.
        if not isinstance(self.state, VerdictState):
            object.__setattr__(self, "state", VerdictState(self.state))
        if not isinstance(self.culprits, tuple):
            object.__setattr__(self, "culprits", tuple(self.culprits))

    @property
    def terminal(self) -> bool:
        """True for Succeeded and Failed: nothing will change the outcome any more."""
        return self.state in TERMINAL_STATES

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (str, bool, list, dict, int only) that :meth:`from_dict` restores exactly."""
        return {
            "state": self.state.value,
            "retryable": self.retryable,
            "reason": self.reason,
            "message": self.message,
            "culprits": list(self.culprits),
            "replicas": {name: summary.to_dict() for name, summary in self.replicas.items()},
            "operator_finished": self.operator_finished,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        """Rebuild a verdict from :meth:`to_dict` output (e.g. a trigger event); ValueError otherwise."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a verdict must be an object, got {type(data).__name__}")
        expected = {"state", "retryable", "reason", "message", "culprits", "replicas", "operator_finished"}
        missing = expected - set(data)
        if missing:
            raise ValueError(f"verdict is missing field(s) {sorted(missing)}")
        unknown = set(data) - expected
        if unknown:
            raise ValueError(f"verdict has unknown field(s) {sorted(map(str, unknown))}")
        try:
            state = VerdictState(data["state"])
        except ValueError:
            allowed = [member.value for member in VerdictState]
            raise ValueError(f"verdict state {data['state']!r} is not one of {allowed}") from None
        for name in ("retryable", "operator_finished"):
            if not isinstance(data[name], bool):
                raise ValueError(f"verdict field {name!r} must be a boolean, got {data[name]!r}")
        for name in ("reason", "message"):
            if not isinstance(data[name], str):
                raise ValueError(f"verdict field {name!r} must be a string, got {data[name]!r}")
        culprits = data["culprits"]
        if not isinstance(culprits, (list, tuple)) or not all(isinstance(item, str) for item in culprits):
            raise ValueError(f"verdict field 'culprits' must be a list of pod names, got {culprits!r}")
        replicas = data["replicas"]
        if not isinstance(replicas, Mapping) or not all(isinstance(key, str) for key in replicas):
            raise ValueError(
                f"verdict field 'replicas' must map replica types to summaries, got {replicas!r}"
            )
        return cls(
            state=state,
            retryable=data["retryable"],
            reason=data["reason"],
            message=data["message"],
            culprits=tuple(culprits),
            replicas={name: ReplicaSummary.from_dict(summary) for name, summary in replicas.items()},
            operator_finished=data["operator_finished"],
        )
