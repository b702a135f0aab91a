"""Who am I in the cluster: reading ``TF_CONFIG`` the way TensorFlow does.

Why: in a TFJob every replica runs the same program and learns its role only from the
``TF_CONFIG`` environment variable the training operator sets — ``{"cluster": {"chief": [...],
"worker": [...], "ps": [...]}, "task": {"type": "worker", "index": 1}}``.  The role decides what
the program does (train, serve as a parameter server, evaluate) and which replica is the chief
(the one whose success ends the job).  A single-replica TFJob gets no ``TF_CONFIG`` at all; that
is a one-process job, the way TensorFlow treats it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

#: Replica types that train (the others serve or evaluate).
TRAINING_TYPES = frozenset({"chief", "master", "worker"})


class TFConfigError(ValueError):
    """``TF_CONFIG`` is present but unusable; the message says what is wrong."""


@dataclass(frozen=True)
class ClusterRole:
    """This process's place in the cluster.

    :param type: replica type, lower case (``chief``, ``master``, ``worker``, ``ps``, ``evaluator``).
    :param index: replica index within its type.
    :param cluster: ``type -> {index: "host:port"}`` (empty for a one-process job).
    """

    type: str
    index: int
    cluster: Mapping[str, Mapping[int, str]] = field(default_factory=dict)

    @property
    def tag(self) -> str:
        """``worker-1``: the prefix of every log line of this replica."""
        return f"{self.type}-{self.index}"

    @property
    def trains(self) -> bool:
        return self.type in TRAINING_TYPES

    @property
    def is_chief(self) -> bool:
        """The chief decides the job's success: Chief/Master, else worker 0 (TensorFlow's rule)."""
        if self.type in ("chief", "master"):
            return True
        has_chief = any(self.cluster.get(kind) for kind in ("chief", "master"))
        return self.type == "worker" and self.index == 0 and not has_chief

    @property
    def distributed(self) -> bool:
        return sum(len(addresses) for addresses in self.cluster.values()) > 1

    @property
    def strategy(self) -> str:
        """The TensorFlow distribution strategy this cluster calls for (the ``--tensorflow`` path).

        ``parameter_server`` when the cluster has parameter servers (the chief coordinates, the
        workers and PS serve), ``multi_worker_mirrored`` for any other distributed cluster
        (synchronous all-reduce among chief and workers), ``single`` without ``TF_CONFIG``.
        """
        if self.cluster.get("ps"):
            return "parameter_server"
        return "multi_worker_mirrored" if self.distributed else "single"

    def describe(self) -> str:
        """One line about the cluster: ``chief 1, ps 1, worker 2``."""
        if not self.cluster:
            return "one process (no TF_CONFIG)"
        return ", ".join(f"{kind} {len(addresses)}" for kind, addresses in sorted(self.cluster.items()))


def read_role(environ: Mapping[str, str]) -> ClusterRole:
    """The role from ``environ["TF_CONFIG"]``; worker 0 of a one-process job when it is absent."""
    raw = environ.get("TF_CONFIG", "").strip()
    if not raw:
        return ClusterRole(type="worker", index=0)
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as error:
        raise TFConfigError(f"TF_CONFIG is not valid JSON ({error})") from None
    if not isinstance(config, dict):
        raise TFConfigError(f"TF_CONFIG must be a JSON object, got {type(config).__name__}")
    members = _members(config.get("cluster") or {})
    task = config.get("task")
    if not isinstance(task, dict):
        raise TFConfigError('TF_CONFIG has no "task" object (which replica is this?)')
    kind, index = task.get("type"), task.get("index", 0)
    if not isinstance(kind, str) or not kind:
        raise TFConfigError('TF_CONFIG "task.type" must be a non-empty string')
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise TFConfigError(f'TF_CONFIG "task.index" must be a non-negative integer, got {index!r}')
    kind = kind.lower()
    if members and index not in members.get(kind, {}):
        raise TFConfigError(f"TF_CONFIG names task {kind}:{index}, but the cluster has no such replica")
    return ClusterRole(type=kind, index=index, cluster=members)


def _members(cluster: object) -> dict[str, dict[int, str]]:
    """``type -> {index: "host:port"}`` from the dense form (lists) or the sparse form the operator
    writes with ``enableDynamicWorker`` (``{"worker": {"1": "host:port"}}``)."""
    problem = 'TF_CONFIG "cluster" must map replica types to lists (or index maps) of "host:port" strings'
    if not isinstance(cluster, dict):
        raise TFConfigError(problem)
    members: dict[str, dict[int, str]] = {}
    for kind, addresses in cluster.items():
        if isinstance(addresses, list):
            pairs = list(enumerate(addresses))
        elif isinstance(addresses, dict) and all(str(i).isdigit() for i in addresses):
            pairs = [(int(i), address) for i, address in addresses.items()]
        else:
            raise TFConfigError(problem)
        if not all(isinstance(address, str) for _, address in pairs):
            raise TFConfigError(problem)
        members[str(kind).lower()] = dict(pairs)
    return members


def chief_tag(role: ClusterRole) -> str:
    """Tag of the replica whose checkpoints evaluators and servers follow (the chief, else worker 0)."""
    for kind in ("chief", "master"):
        if role.cluster.get(kind):
            return f"{kind}-0"
    return "worker-0"
