"""JobSet's admission webhook (kubernetes-sigs/jobset ``pkg/webhooks/jobset_webhook.go``), emulated.

``register_jobset_admission(store)`` installs :func:`default_jobset` (the mutating half, run before
the CRD schema) and :func:`validate_jobset` (the validating half, plus the CRD's immutability rules).
A denial is a 422 Invalid whose causes carry upstream's messages (ADR 23 and 39).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tfjob_sandbox.api import jobset_wire as wire
from tfjob_sandbox.api.resource_types import JOBSETS

if TYPE_CHECKING:
    from tfjob_sandbox.store.store import Store

Cause = dict[str, str]

_MAX_INT32 = 2**31 - 1
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_HTTP_PATH = re.compile(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$")
_RULE_NAME = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
_DNS1035_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1123_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_JOB_NAME_TOO_LONG = "JobSet name is too long, job names generated for this JobSet will exceed 63 characters"
_POD_NAME_TOO_LONG = "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"
_SUBDOMAIN_TOO_LONG = ".spec.network.subdomain is too long, must be less than 63 characters"
#: Spec fields upstream's CRD makes immutable with the CEL rule ``self == oldSelf``.
_CEL_IMMUTABLE = ("network", "successPolicy", "failurePolicy", "startupPolicy")
#: Pod template fields that may change while the JobSet is (or is being) suspended (Kueue).
_MUTABLE_WHEN_SUSPENDED = ("nodeSelector", "tolerations", "schedulingGates")


# --- defaulting -------------------------------------------------------------------------------


def default_jobset(operation: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """The webhook's ``Default``, in place: success/startup policies, completion mode, restart
    policy, network, failure policy rule names.  Malformed parts are left to the schema."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if spec.get("successPolicy") is None:
        spec["successPolicy"] = {"operator": wire.OPERATOR_ALL}
    if spec.get("startupPolicy") is None:
        spec["startupPolicy"] = {"startupPolicyOrder": wire.ANY_ORDER}
    for rjob in _dicts(spec.get("replicatedJobs")):
        job_spec = _child(_child(rjob, "template"), "spec")
        if job_spec is None:
            continue
        if job_spec.get("completionMode") is None:
            job_spec["completionMode"] = "Indexed"
        pod_spec = _child(_child(job_spec, "template"), "spec")
        if pod_spec is not None and not pod_spec.get("restartPolicy"):
            pod_spec["restartPolicy"] = "OnFailure"
    if spec.get("network") is None:
        spec["network"] = {}
    network = spec["network"]
    if isinstance(network, dict):
        if network.get("enableDNSHostnames") is None:
            network["enableDNSHostnames"] = True
        if network.get("publishNotReadyAddresses") is None:
            network["publishNotReadyAddresses"] = True
    failure_policy = spec.get("failurePolicy")
    if isinstance(failure_policy, dict):
        for index, rule in enumerate(_dicts(failure_policy.get("rules"))):
            if not rule.get("name"):
                rule["name"] = f"failurePolicyRule{index}"


def _child(parent: Any, key: str) -> dict[str, Any] | None:
    """``parent[key]`` created as ``{}`` when absent; None when either is not an object."""
    if not isinstance(parent, dict):
        return None
    if parent.get(key) is None:
        parent[key] = {}
    child = parent[key]
    return child if isinstance(child, dict) else None


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


# --- validation -------------------------------------------------------------------------------


def validate_jobset(operation: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    """``ValidateCreate`` on CREATE; ``ValidateUpdate`` and the CRD's immutability rules on UPDATE."""
    if operation == "UPDATE" and old is not None:
        return _validate_update(obj, old)
    return _validate_create(obj)


def register_jobset_admission(store: Store) -> None:
    """Install the defaulting and validating halves of the webhook for JobSets."""
    store.add_defaulting(JOBSETS, default_jobset)
    store.add_admission(JOBSETS, validate_jobset)


def _validate_create(obj: Mapping[str, Any]) -> list[Cause]:
    spec: Mapping[str, Any] = obj.get("spec") or {}
    name = str((obj.get("metadata") or {}).get("name") or "")
    causes: list[Cause] = []
    network = spec.get("network") or {}
    subdomain = str(network.get("subdomain") or "")
    if subdomain:
        causes.extend(_subdomain_causes(subdomain))
    manager = spec.get("managedBy")
    if manager is not None:
        causes.extend(_managed_by_causes(str(manager)))
    rjobs = [r for r in spec.get("replicatedJobs") or [] if isinstance(r, Mapping)]
    for index, rjob in enumerate(rjobs):
        causes.extend(_replicated_job_causes(name, index, rjob))
    valid_names = [str(r.get("name", "")) for r in rjobs]
    for target in (spec.get("successPolicy") or {}).get("targetReplicatedJobs") or []:
        if target not in valid_names:
            causes.append(
                _cause(
                    "spec.successPolicy.targetReplicatedJobs",
                    f"invalid replicatedJob name '{target}' does not appear in .spec.ReplicatedJobs",
                )
            )
    failure_policy = spec.get("failurePolicy")
    if isinstance(failure_policy, Mapping):
        causes.extend(_failure_policy_causes(failure_policy, valid_names))
    coordinator = spec.get("coordinator")
    if isinstance(coordinator, Mapping):
        causes.extend(_coordinator_causes(coordinator, rjobs))
    return causes


def _subdomain_causes(subdomain: str) -> list[Cause]:
    field = "spec.network.subdomain"
    causes = []
    if len(subdomain) > 253:
        causes.append(_cause(field, "must be no more than 253 characters"))
    if not _DNS1123_SUBDOMAIN.match(subdomain):
        causes.append(_cause(field, _DNS1123_SUBDOMAIN_MESSAGE))
    causes.extend(_cause(field, message) for message in _dns1035_errors(subdomain, _SUBDOMAIN_TOO_LONG))
    return causes


def _managed_by_causes(manager: str) -> list[Cause]:
    field = "spec.managedBy"
    causes: list[Cause] = []
    host, _, path = manager.partition("/")
    if not manager:
        causes.append(_cause(field, "Required value", reason="FieldValueRequired"))
    elif not host or not path:
        detail = 'must be a domain-prefixed path (such as "acme.io/foo")'
        causes.append(_cause(field, f'Invalid value: "{manager}": {detail}', reason="FieldValueInvalid"))
    else:
        if len(host) > 253:
            detail = "must be no more than 253 characters"
            causes.append(_cause(field, f'Invalid value: "{host}": {detail}', reason="FieldValueInvalid"))
        if not _DNS1123_SUBDOMAIN.match(host):
            detail = _DNS1123_SUBDOMAIN_MESSAGE
            causes.append(_cause(field, f'Invalid value: "{host}": {detail}', reason="FieldValueInvalid"))
        if not _HTTP_PATH.match(path):
            detail = "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"
            causes.append(_cause(field, f'Invalid value: "{path}": {detail}', reason="FieldValueInvalid"))
    if len(manager) > 63:
        causes.append(_cause(field, "Too long: may not be longer than 63", reason="FieldValueTooLong"))
    return causes


def _replicated_job_causes(jobset_name: str, index: int, rjob: Mapping[str, Any]) -> list[Cause]:
    rjob_name = str(rjob.get("name", ""))
    replicas = _int(rjob.get("replicas"), 1)
    job_spec: Mapping[str, Any] = (rjob.get("template") or {}).get("spec") or {}
    parallelism = _int(job_spec.get("parallelism"), 1)
    causes = []
    if parallelism * replicas > _MAX_INT32:
        causes.append(
            _cause(
                f"spec.replicatedJobs[{index}]",
                f"the product of replicas and parallelism must not exceed {_MAX_INT32} for replicatedJob "
                f"'{rjob_name}'",
            )
        )
    longest_job = f"{jobset_name}-{rjob_name}-{replicas - 1}"
    for message in _dns1035_errors(longest_job, _JOB_NAME_TOO_LONG):
        causes.append(_cause(_name_field(message, index), message))
    completions = job_spec.get("completions")
    if job_spec.get("completionMode") == "Indexed" and completions is not None:
        longest_pod = f"{jobset_name}-{rjob_name}-{replicas - 1}-{_int(completions, 1) - 1}-abcde"
        for message in _dns1035_errors(longest_pod, _POD_NAME_TOO_LONG):
            causes.append(_cause(_name_field(message, index), message))
    return causes


def _name_field(message: str, index: int) -> str:
    return (
        "metadata.name"
        if message in (_JOB_NAME_TOO_LONG, _POD_NAME_TOO_LONG)
        else (f"spec.replicatedJobs[{index}].name")
    )


def _failure_policy_causes(policy: Mapping[str, Any], valid_names: list[str]) -> list[Cause]:
    causes: list[Cause] = []
    by_name: dict[str, list[int]] = {}
    for index, rule in enumerate(policy.get("rules") or []):
        if not isinstance(rule, Mapping):
            continue
        field = f"spec.failurePolicy.rules[{index}]"
        name = str(rule.get("name") or "")
        if not 1 <= len(name) <= 128:
            causes.append(
                _cause(
                    f"{field}.name",
                    f"invalid failure policy rule name of length {len(name)}, the rule name must be at "
                    "least 1 characters long and at most 128 characters long",
                )
            )
        by_name.setdefault(name, []).append(index)
        if not _RULE_NAME.match(name):
            causes.append(
                _cause(
                    f"{field}.name",
                    f"invalid failure policy rule name '{name}', a failure policy rule name must start "
                    "with an alphabetic character, optionally followed by a string of alphanumeric "
                    "characters or '_,:', and must end with an alphanumeric character or '_'",
                )
            )
        for target in rule.get("targetReplicatedJobs") or []:
            if target not in valid_names:
                causes.append(
                    _cause(
                        f"{field}.targetReplicatedJobs",
                        f"invalid replicatedJob name '{target}' in failure policy does not appear in "
                        ".spec.ReplicatedJobs",
                    )
                )
        for reason in rule.get("onJobFailureReasons") or []:
            if reason not in wire.JOB_FAILURE_REASONS:
                causes.append(
                    _cause(
                        f"{field}.onJobFailureReasons",
                        f"invalid job failure reason '{reason}' in failure policy is not a recognized job "
                        "failure reason",
                    )
                )
    for name, indices in by_name.items():
        if len(indices) > 1:
            shown = "[" + " ".join(str(i) for i in indices) + "]"
            causes.append(
                _cause(
                    "spec.failurePolicy.rules",
                    f"rule names are not unique, rules with indices {shown} all have the same name '{name}'",
                )
            )
    return causes


def _coordinator_causes(coordinator: Mapping[str, Any], rjobs: list[Mapping[str, Any]]) -> list[Cause]:
    field = "spec.coordinator"
    target = str(coordinator.get("replicatedJob", ""))
    rjob = next((r for r in rjobs if r.get("name") == target), None)
    if rjob is None:
        return [_cause(field, f"coordinator replicatedJob {target} does not exist")]
    job_index, pod_index = _int(coordinator.get("jobIndex"), 0), _int(coordinator.get("podIndex"), 0)
    if not 0 <= job_index < _int(rjob.get("replicas"), 1):
        return [_cause(field, f"coordinator job index {job_index} is invalid for replicatedJob {target}")]
    job_spec: Mapping[str, Any] = (rjob.get("template") or {}).get("spec") or {}
    if job_spec.get("completionMode") != "Indexed":
        return [_cause(field, "job for coordinator pod must be indexed completion mode")]
    if not 0 <= pod_index < _int(job_spec.get("completions"), 1):
        return [
            _cause(
                field,
                f"coordinator pod index {pod_index} is invalid for replicatedJob {target} "
                f"job index {job_index}",
            )
        ]
    return []


def _validate_update(obj: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    spec: Mapping[str, Any] = obj.get("spec") or {}
    old_spec: Mapping[str, Any] = old.get("spec") or {}
    causes: list[Cause] = []
    new_rjobs = _comparable_replicated_jobs(spec, old_spec)
    if new_rjobs != old_spec.get("replicatedJobs"):
        causes.append(_cause("spec.replicatedJobs", 'Invalid value: "array": field is immutable'))
    if spec.get("managedBy") != old_spec.get("managedBy"):
        shown = "null" if spec.get("managedBy") is None else f'"{spec.get("managedBy")}"'
        causes.append(_cause("spec.managedBy", f"Invalid value: {shown}: field is immutable"))
    for key in _CEL_IMMUTABLE:
        if key in spec and key in old_spec and spec[key] != old_spec[key]:
            causes.append(_cause(f"spec.{key}", 'Invalid value: "object": Value is immutable'))
    return causes


def _comparable_replicated_jobs(spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> Any:
    """The new replicatedJobs with the fields Kueue may change while suspended taken from the old."""
    rjobs = spec.get("replicatedJobs")
    old_rjobs = old_spec.get("replicatedJobs")
    suspended = bool(spec.get("suspend")) or bool(old_spec.get("suspend"))
    if not suspended or not isinstance(rjobs, list) or not isinstance(old_rjobs, list):
        return rjobs
    if len(rjobs) != len(old_rjobs):
        return rjobs
    merged = []
    for new, previous in zip(rjobs, old_rjobs, strict=True):
        if not isinstance(new, dict) or not isinstance(previous, dict):
            merged.append(new)
            continue
        candidate = _with_pod_template_from(new, previous)
        merged.append(candidate)
    return merged


def _with_pod_template_from(new: dict[str, Any], previous: dict[str, Any]) -> dict[str, Any]:
    candidate = copy.deepcopy(new)
    new_template = ((candidate.get("template") or {}).get("spec") or {}).get("template")
    old_template = ((previous.get("template") or {}).get("spec") or {}).get("template") or {}
    if not isinstance(new_template, dict):
        return candidate
    metadata = new_template.setdefault("metadata", {})
    old_metadata = old_template.get("metadata") or {}
    for key in ("labels", "annotations"):
        _copy_key(old_metadata, metadata, key)
    if not metadata:
        new_template.pop("metadata")
    pod_spec = new_template.get("spec")
    if isinstance(pod_spec, dict):
        for key in _MUTABLE_WHEN_SUSPENDED:
            _copy_key(old_template.get("spec") or {}, pod_spec, key)
    return candidate


def _copy_key(source: Mapping[str, Any], target: dict[str, Any], key: str) -> None:
    if key in source:
        target[key] = source[key]
    else:
        target.pop(key, None)


def _dns1035_errors(value: str, too_long_message: str) -> list[str]:
    errors = []
    if len(value) > 63:
        errors.append(too_long_message)
    if not _DNS1035.match(value):
        errors.append(_DNS1035_MESSAGE)
    return errors


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _cause(field: str, message: str, *, reason: str = "FieldValueForbidden") -> Cause:
    return {"reason": reason, "message": message, "field": field}
