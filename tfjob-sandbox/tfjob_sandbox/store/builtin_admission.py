"""kube-apiserver's defaulting and validation of the built-in types (pods, services, names)."""

from __future__ import annotations

import itertools
import re
from typing import Any

from tfjob_sandbox.api.resource_types import CRDS, EVENTS, NAMESPACES, PODS, SERVICES, ResourceType

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")

_SUBDOMAIN_HELP = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_HELP = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1035_HELP = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)

Cause = dict[str, str]


def cause(kind: str, field: str, message: str) -> Cause:
    """A Status cause: ``kind`` is a metav1.CauseType such as ``FieldValueRequired``."""
    return {"reason": kind, "message": message, "field": field}


def invalid_value(field: str, value: Any, detail: str) -> Cause:
    shown = f'"{value}"' if isinstance(value, str) else repr(value)
    return cause("FieldValueInvalid", field, f"Invalid value: {shown}: {detail}")


def required(field: str, detail: str = "") -> Cause:
    return cause("FieldValueRequired", field, "Required value" + (f": {detail}" if detail else ""))


def validate_name(rt: ResourceType, name: str) -> list[Cause]:
    """The name rule of ``rt`` (namespaces: DNS-1123 label; services: DNS-1035; others: subdomain)."""
    if rt is NAMESPACES:
        ok, help_text, limit = bool(_DNS1123_LABEL.match(name)), _LABEL_HELP, 63
    elif rt is SERVICES:
        ok, help_text, limit = bool(_DNS1035_LABEL.match(name)), _DNS1035_HELP, 63
    elif rt is EVENTS:
        return []  # events are named "<object>.<hex>" and validated loosely upstream too
    else:
        ok, help_text, limit = bool(_DNS1123_SUBDOMAIN.match(name)), _SUBDOMAIN_HELP, 253
    causes = []
    if len(name) > limit:
        causes.append(invalid_value("metadata.name", name, f"must be no more than {limit} characters"))
    if not ok:
        causes.append(invalid_value("metadata.name", name, help_text))
    return causes


def apply_create_defaults(rt: ResourceType, obj: dict[str, Any], *, allocate_ip: Any = None) -> None:
    """Fill the fields kube-apiserver defaults on create (in place)."""
    if rt is PODS:
        _default_pod(obj)
    elif rt is SERVICES:
        _default_service(obj, allocate_ip)
    elif rt is NAMESPACES:
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj["status"] = {"phase": "Active"}


def _default_pod(pod: dict[str, Any]) -> None:
    default_pod_spec(pod.setdefault("spec", {}))
    # Status is owned by the kubelet: whatever the client sent is replaced, as upstream does.
    pod["status"] = {"phase": "Pending", "qosClass": "BestEffort"}


def default_pod_spec(spec: dict[str, Any]) -> None:
    """Fill a pod spec's defaults in place (pods and the pod templates of Jobs)."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        if not isinstance(container, dict):
            continue
        image = str(container.get("image", ""))
        tagged = ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest")
        container.setdefault("imagePullPolicy", "IfNotPresent" if tagged or "@" in image else "Always")
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        container.setdefault("resources", {})
        for port in container.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")


def _default_service(service: dict[str, Any], allocate_ip: Any) -> None:
    spec = service.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if "clusterIP" not in spec and callable(allocate_ip):
        spec["clusterIP"] = allocate_ip()
    if spec.get("clusterIP"):
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "port" in port:
                port.setdefault("targetPort", port["port"])
    service.setdefault("status", {"loadBalancer": {}})


def validate_builtin(rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
    """Structural checks of built-in types beyond the name (pods need named containers with images)."""
    if rt is PODS:
        return _validate_pod_spec(obj.get("spec"))
    if rt is SERVICES:
        spec = obj.get("spec") or {}
        if spec.get("clusterIP") != "None" and not spec.get("ports"):
            return [required("spec.ports")]
    if rt is CRDS:
        return []
    return []


def validate_pod_spec(spec: Any, path: str = "spec") -> list[Cause]:
    """The container checks of a pod spec, fields under ``path`` (``spec.template.spec`` for Jobs)."""
    causes = _validate_pod_spec(spec)
    if path != "spec":
        for item in causes:
            item["field"] = path + item["field"][len("spec") :]
    return causes


def _validate_pod_spec(spec: Any) -> list[Cause]:
    if not isinstance(spec, dict):
        return [required("spec")]
    containers = spec.get("containers")
    if not containers:
        return [required("spec.containers")]
    causes: list[Cause] = []
    seen: set[str] = set()
    for index, container in enumerate(containers):
        path = f"spec.containers[{index}]"
        if not isinstance(container, dict):
            causes.append(invalid_value(path, container, "must be an object"))
            continue
        name = container.get("name")
        if not name:
            causes.append(required(f"{path}.name"))
        elif not isinstance(name, str) or not _DNS1123_LABEL.match(name):
            causes.append(invalid_value(f"{path}.name", name, _LABEL_HELP))
        elif name in seen:
            causes.append(cause("FieldValueDuplicate", f"{path}.name", f'Duplicate value: "{name}"'))
        else:
            seen.add(name)
        if not container.get("image"):
            causes.append(required(f"{path}.image"))
    return causes


class ClusterIPAllocator:
    """Hands out service IPs from 10.96.0.0/12 the way a fresh cluster does (10.96.0.1 is the API)."""

    def __init__(self) -> None:
        self._next = itertools.count(10)

    def __call__(self) -> str:
        value = next(self._next)
        return f"10.96.{(value >> 8) & 0xFF}.{value & 0xFF}"
