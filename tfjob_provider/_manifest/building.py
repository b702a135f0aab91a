""":func:`build_tfjob`: a validated TFJob manifest from typed, Airflow-friendly parameters (text from
Jinja accepted for numbers and booleans); :func:`compose_tfjob` builds it from parameter groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tfjob_provider._manifest.build_parameters import (
    DEFAULT_CLEAN_POD_POLICY,
    DEFAULT_RESTART_POLICY,
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
from tfjob_provider._manifest.parameter_reader import (
    ParameterReader,
    boolean_or_as_given,
    integer_or_as_given,
)
from tfjob_provider._manifest.problems import ManifestError, child
from tfjob_provider._manifest.validation import validate_tfjob
from tfjob_provider.constants import API_VERSION, DEFAULT_CONTAINER_NAME, KIND


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
    return {_camel_case(str(key)): integer_or_as_given(item) for key, item in value.items()}


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
    """The job-level container parameters, checked (problems are in the reader)."""

    image: str
    image_pull_policy: str | None
    command: list[Any] | None
    args: list[Any] | None
    env: list[dict[str, Any]]
    resources: dict[str, Any] | None
    volume_mounts: list[dict[str, Any]] | None


@dataclass(frozen=True)
class _Pod:
    """The job-level pod template parameters, checked (problems are in the reader)."""

    labels: dict[str, Any] | None
    annotations: dict[str, Any] | None
    node_selector: dict[str, Any] | None
    tolerations: list[dict[str, Any]] | None
    service_account_name: str | None
    image_pull_secrets: list[str] | None
    volumes: list[dict[str, Any]] | None


def _checked_pod(reader: ParameterReader, pod: PodSettings) -> _Pod:
    return _Pod(
        labels=reader.mapping("pod_labels", pod.labels),
        annotations=reader.mapping("pod_annotations", pod.annotations),
        node_selector=reader.mapping("node_selector", pod.node_selector),
        tolerations=reader.mappings("tolerations", pod.tolerations),
        service_account_name=pod.service_account_name,
        image_pull_secrets=reader.names("image_pull_secrets", pod.image_pull_secrets),
        volumes=reader.mappings("volumes", pod.volumes),
    )


def _checked_container(reader: ParameterReader, container: ContainerSettings) -> _Container:
    return _Container(
        image=container.image,
        image_pull_policy=container.image_pull_policy,
        resources=reader.mapping("resources", container.resources),
        volume_mounts=reader.mappings("volume_mounts", container.volume_mounts),
        env=reader.env("env", container.env),
        command=reader.string_list("command", container.command),
        args=reader.string_list("args", container.args),
    )


def _container(reader: ParameterReader, param: str, spec: ReplicaSpec, job: _Container) -> dict[str, Any]:
    """The ``tensorflow`` container of one replica type: the job's, with the type's overrides."""
    return _without_none(
        {
            "name": DEFAULT_CONTAINER_NAME,
            "image": spec.image if spec.image is not None else job.image,
            "imagePullPolicy": job.image_pull_policy,
            "command": job.command
            if spec.command is None
            else reader.string_list(child(param, "command"), spec.command),
            "args": job.args if spec.args is None else reader.string_list(child(param, "args"), spec.args),
            "env": _merge_env(job.env, reader.env(child(param, "env"), spec.env)) or None,
            "resources": (
                reader.mapping(child(param, "resources"), spec.resources)
                if spec.resources is not None
                else job.resources
            )
            or None,
            "volumeMounts": [dict(mount) for mount in job.volume_mounts] if job.volume_mounts else None,
        }
    )


def _pod_template(
    reader: ParameterReader, param: str, spec: ReplicaSpec, pod: _Pod, container: dict[str, Any]
) -> dict[str, Any]:
    """The pod template of one replica type around its container."""
    chosen_selector = (
        reader.mapping(child(param, "node_selector"), spec.node_selector)
        if spec.node_selector is not None
        else pod.node_selector
    )
    chosen_tolerations = (
        reader.mappings(child(param, "tolerations"), spec.tolerations)
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
            "ttlSecondsAfterFinished": integer_or_as_given(run_policy.ttl_seconds_after_finished),
            "activeDeadlineSeconds": integer_or_as_given(run_policy.active_deadline_seconds),
            "backoffLimit": integer_or_as_given(run_policy.backoff_limit),
            "schedulingPolicy": _scheduling_policy(scheduling_policy)
            if scheduling_policy is not None
            else None,
            "suspend": boolean_or_as_given(run_policy.suspend),
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
    reader = ParameterReader()
    labels, annotations = (
        reader.mapping("labels", job.labels),
        reader.mapping("annotations", job.annotations),
    )
    checked_pod = _checked_pod(reader, pod)
    scheduling_policy = reader.mapping("scheduling_policy", run_policy.scheduling_policy)
    checked_container = _checked_container(reader, container)
    replica_specs: dict[str, Any] = {}
    for replica_type, param, value in layout.by_type():
        spec = reader.replica(param, value)
        if spec is None:
            continue
        replica_container = _container(reader, param, spec, checked_container)
        replica_specs[replica_type] = {
            "replicas": integer_or_as_given(spec.replicas),
            "restartPolicy": spec.restart_policy
            if spec.restart_policy is not None
            else layout.restart_policy,
            "template": _pod_template(reader, param, spec, checked_pod, replica_container),
        }
    spec_fields = _without_none(
        {
            "tfReplicaSpecs": replica_specs,
            "runPolicy": _run_policy(run_policy, scheduling_policy) or None,
            "successPolicy": job.success_policy,
            "enableDynamicWorker": boolean_or_as_given(job.enable_dynamic_worker),
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
        raise ManifestError([*reader.problems, *error.problems]) from None
    if reader.problems:
        raise ManifestError(reader.problems)
    return validated
