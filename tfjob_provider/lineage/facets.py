"""What an OpenLineage event says about a TFJob task: the job facet (the TFJob's shape), the run facet
(how it ended), the error message of a failure, and the datasets.

Plain dicts and strings, so the content is unit-tested without OpenLineage; the Airflow side
(:mod:`tfjob_provider.lineage.openlineage_objects`) wraps them in OpenLineage's facet classes.
Field lists are whitelists: a container's command, args and env (where tokens live), volumes,
labels and annotations never get into a facet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from tfjob_provider.lineage.extra import output_uris
from tfjob_provider.lineage.naming import DatasetName, dataset_name

#: ``spec.runPolicy`` fields a job facet shows.
RUN_POLICY_FIELDS: Final = (
    "cleanPodPolicy",
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "backoffLimit",
    "suspend",
    "managedBy",
)
#: ``spec.runPolicy.schedulingPolicy`` fields a job facet shows.
SCHEDULING_POLICY_FIELDS: Final = (
    "minAvailable",
    "queue",
    "minResources",
    "priorityClass",
    "scheduleTimeoutSeconds",
)
#: Longest message a run or error facet carries.
MAX_MESSAGE: Final = 1000


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _picked(source: Mapping[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    return {key: source[key] for key in fields if source.get(key) is not None}


def _replica(spec: Mapping[str, Any]) -> dict[str, Any]:
    pod = _mapping(_mapping(spec.get("template")).get("spec"))
    containers = [c for c in pod.get("containers") or () if isinstance(c, Mapping)]
    described: dict[str, Any] = {
        "replicas": spec.get("replicas", 1),
        "restartPolicy": spec.get("restartPolicy"),
        "images": [str(c.get("image")) for c in containers if c.get("image")],
    }
    main = next((c for c in containers if c.get("name") == "tensorflow"), None)
    resources = _mapping(main.get("resources")) if main is not None else {}
    if resources:
        described["resources"] = {
            kind: dict(_mapping(resources.get(kind)))
            for kind in ("requests", "limits")
            if resources.get(kind)
        }
    return described


def job_facet(manifest: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The TFJob's shape: replica types with count, images, restart policy and the tensorflow
    container's resources; run policy; success policy.  None without a TFJob spec."""
    spec = _mapping(_mapping(manifest).get("spec"))
    replica_specs = _mapping(spec.get("tfReplicaSpecs"))
    if not replica_specs:
        return None
    run_policy = _mapping(spec.get("runPolicy"))
    described_run_policy = _picked(run_policy, RUN_POLICY_FIELDS)
    scheduling = _picked(_mapping(run_policy.get("schedulingPolicy")), SCHEDULING_POLICY_FIELDS)
    if scheduling:
        described_run_policy["schedulingPolicy"] = scheduling
    return {
        "replicaSpecs": {
            str(replica_type): _replica(_mapping(replica)) for replica_type, replica in replica_specs.items()
        },
        "runPolicy": described_run_policy,
        "successPolicy": spec.get("successPolicy") or "Default",
        "enableDynamicWorker": bool(spec.get("enableDynamicWorker", False)),
    }


@dataclass(frozen=True, kw_only=True)
class TrainingEnd:
    """How a TFJob task ended, as far as lineage needs it.

    :param ending: ``success``, ``failed`` (permanent), ``retry``, ``timeout``, ``skip``
        (:data:`tfjob_provider._outcome.task_ending.EndingKind`) or ``submitted``
        (``wait_for_completion=False``).
    """

    ending: str
    namespace: str
    name: str
    uid: str | None
    state: str | None = None
    reason: str | None = None
    retryable: bool | None = None
    message: str = ""
    deciding_pods: tuple[str, ...] = ()
    replicas: Mapping[str, Any] = field(default_factory=dict)
    recreations: Mapping[str, int] = field(default_factory=dict)
    start_time: str | None = None
    completion_time: str | None = None
    outputs: Any = None

    @classmethod
    def from_outcome(cls, event: Mapping[str, Any], *, ending: str, outputs: Any = None) -> TrainingEnd:
        """From a :meth:`~tfjob_provider._outcome.wait.WaitOutcome.to_event` dict and the ending's kind."""
        verdict = _mapping(event.get("verdict"))
        return cls(
            ending=ending,
            namespace=str(event.get("namespace")),
            name=str(event.get("name")),
            uid=event.get("uid"),
            state=verdict.get("state") or None,
            reason=verdict.get("reason") or None,
            retryable=verdict.get("retryable") if ending != "success" and verdict else None,
            message=str(event.get("message") or "")[:MAX_MESSAGE],
            deciding_pods=tuple(verdict.get("culprits") or ()),
            replicas=dict(_mapping(verdict.get("replicas"))),
            recreations=dict(_mapping(event.get("recreations"))),
            start_time=event.get("start_time"),
            completion_time=event.get("completion_time"),
            outputs=outputs,
        )

    @classmethod
    def from_result(cls, result: Mapping[str, Any], *, ending: str) -> TrainingEnd:
        """From a task's result dict (:func:`tfjob_provider._outcome.report.result_dict`)."""
        return cls(
            ending=ending,
            namespace=str(result.get("namespace")),
            name=str(result.get("name")),
            uid=result.get("uid"),
            state=result.get("state"),
            reason=result.get("reason"),
            message=str(result.get("message") or "")[:MAX_MESSAGE],
            deciding_pods=tuple(result.get("deciding_pods") or ()),
            replicas=dict(_mapping(result.get("replicas"))),
            recreations={k: v for k, v in _mapping(result.get("recreations")).items() if v},
            start_time=result.get("start_time"),
            completion_time=result.get("completion_time"),
            outputs=result.get("outputs"),
        )


def replica_of_pod(job_name: str, pod: str) -> str:
    """``"Worker 1"`` for pod ``<job>-worker-1`` (the training operator's pod names); the pod name
    itself when it is not one of them."""
    suffix = pod[len(job_name) + 1 :] if pod.startswith(f"{job_name}-") else ""
    replica_type, _, index = suffix.rpartition("-")
    if not replica_type or not index.isdigit():
        return pod
    canonical = {
        "chief": "Chief",
        "master": "Master",
        "worker": "Worker",
        "ps": "PS",
        "evaluator": "Evaluator",
    }
    return f"{canonical.get(replica_type, replica_type)} {index}"


def _seconds(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    try:
        begun = datetime.fromisoformat(start.replace("Z", "+00:00"))
        ended = datetime.fromisoformat(end.replace("Z", "+00:00"))
    except ValueError:
        return None
    return round((ended - begun).total_seconds(), 3)


def run_facet(end: TrainingEnd) -> dict[str, Any]:
    """The outcome: ending, state, reason, retryable, deciding pods (with their replicas),
    recreations, duration and the outputs' keys (never their values)."""
    recreations = {key: int(value) for key, value in end.recreations.items() if value}
    return {
        "ending": end.ending,
        "namespace": end.namespace,
        "name": end.name,
        "uid": end.uid,
        "state": end.state,
        "reason": end.reason,
        "retryable": end.retryable,
        "message": end.message,
        "decidingPods": [{"pod": pod, "replica": replica_of_pod(end.name, pod)} for pod in end.deciding_pods],
        "replicas": {key: dict(_mapping(value)) for key, value in end.replicas.items()},
        "recreations": recreations,
        "recreationCount": sum(recreations.values()),
        "startTime": end.start_time,
        "completionTime": end.completion_time,
        "durationSeconds": _seconds(end.start_time, end.completion_time),
        "outputKeys": sorted(str(key) for key in end.outputs) if isinstance(end.outputs, Mapping) else [],
    }


def error_message(end: TrainingEnd) -> str | None:
    """``"Worker 0 (pod x-worker-0): <verdict> [PermanentExitCode, permanent]"`` for a failed
    TFJob; None when it did not fail."""
    if end.ending == "success" or end.state not in ("Failed", None):
        return None
    culprits = ", ".join(f"{replica_of_pod(end.name, pod)} (pod {pod})" for pod in end.deciding_pods[:3])
    kind = "retryable" if end.retryable else "permanent"
    said = f"TFJob {end.namespace}/{end.name}: {end.message}"
    if end.reason:
        said += f" [{end.reason}, {kind}]"
    return f"{culprits}: {said}"[:MAX_MESSAGE] if culprits else said[:MAX_MESSAGE]


def datasets(uris: Iterable[str], outputs: Any = None, keys: Sequence[str] = ()) -> list[DatasetName]:
    """OpenLineage datasets of the given URIs and of the URIs under ``keys`` in the outputs, in
    order, without repeats; plain names (no scheme) are left out."""
    wanted = [*uris, *(found.uri for found in output_uris(outputs, keys)[0])]
    named: list[DatasetName] = []
    for uri in wanted:
        dataset = dataset_name(uri)
        if dataset is not None and dataset not in named:
            named.append(dataset)
    return named


__all__ = [
    "MAX_MESSAGE",
    "RUN_POLICY_FIELDS",
    "SCHEDULING_POLICY_FIELDS",
    "TrainingEnd",
    "datasets",
    "error_message",
    "job_facet",
    "replica_of_pod",
    "run_facet",
]
