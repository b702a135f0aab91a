"""One replica pod read as the operator sees it (exit code, R3) and as a person needs it: why it failed
or is stuck, with a stable reason code and a retry class.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from tfjob_provider._policy.readers import as_count, as_int, as_list, as_mapping, as_str, is_true, parse_time
from tfjob_provider._policy.rules import Rules
from tfjob_provider._policy.verdicts import (
    REASON_CONTAINER_CONFIG,
    REASON_DEADLINE,
    REASON_EVICTED,
    REASON_IMAGE_PULL,
    REASON_NODE_LOST,
    REASON_OOM_KILLED,
    REASON_PERMANENT_EXIT_CODE,
    REASON_POD_DELETED,
    REASON_POD_REJECTED,
    REASON_PREEMPTED,
    REASON_REPLICA_FAILED,
    REASON_RETRYABLE_EXIT_CODE,
)
from tfjob_provider.constants import DEFAULT_CONTAINER_NAME, MAGIC_EXIT_CODE

#: Waiting reasons of a container whose image did not arrive.
IMAGE_PULL_REASONS: Final = frozenset(
    {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable"}
)
#: Of those, the reasons that never clear without a change to the job, whatever the message says.
_PERMANENT_PULL_REASONS: Final = frozenset({"InvalidImageName", "ErrImageNeverPull"})
#: Words (lower case) in a pull error's message that mean the image does not exist or may not be
#: pulled with the credentials given: containerd's ``...: not found``, a registry's
#: ``manifest unknown``, Docker Hub's ``pull access denied``, ``401 Unauthorized``, and an image
#: reference that does not parse.  Any other pull error (``429 Too Many Requests``, 5xx, i/o
#: timeouts, refused connections, TLS handshake timeouts) may clear by itself.
_PERMANENT_PULL_WORDS: Final = (
    "not found",
    "manifest unknown",
    "pull access denied",
    "unauthorized",
    "invalidimagename",
    "invalid reference format",
)
#: Waiting reasons that mean the container can never be created as configured (missing Secret, …).
CONFIG_REASONS: Final = frozenset({"CreateContainerConfigError"})
#: Terminated reasons for a container whose command could not even be started (exit code 128).
_START_FAILURE_REASONS: Final = frozenset({"StartError", "ContainerCannotRun"})

# Pod-level ``status.reason`` values (set by the kubelet or node lifecycle controllers).
_EVICTED_REASONS: Final = frozenset({"Evicted"})
_PREEMPTED_REASONS: Final = frozenset({"Preempting", "Preempted"})
_NODE_REASONS: Final = frozenset({"NodeLost", "Shutdown", "NodeShutdown", "Terminated"})
_DEADLINE_REASONS: Final = frozenset({"DeadlineExceeded"})
_REJECTED_REASONS: Final = frozenset(
    {
        "UnexpectedAdmissionError",
        "NodeAffinity",
        "NodeSelectorMismatching",
        "InvalidNodeInfo",
        "PodOSNotSupported",
    }
)
# ``DisruptionTarget`` condition reasons (Kubernetes 1.26+), telling who removed a pod.
_DISRUPTIONS: Final[Mapping[str, str]] = {
    "PreemptionByScheduler": REASON_PREEMPTED,
    "PreemptionByKubeScheduler": REASON_PREEMPTED,
    "DeletionByTaintManager": REASON_NODE_LOST,
    "DeletionByPodGC": REASON_NODE_LOST,
    "EvictionByEvictionAPI": REASON_EVICTED,
    "TerminationByKubelet": REASON_EVICTED,
}
_SIGNALS: Final[Mapping[int, str]] = {
    1: "SIGHUP",
    2: "SIGINT",
    6: "SIGABRT",
    9: "SIGKILL",
    11: "SIGSEGV",
    15: "SIGTERM",
}


@dataclass(frozen=True)
class Cause:
    """Why one replica pod failed (or is stuck), judged under the rules in force."""

    pod: str
    replica_type: str
    index: int
    reason: str
    retryable: bool
    #: A clause naming the replica, the pod and the evidence,
    #: e.g. "Worker replica 1 (pod x) exited with code 1".
    description: str
    #: When the evidence happened (the container's finishedAt), if the pod says.
    finished_at: datetime | None = None


def replica_label(replica_type: str, index: int, pod: str) -> str:
    return f"{replica_type} replica {index} (pod {pod})"


def describe_exit_code(code: int) -> str:
    signal = _SIGNALS.get(code - 128) if code > 128 else None
    return f"exited with code {code} ({signal})" if signal else f"exited with code {code}"


def tensorflow_container(status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The status of the ``tensorflow`` container (the last one so named, as the operator reads it)."""
    found: Mapping[str, Any] | None = None
    for item in as_list(status.get("containerStatuses")):
        entry = as_mapping(item)
        if entry.get("name") == DEFAULT_CONTAINER_NAME:
            found = entry
    return found


def operator_exit_code(status: Mapping[str, Any]) -> int:
    """The exit code the operator acts on (R3): the ``tensorflow`` container's current terminated
    state, else 48879 (also when that state carries no usable code)."""
    code = MAGIC_EXIT_CODE
    for item in as_list(status.get("containerStatuses")):
        entry = as_mapping(item)
        if entry.get("name") != DEFAULT_CONTAINER_NAME:
            continue
        terminated = as_mapping(entry.get("state")).get("terminated")
        if isinstance(terminated, Mapping):
            value = as_int(terminated.get("exitCode"))
            code = MAGIC_EXIT_CODE if value is None else value
    return code


def restarts_of(statuses: object) -> int:
    """Sum of ``restartCount`` over a list of container statuses."""
    total = 0
    for item in as_list(statuses):
        count = item.get("restartCount") if type(item) is dict else as_mapping(item).get("restartCount")
        if type(count) is int:
            if count > 0:
                total += count
        else:
            total += as_count(count)
    return total


def _terminated_cause(
    terminated: Mapping[str, Any], *, rules: Rules, who: str, container: str
) -> tuple[str, bool, str]:
    """(reason, retryable, clause) for a container's terminated state."""
    reason = as_str(terminated.get("reason"))
    code = as_int(terminated.get("exitCode"))
    shown = f"container {container!r} " if container != DEFAULT_CONTAINER_NAME else ""
    if reason == "OOMKilled":
        suffix = f" (exit code {code})" if code is not None else ""
        return REASON_OOM_KILLED, rules.oom_is_retryable, f"{who} {shown}was OOMKilled{suffix}"
    if reason in _START_FAILURE_REASONS:
        detail = as_str(terminated.get("message")) or reason or ""
        return REASON_CONTAINER_CONFIG, False, f"{who} {shown}could not start its command: {detail}"
    if code is None:
        code = MAGIC_EXIT_CODE
    if rules.is_retryable_exit_code(code):
        return REASON_RETRYABLE_EXIT_CODE, True, f"{who} {shown}{describe_exit_code(code)}"
    return REASON_PERMANENT_EXIT_CODE, False, f"{who} {shown}{describe_exit_code(code)}"


def _disruption(status: Mapping[str, Any]) -> tuple[str, str] | None:
    """(reason code, Kubernetes reason) from a True ``DisruptionTarget`` pod condition."""
    for item in as_list(status.get("conditions")):
        condition = as_mapping(item)
        if condition.get("type") == "DisruptionTarget" and is_true(condition.get("status")):
            kube_reason = as_str(condition.get("reason")) or ""
            code = _DISRUPTIONS.get(kube_reason)
            if code is not None:
                return code, kube_reason
    return None


def _pod_level_cause(status: Mapping[str, Any]) -> tuple[str, bool, str] | None:
    """(reason, retryable, Kubernetes reason) from the pod's own ``status.reason``."""
    kube_reason = as_str(status.get("reason"))
    if not kube_reason:
        return None
    if kube_reason in _EVICTED_REASONS:
        return REASON_EVICTED, True, kube_reason
    if kube_reason in _PREEMPTED_REASONS:
        return REASON_PREEMPTED, True, kube_reason
    if kube_reason in _NODE_REASONS:
        return REASON_NODE_LOST, True, kube_reason
    if kube_reason in _DEADLINE_REASONS:
        return REASON_DEADLINE, False, kube_reason
    if kube_reason in _REJECTED_REASONS or kube_reason.startswith("OutOf"):
        return REASON_POD_REJECTED, True, kube_reason
    return None


def _with_message(clause: str, status: Mapping[str, Any]) -> str:
    message = as_str(status.get("message"))
    return f"{clause}: {message.rstrip('.')}" if message else clause


def classify_failed_pod(
    status: Mapping[str, Any],
    *,
    replica_type: str,
    index: int,
    name: str,
    rules: Rules,
) -> Cause:
    """Why a pod in phase Failed failed, and whether another attempt may succeed."""
    who = replica_label(replica_type, index, name)
    tensorflow = tensorflow_container(status)
    terminated = as_mapping(as_mapping(tensorflow.get("state")).get("terminated")) if tensorflow else None
    finished_at = parse_time(terminated.get("finishedAt")) if terminated else None

    pod_level = _pod_level_cause(status)
    if pod_level is not None:
        reason, retryable, kube_reason = pod_level
        clause = _with_message(f"{who} failed with Kubernetes reason {kube_reason}", status)
        return Cause(name, replica_type, index, reason, retryable, clause, finished_at)
    if terminated:
        reason, retryable, clause = _terminated_cause(
            terminated, rules=rules, who=who, container=DEFAULT_CONTAINER_NAME
        )
        return Cause(name, replica_type, index, reason, retryable, clause, finished_at)
    disruption = _disruption(status)
    if disruption is not None:
        reason, kube_reason = disruption
        clause = f"{who} was stopped by Kubernetes ({kube_reason})"
        return Cause(name, replica_type, index, reason, True, clause, finished_at)
    # No tensorflow exit code: an init container may have failed before it could start.
    for item in as_list(status.get("initContainerStatuses")):
        entry = as_mapping(item)
        init_terminated = as_mapping(as_mapping(entry.get("state")).get("terminated"))
        if init_terminated and as_int(init_terminated.get("exitCode")) != 0:
            container = as_str(entry.get("name")) or "init"
            reason, retryable, clause = _terminated_cause(
                init_terminated, rules=rules, who=who, container=container
            )
            return Cause(
                name,
                replica_type,
                index,
                reason,
                retryable,
                clause,
                parse_time(init_terminated.get("finishedAt")),
            )
    blocker = startup_blocker(status, replica_type=replica_type, index=index, name=name, waited=None)
    if blocker is not None:
        return blocker
    retryable = rules.is_retryable_exit_code(MAGIC_EXIT_CODE)
    clause = f"{who} failed without an exit code from its {DEFAULT_CONTAINER_NAME!r} container"
    return Cause(name, replica_type, index, REASON_REPLICA_FAILED, retryable, clause, None)


def classify_deleted_pod(status: Mapping[str, Any], *, replica_type: str, index: int, name: str) -> Cause:
    """A Running pod with a deletionTimestamp, which the operator counts as failed (R2, #2124)."""
    who = replica_label(replica_type, index, name)
    pod_level = _pod_level_cause(status)
    if pod_level is not None and pod_level[1]:
        reason, _, kube_reason = pod_level
        return Cause(name, replica_type, index, reason, True, f"{who} is being removed ({kube_reason})")
    disruption = _disruption(status)
    if disruption is not None:
        reason, kube_reason = disruption
        return Cause(
            name, replica_type, index, reason, True, f"{who} is being removed by Kubernetes ({kube_reason})"
        )
    return Cause(name, replica_type, index, REASON_POD_DELETED, True, f"{who} was deleted while running")


def image_pull_is_permanent(kube_reason: str, message: str | None) -> bool:
    """Whether an image pull failure cannot clear by itself (see :data:`_PERMANENT_PULL_WORDS`).

    The kubelet reports every failed pull as ``ErrImagePull`` and then ``ImagePullBackOff``,
    whether the image does not exist or the registry is rate limiting or down, so only the
    message tells them apart.  A back-off message carries the last pull error only on kubelets
    1.32 and later (``Back-off pulling image "x": ErrImagePull: ...``); a bare one is judged
    transient, so that its time limit, not a guess, ends the wait.
    """
    if kube_reason in _PERMANENT_PULL_REASONS:
        return True
    text = (message or "").lower()
    return any(word in text for word in _PERMANENT_PULL_WORDS)


def startup_blocker(
    status: Mapping[str, Any],
    *,
    replica_type: str,
    index: int,
    name: str,
    waited: timedelta | None,
    image_pull_timeout: float | None = None,
) -> Cause | None:
    """A container (init or main) waiting on an image or a configuration that stops the pod.

    An impossible configuration, or an image that does not exist or may not be pulled, blocks at
    once and for good.  A transient pull error (:func:`image_pull_is_permanent` says no) blocks,
    retryably, only once the pod has ``waited`` at least ``image_pull_timeout`` seconds (None:
    never); with ``waited=None`` the pod has already failed and the transient error is reported
    as its retryable cause.
    """
    for key in ("initContainerStatuses", "containerStatuses"):
        for item in as_list(status.get(key)):
            entry = as_mapping(item)
            waiting = as_mapping(as_mapping(entry.get("state")).get("waiting"))
            kube_reason = as_str(waiting.get("reason"))
            if kube_reason is None:
                continue
            detail = as_str(waiting.get("message"))
            if kube_reason in IMAGE_PULL_REASONS:
                code = REASON_IMAGE_PULL
                permanent = image_pull_is_permanent(kube_reason, detail)
            elif kube_reason in CONFIG_REASONS:
                code, permanent = REASON_CONTAINER_CONFIG, True
            else:
                continue
            limit = ""
            if not permanent and waited is not None:
                if image_pull_timeout is None or waited < timedelta(seconds=image_pull_timeout):
                    continue  # the kubelet keeps retrying: the registry may recover
                limit = (
                    f" for {int(waited.total_seconds())}s, longer than "
                    f"Rules.image_pull_timeout={image_pull_timeout:g}s"
                )
            container = as_str(entry.get("name")) or "?"
            image = as_str(entry.get("image"))
            subject = f"container {container!r}" + (f" (image {image})" if image else "")
            who = replica_label(replica_type, index, name)
            clause = f"{who} cannot start: {subject} is waiting with {kube_reason}{limit}"
            if detail:
                clause = f"{clause} ({detail.rstrip('.')})"
            return Cause(name, replica_type, index, code, not permanent, clause)
    return None


def pending_detail(status: Mapping[str, Any]) -> str:
    """Why a Pending pod is pending, in a few words: the scheduler's or a container's reason."""
    for item in as_list(status.get("conditions")):
        condition = as_mapping(item)
        if condition.get("type") == "PodScheduled" and not is_true(condition.get("status")):
            scheduling = as_str(condition.get("reason")) or "not scheduled"
            message = as_str(condition.get("message"))
            return f"{scheduling}: {message.rstrip('.')}" if message else scheduling
    for key in ("initContainerStatuses", "containerStatuses"):
        for item in as_list(status.get(key)):
            waiting = as_mapping(as_mapping(as_mapping(item).get("state")).get("waiting"))
            reason = as_str(waiting.get("reason"))
            if reason:
                return reason
    return "not started"


def restart_causes(
    status: Mapping[str, Any],
    *,
    replica_type: str,
    index: int,
    name: str,
    rules: Rules,
    tensorflow_only: bool,
) -> list[Cause]:
    """One cause per container that has restarted in place, judged by its last termination.

    A restart whose last termination is unknown is reported as ReplicaFailed and treated as not
    retryable when judging backoffLimit (only proven signal/eviction restarts are retryable).
    """
    causes: list[Cause] = []
    who = replica_label(replica_type, index, name)
    keys = ("containerStatuses",) if tensorflow_only else ("initContainerStatuses", "containerStatuses")
    for key in keys:
        for item in as_list(status.get(key)):
            entry = as_mapping(item)
            container = as_str(entry.get("name")) or "?"
            if tensorflow_only and container != DEFAULT_CONTAINER_NAME:
                continue
            restarts = as_count(entry.get("restartCount"))
            if restarts == 0:
                continue
            last = as_mapping(as_mapping(entry.get("lastState")).get("terminated"))
            times = "once" if restarts == 1 else f"{restarts} times"
            if not last:
                clause = f"{who} restarted container {container!r} {times} (last exit unknown)"
                causes.append(Cause(name, replica_type, index, REASON_REPLICA_FAILED, False, clause))
                continue
            reason, retryable, clause = _terminated_cause(last, rules=rules, who=who, container=container)
            clause = f"{clause} and was restarted in place {times}"
            causes.append(
                Cause(
                    name, replica_type, index, reason, retryable, clause, parse_time(last.get("finishedAt"))
                )
            )
    return causes


def deletion_requested_at(pod: Mapping[str, Any]) -> datetime | None:
    """When a pod's deletion was asked for: its deletionTimestamp minus the grace period."""
    metadata = as_mapping(pod.get("metadata"))
    deadline = parse_time(metadata.get("deletionTimestamp"))
    if deadline is None:
        return None
    grace = as_int(metadata.get("deletionGracePeriodSeconds"))
    return deadline - timedelta(seconds=grace) if grace is not None and 0 < grace < 10**9 else deadline


def last_exit_code(status: Mapping[str, Any]) -> int | None:
    """The exit code of the ``tensorflow`` container's previous run, if it has restarted."""
    tensorflow = tensorflow_container(status)
    if tensorflow is None:
        return None
    last = as_mapping(as_mapping(tensorflow.get("lastState")).get("terminated"))
    return as_int(last.get("exitCode")) if last else None
