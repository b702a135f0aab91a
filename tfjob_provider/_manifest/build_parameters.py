"""The typed parameters of :func:`~tfjob_provider.manifest.build_tfjob`, in groups: the replica layout
(with one :class:`ReplicaSpec` per type), the container, the pod template, the run policy and the job.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, Final, TypeAlias

EnvInput: TypeAlias = Mapping[str, Any] | Sequence[Mapping[str, Any]]

#: Default ``runPolicy.cleanPodPolicy`` of typed builds; see :func:`build_tfjob`.
DEFAULT_CLEAN_POD_POLICY: Final = "Running"
#: Default replica ``restartPolicy`` of typed builds: the training operator's own default, written out.
DEFAULT_RESTART_POLICY: Final = "Never"


@dataclass(frozen=True)
class ReplicaSpec:
    """One replica type of a typed build: how many pods, how they restart, and what differs from the job.

    ``None`` means "as the job-level parameter says".  ``image``, ``command``, ``args``,
    ``resources``, ``node_selector`` and ``tolerations`` *replace* the job-level value for this
    type; ``env`` is *merged* with the job-level env by variable name (this type's value wins).
    The same shape is accepted as a plain dict with these keys, e.g.
    ``{"replicas": 2, "restart_policy": "OnFailure", "resources": {"limits": {"nvidia.com/gpu": 1}}}``.
    """

    replicas: int = 1
    _: KW_ONLY
    restart_policy: str | None = None
    image: str | None = None
    command: Sequence[str] | None = None
    args: Sequence[str] | None = None
    env: EnvInput | None = None
    resources: Mapping[str, Any] | None = None
    node_selector: Mapping[str, str] | None = None
    tolerations: Sequence[Mapping[str, Any]] | None = None


ReplicaInput: TypeAlias = int | str | ReplicaSpec | Mapping[str, Any] | None

REPLICA_KEYS: Final = tuple(field.name for field in dataclasses.fields(ReplicaSpec))


@dataclass(frozen=True)
class ReplicaLayout:
    """Which replica types run, how many of each, and their default ``restartPolicy``."""

    chief: ReplicaInput = 0
    worker: ReplicaInput = 1
    ps: ReplicaInput = 0
    evaluator: ReplicaInput = 0
    restart_policy: str = DEFAULT_RESTART_POLICY

    def by_type(self) -> Iterator[tuple[str, str, ReplicaInput]]:
        """``(replica type, parameter name, value)`` in manifest order: Chief, Worker, PS, Evaluator."""
        yield "Chief", "chief", self.chief
        yield "Worker", "worker", self.worker
        yield "PS", "ps", self.ps
        yield "Evaluator", "evaluator", self.evaluator


@dataclass(frozen=True)
class ContainerSettings:
    """The ``tensorflow`` container of every replica type (a :class:`ReplicaSpec` may override)."""

    image: str
    command: Sequence[str] | None = None
    args: Sequence[str] | None = None
    env: EnvInput | None = None
    resources: Mapping[str, Any] | None = None
    image_pull_policy: str | None = None
    volume_mounts: Sequence[Mapping[str, Any]] | None = None


@dataclass(frozen=True)
class PodSettings:
    """The pod template around the container: its metadata, scheduling, identity and volumes."""

    labels: Mapping[str, str] | None = None
    annotations: Mapping[str, str] | None = None
    node_selector: Mapping[str, str] | None = None
    tolerations: Sequence[Mapping[str, Any]] | None = None
    service_account_name: str | None = None
    image_pull_secrets: Sequence[str] | None = None
    volumes: Sequence[Mapping[str, Any]] | None = None


@dataclass(frozen=True)
class RunPolicySettings:
    """``spec.runPolicy``: retries, deadlines, pod clean-up, TTL, suspension, gang scheduling, manager."""

    backoff_limit: int | str | None = None
    active_deadline_seconds: int | str | None = None
    clean_pod_policy: str | None = DEFAULT_CLEAN_POD_POLICY
    ttl_seconds_after_finished: int | str | None = None
    suspend: bool | str | None = None
    scheduling_policy: Mapping[str, Any] | None = None
    managed_by: str | None = None


@dataclass(frozen=True)
class JobSettings:
    """The TFJob's own metadata and its job-level spec fields."""

    name: str
    namespace: str | None = None
    labels: Mapping[str, str] | None = None
    annotations: Mapping[str, str] | None = None
    success_policy: str | None = None
    enable_dynamic_worker: bool | str | None = None


__all__ = [
    "DEFAULT_CLEAN_POD_POLICY",
    "DEFAULT_RESTART_POLICY",
    "REPLICA_KEYS",
    "ContainerSettings",
    "EnvInput",
    "JobSettings",
    "PodSettings",
    "ReplicaInput",
    "ReplicaLayout",
    "ReplicaSpec",
    "RunPolicySettings",
]
