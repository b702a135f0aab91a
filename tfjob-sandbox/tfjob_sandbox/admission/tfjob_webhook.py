"""The training operator's validating webhook for TFJobs (v1.9.4 checks, field paths and messages).

``register_tfjob_admission(store)``; a denial is a 422 Invalid with ``details.causes`` (docs/sandbox.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tfjob_sandbox.api import wire

if TYPE_CHECKING:
    from tfjob_sandbox.store.store import Store

Cause = dict[str, str]

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MAX = 63
_DNS1035_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_SUPPORTED_MANAGERS = (wire.MANAGED_BY_TRAINING_OPERATOR, wire.MANAGED_BY_MULTIKUEUE)
_REPLICA_SPECS_PATH = "spec.tfReplicaSpecs"
_MANAGED_BY_PATH = "spec.runPolicy.managedBy"


def validate_tfjob(operation: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    """The webhook's ``validateTFJob``: every problem as a ``{"type", "message", "field"}`` cause."""
    causes: list[Cause] = []
    name = str((obj.get("metadata") or {}).get("name") or "")
    name_errors = _dns1035_errors(name)
    if name_errors:
        causes.append(_invalid("metadata.name", name, "should match: " + ",".join(name_errors)))
    if operation == "UPDATE" and old is not None:
        new_manager, old_manager = _managed_by(obj), _managed_by(old)
        if new_manager != old_manager:
            causes.append(_invalid(_MANAGED_BY_PATH, new_manager, "field is immutable"))
    manager = _managed_by(obj)
    if manager is not None and manager not in _SUPPORTED_MANAGERS:
        supported = ", ".join(f'"{m}"' for m in sorted(_SUPPORTED_MANAGERS))
        causes.append(
            {
                "type": "FieldValueNotSupported",
                "message": f'Unsupported value: "{manager}": supported values: {supported}',
                "field": _MANAGED_BY_PATH,
            }
        )
    causes.extend(_replica_spec_causes((obj.get("spec") or {}).get("tfReplicaSpecs")))
    return causes


def register_tfjob_admission(store: Store) -> None:
    """Install :func:`validate_tfjob` as the store's admission check for TFJobs."""
    from tfjob_sandbox.api.resource_types import TFJOBS

    store.add_admission(TFJOBS, validate_tfjob)


def _replica_spec_causes(replica_specs: Any) -> list[Cause]:
    if replica_specs is None:
        return [_required(_REPLICA_SPECS_PATH, "must be required")]
    if not isinstance(replica_specs, Mapping):
        return []
    causes: list[Cause] = []
    chief_or_master = 0
    for replica_type, replica in replica_specs.items():
        containers_path = f"{_REPLICA_SPECS_PATH}[{replica_type}].template.spec.containers"
        containers = _containers(replica)
        if not containers:
            causes.append(_required(containers_path, "must be specified"))
        if replica_type in wire.CHIEF_TYPES:
            chief_or_master += 1
        if replica is None:
            continue
        for index, container in enumerate(containers):
            if not container.get("image"):
                causes.append(_required(f"{containers_path}[{index}].image", "must be required"))
        if not any(c.get("name") == wire.DEFAULT_CONTAINER_NAME for c in containers):
            detail = f"must have at least one container with name {wire.DEFAULT_CONTAINER_NAME}"
            causes.append(_required(containers_path, detail))
    if chief_or_master > 1:
        causes.append(
            {
                "type": "FieldValueForbidden",
                "message": "Forbidden: must not have more than 1 Chief or Master role",
                "field": _REPLICA_SPECS_PATH,
            }
        )
    return causes


def _containers(replica: Any) -> list[Mapping[str, Any]]:
    if not isinstance(replica, Mapping):
        return []
    spec = (replica.get("template") or {}).get("spec") or {}
    return [c for c in spec.get("containers") or [] if isinstance(c, Mapping)]


def _managed_by(obj: Mapping[str, Any]) -> str | None:
    value = ((obj.get("spec") or {}).get("runPolicy") or {}).get("managedBy")
    return None if value is None else str(value)


def _dns1035_errors(value: str) -> list[str]:
    errors = []
    if len(value) > _DNS1035_MAX:
        errors.append(f"must be no more than {_DNS1035_MAX} characters")
    if not _DNS1035.match(value):
        errors.append(_DNS1035_MESSAGE)
    return errors


def _invalid(field: str, value: str | None, detail: str) -> Cause:
    shown = "null" if value is None else value
    return {"type": "FieldValueInvalid", "message": f'Invalid value: "{shown}": {detail}', "field": field}


def _required(field: str, detail: str) -> Cause:
    return {"type": "FieldValueRequired", "message": f"Required value: {detail}", "field": field}
