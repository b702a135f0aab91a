"""Writes the project's TFJob CRD, ``tfjob-sandbox/tfjob_sandbox/admission/crds/tfjobs.yaml``.

Run ``python tfjob-sandbox/tests/tfjob_crd_generator.py`` after changing this file or the pinned
``kubernetes`` client; ``test_tfjob_crd.py`` beside it fails while the committed file differs from
what this module produces, so the two cannot drift apart.

Why a generator and not a hand-written file: the TFJob-specific part (``spec.runPolicy``,
``tfReplicaSpecs``, ``status``) is small and written out below from the training operator's API
types (``kubeflow.org/v1``, v1.9), but every replica carries a whole ``PodTemplateSpec`` — a few
thousand lines of schema nobody should type or review by hand.  The official ``kubernetes`` client
already describes every pod field in its model classes (``openapi_types`` gives each attribute's
type, ``attribute_map`` its JSON name, and a setter that refuses ``None`` marks a required field),
so the pod template is derived from those classes.  Three things the models do not record are
added from Kubernetes' own API conventions, each in one small table here:

* ``resource.Quantity`` values appear as ``str`` in the models; Kubernetes serves them as
  int-or-string with the quantity pattern (``cpu: 2`` and ``cpu: "500m"`` are both valid), so
  :data:`QUANTITY_FIELDS` lists where they occur;
* ``IntOrString`` fields (probe and lifecycle ports) appear as ``object``, as does free-form JSON
  (``managedFields[].fieldsV1``); an ObjectMeta embedded in the pod template (its own ``metadata``
  and an ephemeral volume's claim template) is cut down to :data:`EMBEDDED_METADATA_FIELDS`, as
  the API server does for embedded metadata, and after that every ``object`` left is an
  IntOrString (the reference cross-check compares these paths);
* integers are ``int32`` except the few ``int64`` ones in :data:`INT64_FIELDS`;
* the API's ``+default`` markers (``ports[].protocol: TCP``, empty reference names, volume
  plug-in defaults) are in :data:`DEFAULTS`.

* the one list the API declares a set (a restart rule's exit codes) is in :data:`SET_LISTS`.

Other list and map semantics (atomic lists, list-map keys) and CEL rules are left out: they
govern server-side apply merges and updates, which the sandbox's schema engine does not model.

Where the project's CRD is deliberately stricter than the training operator's generated one, it
is so at admission of things the operator would only fail on later or silently misread: the
``tfReplicaSpecs`` keys are the five replica types (the operator's CRD takes any key), and
``restartPolicy``, ``cleanPodPolicy`` and ``successPolicy`` are enums (plain strings there), and
replica counts and run-policy durations may not be negative.  ``tests/unit/test_crd_cross_check.py``
pins exactly those differences against the reference CRD wherever that file is available.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client import models  # type: ignore[import-untyped]
from tfjob_sandbox.api import wire

Schema = dict[str, Any]

CRD_PATH = Path(__file__).resolve().parents[1] / "tfjob_sandbox" / "admission" / "crds" / "tfjobs.yaml"

#: The regular expression Kubernetes' OpenAPI gives every ``resource.Quantity``.
_DECIMAL = r"(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
QUANTITY_PATTERN = rf"^(\+|-)?{_DECIMAL}(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?{_DECIMAL}))?$"

#: (model class, python attribute) whose value — or, for maps, each value — is a resource.Quantity.
QUANTITY_FIELDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("V1ResourceRequirements", "limits"),
        ("V1ResourceRequirements", "requests"),
        ("V1VolumeResourceRequirements", "limits"),
        ("V1VolumeResourceRequirements", "requests"),
        ("V1PodSpec", "overhead"),
        ("V1EmptyDirVolumeSource", "size_limit"),
        ("V1ResourceFieldSelector", "divisor"),
    }
)

#: (model class, python attribute) -> the default the Kubernetes API declares for it (``+default``).
DEFAULTS: dict[tuple[str, str], Any] = {
    ("V1ContainerPort", "protocol"): "TCP",
    ("V1LocalObjectReference", "name"): "",
    ("V1ConfigMapKeySelector", "name"): "",
    ("V1SecretKeySelector", "name"): "",
    ("V1ConfigMapEnvSource", "name"): "",
    ("V1SecretEnvSource", "name"): "",
    ("V1ConfigMapVolumeSource", "name"): "",
    ("V1ConfigMapProjection", "name"): "",
    ("V1SecretProjection", "name"): "",
    ("V1FileKeySelector", "optional"): False,
    ("V1GRPCAction", "service"): "",
    ("V1AzureDiskVolumeSource", "fs_type"): "ext4",
    ("V1AzureDiskVolumeSource", "read_only"): False,
    ("V1ISCSIVolumeSource", "iscsi_interface"): "default",
    ("V1RBDVolumeSource", "keyring"): "/etc/ceph/keyring",
    ("V1RBDVolumeSource", "pool"): "rbd",
    ("V1RBDVolumeSource", "user"): "admin",
    ("V1ScaleIOVolumeSource", "fs_type"): "xfs",
    ("V1ScaleIOVolumeSource", "storage_mode"): "ThinProvisioned",
}

#: (model class, python attribute) of lists the API declares as sets (duplicates are refused).
SET_LISTS: frozenset[tuple[str, str]] = frozenset({("V1ContainerRestartRuleOnExitCodes", "values")})

#: (model class, python attribute) of the core API's ``int64`` fields; every other integer is ``int32``.
INT64_FIELDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("V1PodSpec", "active_deadline_seconds"),
        ("V1PodSpec", "termination_grace_period_seconds"),
        ("V1Probe", "termination_grace_period_seconds"),
        ("V1SleepAction", "seconds"),
        ("V1SecurityContext", "run_as_group"),
        ("V1SecurityContext", "run_as_user"),
        ("V1PodSecurityContext", "fs_group"),
        ("V1PodSecurityContext", "run_as_group"),
        ("V1PodSecurityContext", "run_as_user"),
        ("V1PodSecurityContext", "supplemental_groups"),
        ("V1Toleration", "toleration_seconds"),
        ("V1ServiceAccountTokenProjection", "expiration_seconds"),
    }
)

#: What an ObjectMeta embedded in another object's schema keeps (the rest is pruned).
EMBEDDED_METADATA_FIELDS = ("annotations", "finalizers", "labels", "name", "namespace")

RESTART_POLICIES = ["Always", "OnFailure", "Never", "ExitCode"]
CLEAN_POD_POLICIES = ["All", "Running", "None"]
#: ``""`` is the operator's default success policy (the chief, or worker 0, decides).
SUCCESS_POLICIES = ["", "AllWorkers"]

_REQUIRED_SETTER = re.compile(r"and (\w+) is None:")
_LIST = re.compile(r"^list\[(.+)\]$")
_DICT = re.compile(r"^dict\[str, (.+)\]$")
_PRIMITIVES: dict[str, Schema] = {
    "str": {"type": "string"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
}


def _int_or_string() -> Schema:
    return {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}


def _quantity() -> Schema:
    return {**_int_or_string(), "pattern": QUANTITY_PATTERN}


def _int32(minimum: int | None = None) -> Schema:
    schema: Schema = {"type": "integer", "format": "int32"}
    if minimum is not None:
        schema["minimum"] = minimum
    return schema


@cache
def _required_attributes(class_name: str) -> frozenset[str]:
    """Attributes whose generated setter refuses ``None``: the API's required fields."""
    source = inspect.getsource(getattr(models, class_name))
    return frozenset(_REQUIRED_SETTER.findall(source))


def _type_schema(type_name: str, *, owner: str, attribute: str, seen: tuple[str, ...]) -> Schema:
    quantity = (owner, attribute) in QUANTITY_FIELDS
    if match := _LIST.match(type_name):
        items = _type_schema(match[1], owner=owner, attribute=attribute, seen=seen)
        if (owner, attribute) in SET_LISTS:
            return {"type": "array", "items": items, "x-kubernetes-list-type": "set"}
        return {"type": "array", "items": items}
    if match := _DICT.match(type_name):
        values = (
            _quantity() if quantity else _type_schema(match[1], owner=owner, attribute=attribute, seen=seen)
        )
        return {"type": "object", "additionalProperties": values}
    if quantity:
        if type_name != "str":
            raise TypeError(f"{owner}.{attribute}: a quantity typed {type_name!r}, expected str")
        return _quantity()
    if type_name == "object":
        return _int_or_string()
    if type_name == "int":
        return {"type": "integer", "format": "int64" if (owner, attribute) in INT64_FIELDS else "int32"}
    if type_name in _PRIMITIVES:
        return dict(_PRIMITIVES[type_name])
    if type_name == "V1ObjectMeta":
        return embedded_metadata_schema()
    return model_schema(type_name, seen=seen)


def model_schema(class_name: str, *, seen: tuple[str, ...] = ()) -> Schema:
    """The structural schema of one Kubernetes model class, recursively."""
    if class_name in seen:
        raise ValueError(f"recursive model {' -> '.join((*seen, class_name))}: not expressible in a CRD")
    cls = getattr(models, class_name)
    properties: dict[str, Schema] = {}
    for attribute, type_name in cls.openapi_types.items():
        schema = _type_schema(type_name, owner=class_name, attribute=attribute, seen=(*seen, class_name))
        if (class_name, attribute) in DEFAULTS:
            schema["default"] = DEFAULTS[(class_name, attribute)]
        properties[cls.attribute_map[attribute]] = schema
    schema = {"type": "object", "properties": dict(sorted(properties.items()))}
    required = sorted(cls.attribute_map[name] for name in _required_attributes(class_name))
    if required:
        schema["required"] = required
    return schema


def embedded_metadata_schema() -> Schema:
    """The part of ``ObjectMeta`` an object embedded in a TFJob (a pod or claim template) keeps."""
    meta = model_schema("V1ObjectMeta")
    return {
        "type": "object",
        "properties": {name: meta["properties"][name] for name in EMBEDDED_METADATA_FIELDS},
    }


def pod_template_schema() -> Schema:
    """``PodTemplateSpec`` from the client's ``V1PodTemplateSpec`` (``metadata`` and ``spec``)."""
    _check_tables()
    return model_schema("V1PodTemplateSpec")


def _check_tables() -> None:
    """A renamed client attribute must fail generation, not quietly turn a quantity into a string."""
    for owner, attribute in sorted({*QUANTITY_FIELDS, *DEFAULTS, *INT64_FIELDS, *SET_LISTS}):
        if attribute not in getattr(models, owner).openapi_types:
            raise KeyError(f"{owner}.{attribute} is not in kubernetes {_client_version()}")


def _client_version() -> str:
    import kubernetes  # type: ignore[import-untyped]

    return str(kubernetes.__version__)


def replica_spec_schema() -> Schema:
    return {
        "type": "object",
        "properties": {
            "replicas": _int32(minimum=0),
            "restartPolicy": {"type": "string", "enum": RESTART_POLICIES},
            "template": pod_template_schema(),
        },
    }


def run_policy_schema() -> Schema:
    return {
        "type": "object",
        "properties": {
            "activeDeadlineSeconds": {"type": "integer", "format": "int64", "minimum": 0},
            "backoffLimit": _int32(minimum=0),
            "cleanPodPolicy": {"type": "string", "enum": CLEAN_POD_POLICIES},
            "managedBy": {"type": "string"},
            "schedulingPolicy": {
                "type": "object",
                "properties": {
                    "minAvailable": _int32(),
                    "minResources": {"type": "object", "additionalProperties": _quantity()},
                    "priorityClass": {"type": "string"},
                    "queue": {"type": "string"},
                    "scheduleTimeoutSeconds": _int32(),
                },
            },
            "suspend": {"type": "boolean", "default": False},
            "ttlSecondsAfterFinished": _int32(minimum=0),
        },
    }


def status_schema() -> Schema:
    time = {"type": "string", "format": "date-time"}
    condition = {
        "type": "object",
        "required": ["status", "type"],
        "properties": {
            "lastTransitionTime": dict(time),
            "lastUpdateTime": dict(time),
            "message": {"type": "string"},
            "reason": {"type": "string"},
            "status": {"type": "string"},
            "type": {"type": "string"},
        },
    }
    replica_status = {
        "type": "object",
        "properties": {
            "active": _int32(),
            "failed": _int32(),
            "labelSelector": model_schema("V1LabelSelector"),
            "selector": {"type": "string"},
            "succeeded": _int32(),
        },
    }
    return {
        "type": "object",
        "properties": {
            "completionTime": dict(time),
            "conditions": {"type": "array", "items": condition},
            "lastReconcileTime": dict(time),
            "replicaStatuses": {"type": "object", "additionalProperties": replica_status},
            "startTime": dict(time),
        },
    }


def tfjob_crd() -> dict[str, Any]:
    """The whole CustomResourceDefinition document."""
    replica = replica_spec_schema()
    tfjob_spec = {
        "type": "object",
        "required": ["tfReplicaSpecs"],
        "properties": {
            "enableDynamicWorker": {"type": "boolean"},
            "runPolicy": run_policy_schema(),
            "successPolicy": {"type": "string", "enum": SUCCESS_POLICIES},
            "tfReplicaSpecs": {
                "type": "object",
                # One schema object shared by the five keys: the YAML file writes it once (an anchor).
                "properties": {replica_type: replica for replica_type in sorted(wire.REPLICA_TYPES)},
            },
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{wire.PLURAL}.{wire.GROUP}"},
        "spec": {
            "group": wire.GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": wire.KIND,
                "listKind": f"{wire.KIND}List",
                "plural": wire.PLURAL,
                "singular": wire.SINGULAR,
                "categories": ["all", "kubeflow"],
            },
            "versions": [
                {
                    "name": wire.VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "State", "type": "string", "jsonPath": ".status.conditions[-1:].type"},
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": tfjob_spec,
                                "status": status_schema(),
                            },
                        }
                    },
                }
            ],
        },
    }


_HEADER = (
    "# The TFJob CustomResourceDefinition (kubeflow.org/v1) that tfjob-sandbox installs when it starts.\n"
    "# Generated by tfjob-sandbox/tests/tfjob_crd_generator.py from the kubernetes {version}\n"
    "# client's models: do not edit; run `python tfjob-sandbox/tests/tfjob_crd_generator.py` instead.\n"
)


class _Dumper(yaml.SafeDumper):
    """Block-style YAML with an anchor only for the replica schema shared by the five keys."""

    def ignore_aliases(self, data: Any) -> bool:
        return not (isinstance(data, dict) and "restartPolicy" in data.get("properties", {}))


def render() -> str:
    """The file's text: the header, then the CRD (the shared replica schema written once)."""
    body = yaml.dump(tfjob_crd(), Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=200)
    return _HEADER.format(version=_client_version()) + body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed file is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = CRD_PATH.read_text(encoding="utf-8") if CRD_PATH.is_file() else ""
        if current != text:
            print(
                f"{CRD_PATH.name} is out of date: run python tfjob-sandbox/tests/tfjob_crd_generator.py",
                file=sys.stderr,
            )
            return 1
        return 0
    CRD_PATH.parent.mkdir(parents=True, exist_ok=True)
    CRD_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {CRD_PATH} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
