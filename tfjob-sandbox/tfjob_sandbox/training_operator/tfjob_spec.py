"""The operator's defaults for a TFJob spec, applied to a private copy on every reconcile."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from tfjob_sandbox.api import wire

#: The order in which the defaulter re-cases type keys (``setTensorflowTypeNamesToCamelCase``).
_RECASE_ORDER = ("PS", "Worker", "Chief", "Master", "Evaluator")

DEFAULT_RESTART_POLICY = "Never"
DEFAULT_CLEAN_POD_POLICY = "None"


def defaulted_spec(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """A deep copy of a TFJob ``spec`` with the operator's defaults applied (``SetDefaults_TFJob``)."""
    result: dict[str, Any] = copy.deepcopy(dict(spec or {}))
    run_policy = result.get("runPolicy")
    if not isinstance(run_policy, dict):
        run_policy = {}
        result["runPolicy"] = run_policy
    if run_policy.get("cleanPodPolicy") is None:
        run_policy["cleanPodPolicy"] = DEFAULT_CLEAN_POD_POLICY
    if result.get("successPolicy") is None:
        result["successPolicy"] = ""
    replica_specs = result.get("tfReplicaSpecs")
    if not isinstance(replica_specs, dict):
        result["tfReplicaSpecs"] = {}
        return result
    for canonical in _RECASE_ORDER:
        _recase(replica_specs, canonical)
    for replica in replica_specs.values():
        if not isinstance(replica, dict):
            continue
        if replica.get("replicas") is None:
            replica["replicas"] = 1
        if not replica.get("restartPolicy"):
            replica["restartPolicy"] = DEFAULT_RESTART_POLICY
        _add_default_port(replica)
    return result


def _recase(replica_specs: dict[str, Any], canonical: str) -> None:
    for key in list(replica_specs):
        if key.lower() == canonical.lower() and key != canonical:
            replica_specs[canonical] = replica_specs.pop(key)
            return


def _add_default_port(replica: dict[str, Any]) -> None:
    containers = pod_spec(replica).get("containers")
    if not isinstance(containers, list) or not containers:
        return
    names = [c.get("name") if isinstance(c, dict) else None for c in containers]
    index = names.index(wire.DEFAULT_CONTAINER_NAME) if wire.DEFAULT_CONTAINER_NAME in names else 0
    container = containers[index]
    if not isinstance(container, dict):
        return
    ports = container.setdefault("ports", [])
    if not any(isinstance(p, dict) and p.get("name") == wire.DEFAULT_PORT_NAME for p in ports):
        ports.append({"name": wire.DEFAULT_PORT_NAME, "containerPort": wire.DEFAULT_PORT})


def pod_spec(replica: Mapping[str, Any]) -> dict[str, Any]:
    """``replica.template.spec`` (an empty dict when any level is missing)."""
    template = replica.get("template")
    if not isinstance(template, dict):
        return {}
    spec = template.get("spec")
    return spec if isinstance(spec, dict) else {}


def tensorflow_container(replica: Mapping[str, Any]) -> dict[str, Any] | None:
    """The replica template's container named ``tensorflow``, if any."""
    for container in pod_spec(replica).get("containers") or []:
        if isinstance(container, dict) and container.get("name") == wire.DEFAULT_CONTAINER_NAME:
            return container
    return None


def replica_port(replica: Mapping[str, Any]) -> int:
    """The ``tfjob-port`` of the ``tensorflow`` container, else 2222 (``GetPortFromTFJob``)."""
    container = tensorflow_container(replica)
    for port in (container or {}).get("ports") or []:
        if isinstance(port, dict) and port.get("name") == wire.DEFAULT_PORT_NAME:
            return int(port.get("containerPort", wire.DEFAULT_PORT))
    return wire.DEFAULT_PORT


def replica_count(replica: Mapping[str, Any]) -> int:
    """``replicas`` of a defaulted replica spec."""
    value = replica.get("replicas")
    return int(value) if value is not None else 1


def has_chief_or_master(replica_specs: Mapping[str, Any]) -> bool:
    """True in "chief mode": the spec has a ``Chief`` or ``Master`` entry (R5)."""
    return any(t in replica_specs for t in wire.CHIEF_TYPES)


def general_name(job_name: str, replica_type: str, index: int | str) -> str:
    """``<job>-<type lower>-<index>`` with ``/`` replaced by ``-`` (``GenGeneralName``)."""
    return f"{job_name}-{replica_type.lower()}-{index}".replace("/", "-")
