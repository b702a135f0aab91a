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

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tfjob_provider._manifest.build_parameters import (
    DEFAULT_CLEAN_POD_POLICY,
    DEFAULT_RESTART_POLICY,
    REPLICA_KEYS,
    ContainerSettings,
    EnvInput,
    JobSettings,
    PodSettings,
    ReplicaInput,
    ReplicaLayout,
    ReplicaSpec,
    RunPolicySettings,
)
from tfjob_provider._manifest.limits import shape_problem
from tfjob_provider._manifest.problems import ManifestError, Problem, child, did_you_mean
from tfjob_provider._manifest.validation import validate_tfjob
from tfjob_provider.clipping import shown
from tfjob_provider.constants import API_VERSION, DEFAULT_CONTAINER_NAME, KIND

_INTEGER_TEXT = re.compile(r"\s*[+-]?\d{1,30}\s*")  # longer numbers are left for the validator to refuse


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
            unknown = [key for key in value if key not in REPLICA_KEYS]
            for key in unknown:
                hint = did_you_mean(key, REPLICA_KEYS) if isinstance(key, str) else ""
                self.add(
                    child(param, key),
                    f"is not a replica setting{hint}.",
                    f"Use only {', '.join(REPLICA_KEYS)}.",
                )
            known = {key: item for key, item in value.items() if key in REPLICA_KEYS}
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
    return compose_tfjob(
        JobSettings(
            name=name,
            namespace=namespace,
            labels=labels,
            annotations=annotations,
            success_policy=success_policy,
            enable_dynamic_worker=enable_dynamic_worker,
        ),
        ReplicaLayout(chief=chief, worker=worker, ps=ps, evaluator=evaluator, restart_policy=restart_policy),
        ContainerSettings(
            image=image,
            command=command,
            args=args,
            env=env,
            resources=resources,
            image_pull_policy=image_pull_policy,
            volume_mounts=volume_mounts,
        ),
        PodSettings(
            labels=pod_labels,
            annotations=pod_annotations,
            node_selector=node_selector,
            tolerations=tolerations,
            service_account_name=service_account_name,
            image_pull_secrets=image_pull_secrets,
            volumes=volumes,
        ),
        RunPolicySettings(
            backoff_limit=backoff_limit,
            active_deadline_seconds=active_deadline_seconds,
            clean_pod_policy=clean_pod_policy,
            ttl_seconds_after_finished=ttl_seconds_after_finished,
            suspend=suspend,
            scheduling_policy=scheduling_policy,
            managed_by=managed_by,
        ),
    )


@dataclass(frozen=True)
class _Container:
    """The job-level container parameters, checked (problems are in the builder)."""

    image: str
    image_pull_policy: str | None
    command: list[Any] | None
    args: list[Any] | None
    env: list[dict[str, Any]]
    resources: dict[str, Any] | None
    volume_mounts: list[dict[str, Any]] | None


@dataclass(frozen=True)
class _Pod:
    """The job-level pod template parameters, checked (problems are in the builder)."""

    labels: dict[str, Any] | None
    annotations: dict[str, Any] | None
    node_selector: dict[str, Any] | None
    tolerations: list[dict[str, Any]] | None
    service_account_name: str | None
    image_pull_secrets: list[str] | None
    volumes: list[dict[str, Any]] | None


def _checked_pod(builder: _Builder, pod: PodSettings) -> _Pod:
    return _Pod(
        labels=builder.mapping("pod_labels", pod.labels),
        annotations=builder.mapping("pod_annotations", pod.annotations),
        node_selector=builder.mapping("node_selector", pod.node_selector),
        tolerations=builder.mappings("tolerations", pod.tolerations),
        service_account_name=pod.service_account_name,
        image_pull_secrets=builder.names("image_pull_secrets", pod.image_pull_secrets),
        volumes=builder.mappings("volumes", pod.volumes),
    )


def _checked_container(builder: _Builder, container: ContainerSettings) -> _Container:
    return _Container(
        image=container.image,
        image_pull_policy=container.image_pull_policy,
        resources=builder.mapping("resources", container.resources),
        volume_mounts=builder.mappings("volume_mounts", container.volume_mounts),
        env=builder.env("env", container.env),
        command=builder.string_list("command", container.command),
        args=builder.string_list("args", container.args),
    )


def _container(builder: _Builder, param: str, spec: ReplicaSpec, job: _Container) -> dict[str, Any]:
    """The ``tensorflow`` container of one replica type: the job's, with the type's overrides."""
    return _without_none(
        {
            "name": DEFAULT_CONTAINER_NAME,
            "image": spec.image if spec.image is not None else job.image,
            "imagePullPolicy": job.image_pull_policy,
            "command": job.command
            if spec.command is None
            else builder.string_list(child(param, "command"), spec.command),
            "args": job.args if spec.args is None else builder.string_list(child(param, "args"), spec.args),
            "env": _merge_env(job.env, builder.env(child(param, "env"), spec.env)) or None,
            "resources": (
                builder.mapping(child(param, "resources"), spec.resources)
                if spec.resources is not None
                else job.resources
            )
            or None,
            "volumeMounts": [dict(mount) for mount in job.volume_mounts] if job.volume_mounts else None,
        }
    )


def _pod_template(
    builder: _Builder, param: str, spec: ReplicaSpec, pod: _Pod, container: dict[str, Any]
) -> dict[str, Any]:
    """The pod template of one replica type around its container."""
    chosen_selector = (
        builder.mapping(child(param, "node_selector"), spec.node_selector)
        if spec.node_selector is not None
        else pod.node_selector
    )
    chosen_tolerations = (
        builder.mappings(child(param, "tolerations"), spec.tolerations)
        if spec.tolerations is not None
        else pod.tolerations
    )
    pod_spec = _without_none(
        {
            "containers": [container],
            "serviceAccountName": pod.service_account_name,
            "nodeSelector": dict(chosen_selector) if chosen_selector else None,
            "tolerations": [dict(item) for item in chosen_tolerations] if chosen_tolerations else None,
            "imagePullSecrets": [{"name": secret} for secret in pod.image_pull_secrets]
            if pod.image_pull_secrets
            else None,
            "volumes": [dict(volume) for volume in pod.volumes] if pod.volumes else None,
        }
    )
    template_metadata = _without_none(
        {
            "labels": dict(pod.labels) if pod.labels else None,
            "annotations": dict(pod.annotations) if pod.annotations else None,
        }
    )
    return {"metadata": template_metadata, "spec": pod_spec} if template_metadata else {"spec": pod_spec}


def _run_policy(run_policy: RunPolicySettings, scheduling_policy: Mapping[str, Any] | None) -> dict[str, Any]:
    return _without_none(
        {
            "cleanPodPolicy": run_policy.clean_pod_policy,
            "ttlSecondsAfterFinished": _integer_or_as_given(run_policy.ttl_seconds_after_finished),
            "activeDeadlineSeconds": _integer_or_as_given(run_policy.active_deadline_seconds),
            "backoffLimit": _integer_or_as_given(run_policy.backoff_limit),
            "schedulingPolicy": _scheduling_policy(scheduling_policy)
            if scheduling_policy is not None
            else None,
            "suspend": _boolean_or_as_given(run_policy.suspend),
            "managedBy": run_policy.managed_by,
        }
    )


def compose_tfjob(
    job: JobSettings,
    layout: ReplicaLayout,
    container: ContainerSettings,
    pod: PodSettings,
    run_policy: RunPolicySettings,
) -> dict[str, Any]:
    """The validated manifest of a typed build from its parameter groups (:func:`build_tfjob` without
    the limits check); raise :class:`ManifestError` listing every problem."""
    builder = _Builder()
    labels, annotations = (
        builder.mapping("labels", job.labels),
        builder.mapping("annotations", job.annotations),
    )
    checked_pod = _checked_pod(builder, pod)
    scheduling_policy = builder.mapping("scheduling_policy", run_policy.scheduling_policy)
    checked_container = _checked_container(builder, container)
    replica_specs: dict[str, Any] = {}
    for replica_type, param, value in layout.by_type():
        spec = builder.replica(param, value)
        if spec is None:
            continue
        replica_container = _container(builder, param, spec, checked_container)
        replica_specs[replica_type] = {
            "replicas": _integer_or_as_given(spec.replicas),
            "restartPolicy": spec.restart_policy
            if spec.restart_policy is not None
            else layout.restart_policy,
            "template": _pod_template(builder, param, spec, checked_pod, replica_container),
        }
    spec_fields = _without_none(
        {
            "tfReplicaSpecs": replica_specs,
            "runPolicy": _run_policy(run_policy, scheduling_policy) or None,
            "successPolicy": job.success_policy,
            "enableDynamicWorker": _boolean_or_as_given(job.enable_dynamic_worker),
        }
    )
    metadata = _without_none(
        {
            "name": job.name,
            "namespace": job.namespace,
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
