"""``TF_CONFIG`` for a JobSet pod template: the cluster from the JobSet hostnames, the task index
expanded by the kubelet from the completion-index annotation (docs/adr/0022-jobset-backend.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from tfjob_provider._jobset.names import COMPLETION_INDEX

TF_CONFIG: Final = "TF_CONFIG"
#: The env var holding the pod's completion index, which ``TF_CONFIG`` expands.
TASK_INDEX: Final = "TF_CONFIG_TASK_INDEX"
#: The training operator's port name and default port for TF_CONFIG (``GetPortFromTFJob``).
PORT_NAME: Final = "tfjob-port"
DEFAULT_PORT: Final = 2222


def replica_port(pod_template: Mapping[str, Any], container_name: str) -> int:
    """The ``tfjob-port`` of the named container in *pod_template*, else 2222."""
    for container in (pod_template.get("spec") or {}).get("containers") or []:
        if isinstance(container, Mapping) and container.get("name") == container_name:
            for port in container.get("ports") or []:
                if isinstance(port, Mapping) and port.get("name") == PORT_NAME:
                    number = port.get("containerPort")
                    if isinstance(number, int) and not isinstance(number, bool):
                        return number
    return DEFAULT_PORT


def tf_config_value(cluster: Mapping[str, Sequence[str]], replica_type: str) -> str:
    """The ``TF_CONFIG`` env value of one replica type; ``$(TF_CONFIG_TASK_INDEX)`` is the index.

    A ``$`` in the cluster is doubled, Kubernetes' escape, so only the index is expanded.
    """
    ordered = {key: list(cluster[key]) for key in sorted(cluster)}
    cluster_json = json.dumps(ordered, separators=(",", ":"), ensure_ascii=False).replace("$", "$$")
    task_type = json.dumps(replica_type.lower(), ensure_ascii=False)
    return (
        f'{{"cluster":{cluster_json},"task":{{"type":{task_type},"index":$({TASK_INDEX})}},'
        '"environment":"cloud"}'
    )


def tf_config_env(cluster: Mapping[str, Sequence[str]], replica_type: str) -> list[dict[str, Any]]:
    """The two env entries, in order: the index from the downward API, then ``TF_CONFIG``."""
    return [
        {
            "name": TASK_INDEX,
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}},
        },
        {"name": TF_CONFIG, "value": tf_config_value(cluster, replica_type)},
    ]
