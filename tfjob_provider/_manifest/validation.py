""":func:`validate_tfjob`: every problem of a TFJob manifest at once, against the training operator
v1.9's webhook and CRD plus the mistakes they let through (docs/reference/manifest.md);
:func:`resolve_namespace`.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any, Final

from tfjob_provider._manifest.checks import INT64_MAX, ProblemCollector, as_text, describe
from tfjob_provider._manifest.limits import shape_problem
from tfjob_provider._manifest.problems import ManifestError, Problem, child, closest, one_of
from tfjob_provider.constants import (
    API_VERSION,
    CHIEF_TYPES,
    DEFAULT_CONTAINER_NAME,
    KIND,
    MANAGED_BY_MULTIKUEUE,
    MANAGED_BY_TRAINING_OPERATOR,
    REPLICA_TYPES,
)
from tfjob_provider.naming import (
    DNS_LABEL_MAX_LENGTH,
    is_dns1123_label,
    is_label_value,
    is_qualified_key,
    sanitize_label_value,
    suggest_dns1035_label,
)

RESTART_POLICIES: Final = ("Never", "OnFailure", "Always", "ExitCode")
CLEAN_POD_POLICIES: Final = ("None", "Running", "All")
SUCCESS_POLICIES: Final = ("", "AllWorkers")
MANAGED_BY_VALUES: Final = (MANAGED_BY_TRAINING_OPERATOR, MANAGED_BY_MULTIKUEUE)

_TOP_FIELDS: Final = ("apiVersion", "kind", "metadata", "spec", "status")
_SPEC_FIELDS: Final = ("tfReplicaSpecs", "runPolicy", "successPolicy", "enableDynamicWorker")
_REPLICA_FIELDS: Final = ("replicas", "restartPolicy", "template")
_RUN_POLICY_FIELDS: Final = (
    "cleanPodPolicy",
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "backoffLimit",
    "schedulingPolicy",
    "suspend",
    "managedBy",
)
_SCHEDULING_FIELDS: Final = (
    "minAvailable",
    "queue",
    "minResources",
    "priorityClass",
    "scheduleTimeoutSeconds",
)
_TEMPLATE_FIELDS: Final = ("metadata", "spec")
_POD_SPEC_HINTS: Final = ("containers", "initContainers", "volumes", "nodeSelector", "tolerations")

#: Where a field that appears at the wrong level belongs, for "move it" fixes.
_HOME_OF: Final[Mapping[str, str]] = {
    **{name: "spec.runPolicy" for name in _RUN_POLICY_FIELDS},
    **{name: "spec" for name in _SPEC_FIELDS},
    **{name: "spec.tfReplicaSpecs.<Type>" for name in _REPLICA_FIELDS},
    **{name: "spec.tfReplicaSpecs.<Type>.template.spec" for name in _POD_SPEC_HINTS},
    **{name: "spec.tfReplicaSpecs" for name in REPLICA_TYPES},
}

_REPLICA_PATH = re.compile(r"spec\.tfReplicaSpecs\.(\w+)")


def _home_of(name: str, *, near: str) -> str:
    """Where field *name* belongs, naming the replica type when the mistake was made inside one."""
    home = _HOME_OF.get(name, "")
    inside_replica = _REPLICA_PATH.match(near)
    return home.replace("<Type>", inside_replica.group(1)) if inside_replica else home


_QUANTITY = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?(\d+(\.\d*)?|\.\d+))?")
_SERVICE_NAME_LIMIT: Final = DNS_LABEL_MAX_LENGTH
#: No image reference (registry/repository:tag@digest) contains whitespace or a control character.
_IMAGE_FORBIDDEN = re.compile(r"[\s\x00-\x1f\x7f]")
_DNS1035_PATTERN = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")  # the length is checked with the pod names


def type_meta_problems(manifest: Mapping[str, Any]) -> list[Problem]:
    """Problems with ``apiVersion`` and ``kind``: the manifest must be a ``kubeflow.org/v1`` ``TFJob``."""
    problems: list[Problem] = []
    api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
    if api_version != API_VERSION:
        message = "is missing." if api_version is None else f"is {describe(api_version)}, not {API_VERSION}."
        fix = f"Set apiVersion: {API_VERSION} (the version the training operator v1.x serves TFJobs under)."
        problems.append(Problem("apiVersion", message, fix))
    if kind != KIND:
        if kind is None:
            message, fix = "is missing.", f"Set kind: {KIND}."
        else:
            message = f"is {describe(kind)}; this provider submits TFJobs only."
            case_only = isinstance(kind, str) and kind.lower() == KIND.lower()
            fix = f"Set kind: {KIND}" + (
                " (kinds are case-sensitive)."
                if case_only
                else "; other Kubeflow job kinds need their own operator."
            )
        problems.append(Problem("kind", message, fix))
    return problems


def _unknown_fields(
    checker: ProblemCollector, path: str, mapping: Mapping[str, Any], allowed: tuple[str, ...]
) -> None:
    """Report keys of *mapping* that do not belong at *path*, with a "did you mean" or "move it"."""
    here = path or "the top level"
    for key in mapping:
        if key in allowed:
            continue
        field = child(path, key)
        name = as_text(key)
        guess = closest(name, allowed)
        home = _home_of(name, near=path)
        if home and guess != name:
            message = f"unknown field: {name} does not belong in {here}."
            fix = f"Move it to {child(home, name)}."
        elif guess is not None:
            message = f'unknown field "{name}" in {here}.'
            fix = f'Did you mean "{guess}"? (field names are case-sensitive)'
        else:
            near_home = closest(name, _HOME_OF)
            message = f'unknown field "{name}" in {here}.'
            if near_home is not None:
                target = child(_home_of(near_home, near=path), near_home)
                fix = f'Did you mean "{near_home}"? It belongs in {target}.'
            else:
                fix = f"Remove it; the fields allowed here are {one_of(allowed)}."
        checker.add(field, message, fix)


def _check_metadata(checker: ProblemCollector, manifest: Mapping[str, Any]) -> str | None:
    """Check metadata; return the name when it is a valid DNS-1035 pattern (length checked later)."""
    if "metadata" not in manifest or manifest["metadata"] is None:
        checker.add(
            "metadata.name", "is missing.", "Set metadata.name (the Airflow operator fills it in for you)."
        )
        return None
    metadata = checker.mapping("metadata", manifest["metadata"], what="object metadata")
    if metadata is None:
        return None
    name = metadata.get("name")
    valid_name: str | None = None
    if name is None or name == "":
        checker.add(
            "metadata.name", "is missing.", "Set metadata.name (the Airflow operator fills it in for you)."
        )
    elif not isinstance(name, str):
        checker.add("metadata.name", f"must be a string, not {describe(name)}.", "Quote the name.")
    elif _DNS1035_PATTERN.fullmatch(name) is None:
        message = (
            f'"{as_text(name)}" is not a DNS-1035 label: use lower-case letters, digits and "-", '
            "start with a letter and end with a letter or digit."
        )
        checker.add("metadata.name", message, f'Rename it, e.g. "{suggest_dns1035_label(name)}".')
    else:
        valid_name = name
    namespace = metadata.get("namespace")
    if namespace is not None and (not isinstance(namespace, str) or not is_dns1123_label(namespace)):
        checker.add(
            "metadata.namespace",
            f"{describe(namespace)} is not a valid namespace name.",
            "Use a DNS-1123 label: lower-case letters, digits and '-', at most 63 characters.",
        )
    if resource_version := metadata.get("resourceVersion"):
        message = (
            f'is set ("{as_text(resource_version)}"): the API server refuses to create an object '
            "that carries one."
        )
        fix = "Remove it, and uid and creationTimestamp too if this came from `kubectl get -o yaml`."
        checker.add("metadata.resourceVersion", message, fix)
    _check_string_map(checker, "metadata.labels", metadata.get("labels"), labels=True)
    _check_string_map(checker, "metadata.annotations", metadata.get("annotations"), labels=False)
    return valid_name


def _check_string_map(checker: ProblemCollector, path: str, value: Any, *, labels: bool) -> None:
    if value is None:
        return
    entries = checker.mapping(path, value, what="keys to string values")
    for key, item in (entries or {}).items():
        field = child(path, key)
        if isinstance(key, str) and not is_qualified_key(key):
            checker.add(
                field,
                f'"{as_text(key)}" is not a valid key.',
                "Use [prefix/]name: name ≤ 63 alphanumerics, '-', '_', '.'; prefix a DNS subdomain.",
            )
        if not isinstance(item, str):
            checker.add(
                field, f"must be a string, not {describe(item)}.", f'Quote the value: "{as_text(item)}".'
            )
        elif labels and not is_label_value(item):
            checker.add(
                field,
                f'"{as_text(item)}" is not a valid label value.',
                f'Use at most 63 alphanumerics, "-", "_" or "." (e.g. "{sanitize_label_value(item)}").',
            )


def _canonical_type(key: str) -> str | None:
    return next((name for name in REPLICA_TYPES if name.lower() == key.lower()), None)


def _rekey_replica_specs(
    checker: ProblemCollector, path: str, specs: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Re-case keys as the operator's defaulter does; return (re-keyed copy, canonical → key as written)."""
    rekeyed: dict[str, Any] = {}
    written: dict[str, str] = {}
    for key, replica in specs.items():
        if not isinstance(key, str):
            rekeyed[key] = replica
            continue
        canonical = _canonical_type(key)
        if canonical is None:
            alias = (
                "PS"
                if re.sub(r"[^a-z]", "", key.lower()) in {"parameterserver", "parameterservers"}
                else None
            )
            guess = alias or closest(key, REPLICA_TYPES)
            hint = f'Did you mean "{guess}"? ' if guess else ""
            checker.add(
                child(path, key),
                f'unknown replica type "{as_text(key)}".',
                f"{hint}Replica types are {one_of(REPLICA_TYPES)}.",
            )
            rekeyed[key] = replica
        elif canonical in written:
            checker.add(
                child(path, key),
                f'is the same replica type as "{written[canonical]}".',
                f"Merge them into one {canonical} entry.",
            )
        else:
            written[canonical] = key
            rekeyed[canonical] = replica
    return rekeyed, written


def _effective_pod_restart_policy(restart_policy: Any) -> str:
    if restart_policy == "ExitCode":
        return "Never"  # the controller restarts ExitCode replicas itself (R14)
    return restart_policy if isinstance(restart_policy, str) and restart_policy else "Never"


def _check_containers(
    checker: ProblemCollector, path: str, containers: Any, *, required: bool, replica: str
) -> None:
    if containers is None and not required:
        return
    if not isinstance(containers, list) or not containers:
        what = (
            "has no containers" if containers in (None, []) else f"must be a list, not {describe(containers)}"
        )
        checker.add(
            path,
            f'{what}; the {replica} replicas need a container named "{DEFAULT_CONTAINER_NAME}".',
            f"Add a container with name: {DEFAULT_CONTAINER_NAME} and an image.",
        )
        return
    names: dict[str, int] = {}
    for index, container in enumerate(containers):
        field = child(path, index)
        spec = checker.mapping(field, container, what="a container")
        if spec is None:
            continue
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            checker.add(
                child(field, "name"),
                "is missing." if name in (None, "") else f"must be a string, not {describe(name)}.",
                "Give every container a unique name.",
            )
        elif name in names:
            checker.add(
                child(field, "name"),
                f'"{as_text(name)}" is used by container {names[name]} too.',
                "Give every container a unique name.",
            )
        else:
            names[name] = index
        image = spec.get("image")
        if not isinstance(image, str) or not image.strip():
            if image is None:
                message = "is missing."
            elif isinstance(image, str):
                message = "is empty."
            else:
                message = f"must be a non-empty string, not {describe(image)}."
            checker.add(
                child(field, "image"), message, "Set the container image, e.g. registry/team/trainer:1.4."
            )
        elif _IMAGE_FORBIDDEN.search(image):
            checker.add(
                child(field, "image"),
                f'"{as_text(image)}" is not an image reference: it contains a space or a control character.',
                "Write the image as registry/repository:tag, without spaces or control characters.",
            )
        for key in ("command", "args"):
            items = spec.get(key)
            if items is None:
                continue
            if not isinstance(items, list):
                checker.add(
                    child(field, key),
                    f"must be a list of strings, not {describe(items)}.",
                    f'Write it as a list, e.g. {key}: ["python", "train.py"].',
                )
                continue
            for position, item in enumerate(items):
                if not isinstance(item, str):
                    checker.add(
                        child(child(field, key), position),
                        f"must be a string, not {describe(item)}.",
                        f'Quote it: "{as_text(item)}".',
                    )
        _check_env(checker, child(field, "env"), spec.get("env"))
        _check_kinds(checker, field, spec, _CONTAINER_KINDS)
    if required and DEFAULT_CONTAINER_NAME not in names:
        guess = closest(DEFAULT_CONTAINER_NAME, names)
        only = next(iter(names)) if len(names) == 1 else None
        rename = guess or only
        hint = f' (rename "{as_text(rename)}")' if rename else ""
        message = (
            f'has no container named "{DEFAULT_CONTAINER_NAME}": the training operator reads the exit '
            "code of that container and gives it TF_CONFIG."
        )
        checker.add(path, message, f'Name the training container "{DEFAULT_CONTAINER_NAME}"{hint}.')


#: Pod spec and container fields whose kind (list or mapping) is checked: the ones manifests most
#: often get wrong.  The API server checks the rest of the pod spec — after the request is made.
_POD_SPEC_KINDS: Final[Mapping[str, type]] = {
    "volumes": list,
    "tolerations": list,
    "imagePullSecrets": list,
    "nodeSelector": dict,
    "affinity": dict,
    "securityContext": dict,
}
_CONTAINER_KINDS: Final[Mapping[str, type]] = {
    "ports": list,
    "volumeMounts": list,
    "envFrom": list,
    "resources": dict,
    "securityContext": dict,
}


def _check_kinds(
    checker: ProblemCollector, path: str, spec: Mapping[str, Any], kinds: Mapping[str, type]
) -> None:
    for key, kind in kinds.items():
        value = spec.get(key)
        if value is None:
            continue
        if kind is list and not isinstance(value, list):
            checker.add(
                child(path, key), f"must be a list, not {describe(value)}.", f"Write {key} as a list."
            )
        elif kind is dict:
            checker.mapping(child(path, key), value, what=f"the {key} fields")


def _check_env(checker: ProblemCollector, path: str, env: Any) -> None:
    if env is None:
        return
    if not isinstance(env, list):
        checker.add(
            path,
            f"must be a list of {{name, value}} entries, not {describe(env)}.",
            'Write env as a list of entries such as {name: EPOCHS, value: "10"}.',
        )
        return
    for index, variable in enumerate(env):
        field = child(path, index)
        entry = checker.mapping(field, variable, what="an environment variable")
        if entry is None:
            continue
        if not isinstance(entry.get("name"), str) or not entry.get("name"):
            checker.add(child(field, "name"), "is missing.", "Give every environment variable a name.")
        value = entry.get("value")
        if value is not None and not isinstance(value, str):
            checker.add(
                child(field, "value"),
                f"must be a string, not {describe(value)}.",
                f'Quote it: "{as_text(value)}".',
            )


def _check_replica(
    checker: ProblemCollector, path: str, replica_type: str, replica: Any, *, decides_success: bool, role: str
) -> int | None:
    """Check one replica spec; return its replica count (default 1) when valid."""
    if replica is None:
        checker.add(
            path,
            "is empty.",
            f'Give it a template whose spec has a container named "{DEFAULT_CONTAINER_NAME}".',
        )
        return None
    spec = checker.mapping(path, replica, what="a replica spec")
    if spec is None:
        return None
    _unknown_fields(checker, path, spec, _REPLICA_FIELDS)
    count: int | None = 1
    if spec.get("replicas") is not None:
        count = checker.integer(child(path, "replicas"), spec["replicas"], minimum=0)
        if count == 0 and decides_success:
            checker.add(
                child(path, "replicas"),
                f"is 0 on the {replica_type} replicas, which {role}: the training operator would report "
                "the job Succeeded at once, without training.",
                "Set replicas to at least 1.",
            )
    restart_policy = spec.get("restartPolicy")
    if restart_policy is not None:
        policy = checker.choice(
            child(path, "restartPolicy"), restart_policy, RESTART_POLICIES, what="restart policy"
        )
        if policy == "Always" and decides_success:
            checker.add(
                child(path, "restartPolicy"),
                f"is Always on the {replica_type} replicas, which {role}: the kubelet restarts them even "
                "after a successful exit, so the job could never succeed.",
                "Use OnFailure, ExitCode or Never.",
            )
    template_path = child(path, "template")
    if spec.get("template") is None:
        checker.add(
            template_path,
            "is missing.",
            f'Add a pod template whose spec has a container named "{DEFAULT_CONTAINER_NAME}".',
        )
        return count
    template = checker.mapping(template_path, spec["template"], what="a pod template")
    if template is None:
        return count
    _unknown_fields(checker, template_path, template, _TEMPLATE_FIELDS)
    if template.get("metadata") is not None:
        pod_metadata_path = child(template_path, "metadata")
        pod_metadata = checker.mapping(pod_metadata_path, template["metadata"], what="pod metadata")
        if pod_metadata is not None:
            _check_string_map(
                checker, child(pod_metadata_path, "labels"), pod_metadata.get("labels"), labels=True
            )
            _check_string_map(
                checker,
                child(pod_metadata_path, "annotations"),
                pod_metadata.get("annotations"),
                labels=False,
            )
    pod_path = child(template_path, "spec")
    if template.get("spec") is None:
        checker.add(
            pod_path, "is missing.", f'Add spec.containers with a container named "{DEFAULT_CONTAINER_NAME}".'
        )
        return count
    pod = checker.mapping(pod_path, template["spec"], what="a pod spec")
    if pod is None:
        return count
    _check_kinds(checker, pod_path, pod, _POD_SPEC_KINDS)
    _check_containers(
        checker, child(pod_path, "containers"), pod.get("containers"), required=True, replica=replica_type
    )
    _check_containers(
        checker,
        child(pod_path, "initContainers"),
        pod.get("initContainers"),
        required=False,
        replica=replica_type,
    )
    pod_restart = pod.get("restartPolicy")
    effective = _effective_pod_restart_policy(restart_policy)
    if pod_restart is not None and pod_restart != effective:
        checker.add(
            child(pod_path, "restartPolicy"),
            f'is {describe(pod_restart)}, but the training operator overwrites it with "{effective}" '
            f"(from the replica's restartPolicy).",
            f"Remove it and set {child(path, 'restartPolicy')} instead.",
        )
    return count


def _check_run_policy(checker: ProblemCollector, run_policy: Any) -> None:
    path = "spec.runPolicy"
    policy = checker.mapping(path, run_policy, what="the run policy")
    if policy is None:
        return
    _unknown_fields(checker, path, policy, _RUN_POLICY_FIELDS)
    if policy.get("cleanPodPolicy") is not None:
        checker.choice(
            child(path, "cleanPodPolicy"),
            policy["cleanPodPolicy"],
            CLEAN_POD_POLICIES,
            what="clean pod policy",
        )
    if policy.get("ttlSecondsAfterFinished") is not None:
        checker.integer(child(path, "ttlSecondsAfterFinished"), policy["ttlSecondsAfterFinished"], minimum=0)
    if policy.get("activeDeadlineSeconds") is not None:
        deadline = policy["activeDeadlineSeconds"]
        if deadline == 0 and not isinstance(deadline, bool):
            checker.add(
                child(path, "activeDeadlineSeconds"),
                "is 0: the training operator fails the job as soon as it starts.",
                "Use a positive number of seconds, or remove it for no deadline.",
            )
        else:
            checker.integer(child(path, "activeDeadlineSeconds"), deadline, minimum=1, maximum=INT64_MAX)
    if policy.get("backoffLimit") is not None:
        checker.integer(child(path, "backoffLimit"), policy["backoffLimit"], minimum=0)
    if policy.get("suspend") is not None:
        checker.boolean(child(path, "suspend"), policy["suspend"])
    if policy.get("managedBy") is not None:
        checker.choice(
            child(path, "managedBy"), policy["managedBy"], MANAGED_BY_VALUES, what="managedBy value"
        )
    if policy.get("schedulingPolicy") is not None:
        _check_scheduling_policy(checker, child(path, "schedulingPolicy"), policy["schedulingPolicy"])


def _check_scheduling_policy(checker: ProblemCollector, path: str, value: Any) -> None:
    policy = checker.mapping(path, value, what="the gang-scheduling policy")
    if policy is None:
        return
    _unknown_fields(checker, path, policy, _SCHEDULING_FIELDS)
    for key in ("minAvailable", "scheduleTimeoutSeconds"):
        if policy.get(key) is not None:
            checker.integer(child(path, key), policy[key], minimum=0)
    for key in ("queue", "priorityClass"):
        if policy.get(key) is not None:
            checker.string(child(path, key), policy[key], allow_empty=False)
    resources = policy.get("minResources")
    if resources is not None:
        entries = checker.mapping(child(path, "minResources"), resources, what="resource name to quantity")
        for name, quantity in (entries or {}).items():
            text = str(quantity) if isinstance(quantity, int) and not isinstance(quantity, bool) else quantity
            if not isinstance(text, str) or _QUANTITY.fullmatch(text) is None:
                checker.add(
                    child(child(path, "minResources"), name),
                    f"{describe(quantity)} is not a quantity.",
                    'Use a Kubernetes quantity such as 4, "500m" or "16Gi".',
                )


def _check_name_length(checker: ProblemCollector, name: str, counts: Mapping[str, int]) -> None:
    """Every ``<name>-<type>-<last index>`` pod and service name must be a DNS-1035 label (≤ 63)."""
    longest = ""
    for replica_type, count in (counts or {"": 1}).items():
        derived = f"{name}-{replica_type.lower()}-{max(count - 1, 0)}" if replica_type else name
        if len(derived) > len(longest):
            longest = derived
    if len(longest) <= _SERVICE_NAME_LIMIT:
        return
    allowed = len(name) - (len(longest) - _SERVICE_NAME_LIMIT)
    if longest == name:
        message = f"is {len(name)} characters; Kubernetes allows at most {_SERVICE_NAME_LIMIT}."
    else:
        message = (
            f"is {len(name)} characters: the training operator would name a pod and its service "
            f'"{as_text(longest)}" ({len(longest)} characters), over the {_SERVICE_NAME_LIMIT}-character '
            "limit for Kubernetes service names."
        )
    checker.add("metadata.name", message, f"Shorten the name to at most {max(allowed, 1)} characters.")


def _check_spec(checker: ProblemCollector, manifest: dict[str, Any]) -> dict[str, int]:
    """Check spec; re-key tfReplicaSpecs in *manifest*; return replica counts by canonical type."""
    if manifest.get("spec") is None:
        checker.add(
            "spec", "is missing.", "Add spec.tfReplicaSpecs with at least a Worker (or Chief) replica spec."
        )
        return {}
    spec = checker.mapping("spec", manifest["spec"], what="the TFJob spec")
    if spec is None:
        return {}
    _unknown_fields(checker, "spec", spec, _SPEC_FIELDS)
    counts: dict[str, int] = {}
    success_policy = spec.get("successPolicy")
    if success_policy is not None:
        checker.choice("spec.successPolicy", success_policy, SUCCESS_POLICIES, what="success policy")
    if spec.get("enableDynamicWorker") is not None:
        checker.boolean("spec.enableDynamicWorker", spec["enableDynamicWorker"])
    if spec.get("runPolicy") is not None:
        _check_run_policy(checker, spec["runPolicy"])
    path = "spec.tfReplicaSpecs"
    if spec.get("tfReplicaSpecs") is None:
        checker.add(path, "is missing.", "Add at least a Worker (or Chief) replica spec.")
        return counts
    replica_specs = checker.mapping(path, spec["tfReplicaSpecs"], what="replica type to replica spec")
    if replica_specs is None:
        return counts
    rekeyed, written = _rekey_replica_specs(checker, path, replica_specs)
    manifest["spec"] = {**spec, "tfReplicaSpecs": rekeyed}
    chiefs = [name for name in CHIEF_TYPES if name in written]
    if len(chiefs) > 1:
        checker.add(
            path,
            "has both Chief and Master; they are the same role and only one may be given.",
            "Keep one of them (Chief is the current name, Master the old one).",
        )
    if not chiefs and "Worker" not in written:
        checker.add(
            path,
            "has no Chief, Master or Worker: the training operator decides success from the chief or "
            "from worker 0, so this job could never succeed.",
            "Add a Worker (or a Chief) replica spec.",
        )
    decider = chiefs[0] if chiefs else "Worker"
    role = "decide the job's success" if chiefs else "decide the job's success when there is no Chief"
    for canonical, key in written.items():
        count = _check_replica(
            checker,
            child(path, key),
            canonical,
            rekeyed[canonical],
            decides_success=canonical in (decider, *chiefs),
            role=role,
        )
        if count is not None:
            counts[canonical] = count
    if success_policy == "AllWorkers" and chiefs:
        checker.add(
            "spec.successPolicy",
            f"is AllWorkers, but with a {chiefs[0]} replica the {chiefs[0]} alone "
            "decides success and the training operator ignores successPolicy.",
            f"Remove successPolicy, or remove the {chiefs[0]} so that all workers must succeed.",
        )
    return counts


def validate_tfjob(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """Return a normalised deep copy of *manifest*, or raise :class:`ManifestError` listing every problem.

    Normalisation is only what the training operator's defaulter does to keys: replica types
    given in another case (``worker``, ``ps``) become ``Worker``, ``PS``…  No defaults are added
    and nothing else is changed.  Pure: no I/O, never touches the network.
    """
    if not isinstance(manifest, Mapping):
        fix = "Pass the manifest as a mapping (load_tfjob reads YAML, JSON and files)."
        raise ManifestError(
            [Problem("document", f"The manifest is {describe(manifest)}, not a mapping.", fix)]
        )
    if (problem := shape_problem(manifest)) is not None:
        raise ManifestError([problem])  # nothing below may recurse into it, copy it or send it
    checker = ProblemCollector()
    normalised: dict[str, Any] = copy.deepcopy(dict(manifest))
    checker.json_values("", normalised)
    checker.problems.extend(type_meta_problems(normalised))
    _unknown_fields(checker, "", normalised, _TOP_FIELDS)
    name = _check_metadata(checker, normalised)
    counts = _check_spec(checker, normalised)
    if name is not None:
        _check_name_length(checker, name, counts)
    if checker.problems:
        raise ManifestError(checker.problems)
    return normalised


def resolve_namespace(manifest: Mapping[str, Any], *, requested: str | None, fallback: str) -> str:
    """The namespace to submit *manifest* to, reconciling ``metadata.namespace`` with the task's.

    *requested* is the namespace the user gave the Airflow task (None when not given);
    *fallback* is where to go when neither says (the connection's namespace, or "default").
    A manifest namespace that differs from *requested* is a :class:`ManifestError`: silently
    preferring either would submit the job where one of the two settings says it is not.
    """
    metadata = manifest.get("metadata")
    written = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    if written in (None, ""):
        chosen = requested or fallback
    elif requested and written != requested:
        message = f'is "{as_text(written)}", but the task asks for namespace "{as_text(requested)}".'
        fix = "Remove metadata.namespace from the manifest, or give the task the same namespace."
        raise ManifestError([Problem("metadata.namespace", message, fix)])
    else:
        chosen = written
    if not isinstance(chosen, str) or not is_dns1123_label(chosen):
        raise ManifestError(
            [
                Problem(
                    "metadata.namespace",
                    f"{describe(chosen)} is not a valid namespace name.",
                    "Use a DNS-1123 label: lower-case letters, digits and '-', at most 63.",
                )
            ]
        )
    return chosen


__all__ = [
    "CLEAN_POD_POLICIES",
    "MANAGED_BY_VALUES",
    "RESTART_POLICIES",
    "SUCCESS_POLICIES",
    "resolve_namespace",
    "type_meta_problems",
    "validate_tfjob",
]
