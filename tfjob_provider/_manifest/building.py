"""Build a TFJob manifest from typed, Airflow-friendly parameters.

Why this module exists: most TFJobs differ only in image, command, replica counts and a few run
policy knobs, and writing the nested Kubernetes structure by hand (``tfReplicaSpecs`` →
``template`` → ``spec`` → ``containers`` → the container that must be named ``tensorflow``) is
where mistakes happen.  The Airflow operator exposes these parameters almost one-to-one, so they
are snake_case, take plain JSON-able values that survive Jinja templating, and accept what a
template renders to (an integer arrives as ``"4"``).  The result always goes through
:func:`validate_tfjob`, so a typed build and a hand-written manifest obey the same rules.

Standard library only.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, Final, TypeAlias

from tfjob_provider._manifest.limits import shape_problem
from tfjob_provider._manifest.problems import ManifestError, Problem, child, did_you_mean
from tfjob_provider._manifest.validation import validate_tfjob
from tfjob_provider.clipping import shown
from tfjob_provider.constants import API_VERSION, DEFAULT_CONTAINER_NAME, KIND

EnvInput: TypeAlias = Mapping[str, Any] | Sequence[Mapping[str, Any]]

#: Default ``runPolicy.cleanPodPolicy`` of typed builds; see :func:`build_tfjob`.
DEFAULT_CLEAN_POD_POLICY: Final = "Running"
#: Default replica ``restartPolicy`` of typed builds: the training operator's own default, written out.
DEFAULT_RESTART_POLICY: Final = "Never"

_INTEGER_TEXT = re.compile(r"\s*[+-]?\d{1,30}\s*")  # longer numbers are left for the validator to refuse


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

_REPLICA_KEYS: Final = tuple(field.name for field in dataclasses.fields(ReplicaSpec))


def _integer_or_as_given(value: Any) -> Any:
    """``"4"`` → ``4`` (Jinja renders integers as text); anything else is left for the validator."""
    if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value):
        return int(value)
    return value


def _boolean_or_as_given(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value


class _Builder:
    """Collects problems with the parameters themselves while assembling the manifest."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, field: str, message: str, fix: str) -> None:
        self.problems.append(Problem(field, message, fix))

    def replica(self, param: str, value: ReplicaInput) -> ReplicaSpec | None:
        """Turn one of ``chief``/``worker``/``ps``/``evaluator`` into a ReplicaSpec (None = not present)."""
        value = _integer_or_as_given(value)
        if value is None:
            return None
        if isinstance(value, ReplicaSpec):
            spec = value
        elif isinstance(value, int) and not isinstance(value, bool):
            spec = ReplicaSpec(value)
        elif isinstance(value, Mapping):
            unknown = [key for key in value if key not in _REPLICA_KEYS]
            for key in unknown:
                hint = did_you_mean(key, _REPLICA_KEYS) if isinstance(key, str) else ""
                self.add(
                    child(param, key),
                    f"is not a replica setting{hint}.",
                    f"Use only {', '.join(_REPLICA_KEYS)}.",
                )
            known = {key: item for key, item in value.items() if key in _REPLICA_KEYS}
            known["replicas"] = _integer_or_as_given(known.get("replicas", 1))
            spec = ReplicaSpec(**known)
        else:
            self.add(
                param,
                f"must be a replica count, a ReplicaSpec or a dict, not {shown(value)}.",
                f"Pass e.g. {param}=2 or {param}={{'replicas': 2, 'restart_policy': 'OnFailure'}}.",
            )
            return ReplicaSpec()  # stand-in so that no follow-on "no Worker" problem is reported
        return None if spec.replicas == 0 else spec

    def string_list(self, param: str, value: Sequence[Any] | None) -> list[Any] | None:
        if value is None:
            return None
        if isinstance(value, str) or not isinstance(value, Sequence):
            self.add(
                param,
                f"must be a list of strings, not {shown(value)}.",
                f'Split it into a list, e.g. {param}=["python", "train.py"].',
            )
            return None
        # Numbers are written as text (["--epochs", 10] is meant as "10"); anything odder is left as is
        # so that the validator names it.
        return [
            str(item) if isinstance(item, int | float) and not isinstance(item, bool) else item
            for item in value
        ]

    def mapping(self, param: str, value: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """A copy of a dict parameter (labels, resources, …); None when not given or not a mapping."""
        if value is None:
            return None
        if not isinstance(value, Mapping):
            self.add(
                param,
                f"must be a mapping, not {shown(value)}.",
                f'Pass a dict, e.g. {param}={{"key": "value"}}.',
            )
            return None
        return dict(value)

    def mappings(self, param: str, value: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
        """Copies of a list-of-dicts parameter (volumes, tolerations, …); None when not given or wrong."""
        if value is None:
            return None
        if isinstance(value, str | Mapping) or not isinstance(value, Sequence):
            self.add(
                param, f"must be a list of mappings, not {shown(value)}.", f"Pass a list of dicts as {param}."
            )
            return None
        wrong = [index for index, item in enumerate(value) if not isinstance(item, Mapping)]
        for index in wrong[:3]:
            self.add(
                child(param, index), f"must be a mapping, not {shown(value[index])}.", "Pass a dict here."
            )
        return None if wrong else [dict(item) for item in value]

    def names(self, param: str, value: Sequence[str] | None) -> list[str] | None:
        """A list of names (image_pull_secrets)."""
        if value is None:
            return None
        if (
            isinstance(value, str)
            or not isinstance(value, Sequence)
            or not all(isinstance(v, str) for v in value)
        ):
            self.add(
                param, f"must be a list of names, not {shown(value)}.", f'Pass e.g. {param}=["regcred"].'
            )
            return None
        return list(value)

    def env(self, param: str, value: EnvInput | None) -> list[dict[str, Any]]:
        if value is None:
            return []
        if isinstance(value, Mapping):
            variables: list[dict[str, Any]] = []
            for name, item in value.items():
                if isinstance(item, Mapping):
                    variables.append({"name": name, "valueFrom": dict(item)})
                elif isinstance(item, bool):
                    variables.append({"name": name, "value": "true" if item else "false"})
                elif isinstance(item, str | int | float):
                    variables.append({"name": name, "value": str(item)})
                elif item is None:
                    variables.append({"name": name})
                else:
                    self.add(
                        child(param, name),
                        f"must be text, a number, a boolean or a valueFrom mapping, not {shown(item)}.",
                        "Give the value as text.",
                    )
            return variables
        is_list = isinstance(value, Sequence) and not isinstance(value, str)
        if is_list and all(isinstance(item, Mapping) for item in value):
            return [dict(item) for item in value]
        self.add(
            param,
            f"must be a mapping of name to value or a list of {{name, value}} dicts, not {shown(value)}.",
            f'Pass e.g. {param}={{"EPOCHS": "10"}}.',
        )
        return []


def _merge_env(base: list[dict[str, Any]], override: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Job-level env with this replica type's variables replacing those of the same name."""
    merged = {variable.get("name"): variable for variable in base}
    merged.update({variable.get("name"): variable for variable in override})
    return list(merged.values())


def _camel_case(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _scheduling_policy(value: Mapping[str, Any]) -> dict[str, Any]:
    """Accept the manifest's camelCase keys or their snake_case spelling (``min_available``)."""
    return {_camel_case(str(key)): _integer_or_as_given(item) for key, item in value.items()}


def _without_none(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}


def build_tfjob(
    *,
    name: str,
    image: str,
    command: Sequence[str] | None = None,
    args: Sequence[str] | None = None,
    env: EnvInput | None = None,
    resources: Mapping[str, Any] | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] | None = None,
    restart_policy: str = DEFAULT_RESTART_POLICY,
    chief: ReplicaInput = 0,
    worker: ReplicaInput = 1,
    ps: ReplicaInput = 0,
    evaluator: ReplicaInput = 0,
    success_policy: str | None = None,
    backoff_limit: int | str | None = None,
    active_deadline_seconds: int | str | None = None,
    clean_pod_policy: str | None = DEFAULT_CLEAN_POD_POLICY,
    ttl_seconds_after_finished: int | str | None = None,
    suspend: bool | str | None = None,
    scheduling_policy: Mapping[str, Any] | None = None,
    managed_by: str | None = None,
    enable_dynamic_worker: bool | str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    namespace: str | None = None,
    pod_labels: Mapping[str, str] | None = None,
    pod_annotations: Mapping[str, str] | None = None,
    service_account_name: str | None = None,
    image_pull_policy: str | None = None,
    image_pull_secrets: Sequence[str] | None = None,
    volumes: Sequence[Mapping[str, Any]] | None = None,
    volume_mounts: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Build and validate a TFJob manifest; raise :class:`ManifestError` listing every problem.

    Replica types: ``chief``, ``worker``, ``ps`` and ``evaluator`` each take a replica count, a
    :class:`ReplicaSpec`, or a dict with ReplicaSpec's field names; 0 or None leaves the type out.
    Each present type gets one container named ``tensorflow`` running *image* with *command*,
    *args*, *env* and *resources* (overridable per type).  Parameters left at None are not
    written, so the training operator's defaults apply — except two written on purpose:

    * ``restart_policy`` (per replica type, default ``"Never"``, the operator's own default)
      is spelled out so that the manifest shown in the Airflow UI says what will happen.
    * ``clean_pod_policy`` defaults to ``"Running"``, not the operator's ``None``.  PS pods serve
      until they are killed and never exit by themselves, and in worker-0 mode the other workers
      may still run when worker 0 has decided the job; with ``None`` all of them keep running —
      and holding their nodes and GPUs — after the job has finished (also after a backoffLimit
      or deadline failure since operator v1.9.4).  ``"Running"`` deletes the pods still Running
      or Pending once the job has finished and keeps the Succeeded and Failed pods, whose logs
      and exit codes explain the outcome.  Pass ``None`` for the operator's default.

    Integers may arrive as decimal text and booleans as ``"true"``/``"false"``, because that is
    what Jinja renders; problems name the manifest field a parameter fills
    (``spec.tfReplicaSpecs.Worker.replicas`` for ``worker``), or the parameter itself when it
    could not be used at all.  A parameter over the limits of :mod:`.limits` (nesting, size) is
    refused before anything copies or walks it.
    """
    given = dict(locals())
    over_limits = [problem for field, value in given.items() if (problem := shape_problem(value, field))]
    if over_limits:
        raise ManifestError(over_limits)
    builder = _Builder()
    labels, annotations = builder.mapping("labels", labels), builder.mapping("annotations", annotations)
    pod_labels = builder.mapping("pod_labels", pod_labels)
    pod_annotations = builder.mapping("pod_annotations", pod_annotations)
    resources, node_selector = (
        builder.mapping("resources", resources),
        builder.mapping("node_selector", node_selector),
    )
    scheduling_policy = builder.mapping("scheduling_policy", scheduling_policy)
    tolerations, volumes = builder.mappings("tolerations", tolerations), builder.mappings("volumes", volumes)
    volume_mounts = builder.mappings("volume_mounts", volume_mounts)
    image_pull_secrets = builder.names("image_pull_secrets", image_pull_secrets)
    job_env = builder.env("env", env)
    job_command = builder.string_list("command", command)
    job_args = builder.string_list("args", args)
    replica_params = {
        "Chief": ("chief", chief),
        "Worker": ("worker", worker),
        "PS": ("ps", ps),
        "Evaluator": ("evaluator", evaluator),
    }
    replica_specs: dict[str, Any] = {}
    for replica_type, (param, value) in replica_params.items():
        spec = builder.replica(param, value)
        if spec is None:
            continue
        container = _without_none(
            {
                "name": DEFAULT_CONTAINER_NAME,
                "image": spec.image if spec.image is not None else image,
                "imagePullPolicy": image_pull_policy,
                "command": job_command
                if spec.command is None
                else builder.string_list(child(param, "command"), spec.command),
                "args": job_args
                if spec.args is None
                else builder.string_list(child(param, "args"), spec.args),
                "env": _merge_env(job_env, builder.env(child(param, "env"), spec.env)) or None,
                "resources": (
                    builder.mapping(child(param, "resources"), spec.resources)
                    if spec.resources is not None
                    else resources
                )
                or None,
                "volumeMounts": [dict(mount) for mount in volume_mounts] if volume_mounts else None,
            }
        )
        chosen_selector = (
            builder.mapping(child(param, "node_selector"), spec.node_selector)
            if spec.node_selector is not None
            else node_selector
        )
        chosen_tolerations = (
            builder.mappings(child(param, "tolerations"), spec.tolerations)
            if spec.tolerations is not None
            else tolerations
        )
        pod_spec = _without_none(
            {
                "containers": [container],
                "serviceAccountName": service_account_name,
                "nodeSelector": dict(chosen_selector) if chosen_selector else None,
                "tolerations": [dict(item) for item in chosen_tolerations] if chosen_tolerations else None,
                "imagePullSecrets": [{"name": secret} for secret in image_pull_secrets]
                if image_pull_secrets
                else None,
                "volumes": [dict(volume) for volume in volumes] if volumes else None,
            }
        )
        template_metadata = _without_none(
            {
                "labels": dict(pod_labels) if pod_labels else None,
                "annotations": dict(pod_annotations) if pod_annotations else None,
            }
        )
        template = (
            {"metadata": template_metadata, "spec": pod_spec} if template_metadata else {"spec": pod_spec}
        )
        replica_specs[replica_type] = {
            "replicas": _integer_or_as_given(spec.replicas),
            "restartPolicy": spec.restart_policy if spec.restart_policy is not None else restart_policy,
            "template": template,
        }
    run_policy = _without_none(
        {
            "cleanPodPolicy": clean_pod_policy,
            "ttlSecondsAfterFinished": _integer_or_as_given(ttl_seconds_after_finished),
            "activeDeadlineSeconds": _integer_or_as_given(active_deadline_seconds),
            "backoffLimit": _integer_or_as_given(backoff_limit),
            "schedulingPolicy": _scheduling_policy(scheduling_policy)
            if scheduling_policy is not None
            else None,
            "suspend": _boolean_or_as_given(suspend),
            "managedBy": managed_by,
        }
    )
    spec_fields = _without_none(
        {
            "tfReplicaSpecs": replica_specs,
            "runPolicy": run_policy or None,
            "successPolicy": success_policy,
            "enableDynamicWorker": _boolean_or_as_given(enable_dynamic_worker),
        }
    )
    metadata = _without_none(
        {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels) if labels else None,
            "annotations": dict(annotations) if annotations else None,
        }
    )
    manifest = {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec_fields}
    try:
        validated = validate_tfjob(manifest)
    except ManifestError as error:
        raise ManifestError([*builder.problems, *error.problems]) from None
    if builder.problems:
        raise ManifestError(builder.problems)
    return validated
