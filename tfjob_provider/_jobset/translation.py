""":func:`tfjob_to_jobset`: a TFJob manifest as a JobSet, one Indexed Job per replica type, or
:class:`JobSetTranslationError` naming every field JobSet cannot express (docs/guides/jobset.md).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from tfjob_provider._jobset import names
from tfjob_provider._jobset.restarts import ALWAYS, NEVER, job_restart_fields
from tfjob_provider._jobset.tf_config import TASK_INDEX, TF_CONFIG, replica_port, tf_config_env
from tfjob_provider._manifest.problems import ManifestError, Problem, child
from tfjob_provider._manifest.validation import validate_tfjob
from tfjob_provider._policy.readers import as_int, as_list, as_mapping
from tfjob_provider._policy.rules import Rules
from tfjob_provider.constants import (
    CHIEF_TYPES,
    DEFAULT_CONTAINER_NAME,
    MANAGED_BY_MULTIKUEUE,
    REPLICA_TYPES,
)
from tfjob_provider.naming import DNS_LABEL_MAX_LENGTH

#: Kubernetes' limit on ``completions`` and ``parallelism`` of an Indexed Job.
MAX_INDEXED_COMPLETIONS: Final = 100_000
#: The random suffix the Job controller appends to a pod name (``-abcde``), which JobSet's
#: webhook counts when it checks that pod names fit in 63 characters.
_POD_SUFFIX: Final = "-abcde"
_HEADING: Final = "TFJob manifest is invalid"
_JOBSET_HEADING: Final = "TFJob manifest cannot run as a JobSet"


class JobSetTranslationError(ManifestError):
    """A valid TFJob that JobSet cannot run as written; ``problems`` name each field and its fix."""

    def _render(self) -> str:
        return super()._render().replace(_HEADING, _JOBSET_HEADING, 1)


def _replica_count(replica: Mapping[str, Any]) -> int:
    count = as_int(replica.get("replicas"))
    return 1 if count is None else count


def _tensorflow_container(pod_spec: Mapping[str, Any]) -> tuple[int, Mapping[str, Any]] | None:
    for position, container in enumerate(as_list(pod_spec.get("containers"))):
        if isinstance(container, Mapping) and container.get("name") == DEFAULT_CONTAINER_NAME:
            return position, container
    return None


def _longest_pod_name(name: str, replica_type: str, count: int) -> str:
    return names.pod_hostname(name, replica_type.lower(), 0, max(count - 1, 0)) + _POD_SUFFIX


def _name_problem(name: str, counts: Mapping[str, int]) -> Problem | None:
    longest = max(
        (_longest_pod_name(name, kind, count) for kind, count in counts.items()), key=len, default=""
    )
    if len(longest) <= DNS_LABEL_MAX_LENGTH:
        return None
    allowed = max(len(name) - (len(longest) - DNS_LABEL_MAX_LENGTH), 1)
    return Problem(
        "metadata.name",
        f"is {len(name)} characters: its JobSet pods would be named like {longest!r} "
        f"({len(longest)} characters with the Job controller's 5-character suffix), over the "
        f"{DNS_LABEL_MAX_LENGTH}-character limit JobSet's webhook enforces.",
        f"Shorten the name to at most {allowed} characters.",
    )


def _run_policy_problems(spec: Mapping[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    if spec.get("enableDynamicWorker") is True:
        problems.append(
            Problem(
                "spec.enableDynamicWorker",
                "is true, but JobSet has no dynamic workers: a Job either replaces a failed worker "
                "pod or fails, it cannot ignore the failure as the training operator does.",
                "Remove enableDynamicWorker; the workers are then fixed members of TF_CONFIG.",
            )
        )
    run_policy = as_mapping(spec.get("runPolicy"))
    if run_policy.get("schedulingPolicy") is not None:
        problems.append(
            Problem(
                "spec.runPolicy.schedulingPolicy",
                "asks for gang scheduling through a PodGroup (Volcano or scheduler-plugins), which "
                "the training operator creates and JobSet does not.",
                "Remove it; to admit the whole JobSet at once, queue it with Kueue "
                "(label kueue.x-k8s.io/queue-name on the JobSet).",
            )
        )
    clean = run_policy.get("cleanPodPolicy")
    if clean in ("None", "All"):
        problems.append(
            Problem(
                "spec.runPolicy.cleanPodPolicy",
                f'is "{clean}", but when a JobSet finishes its controller always deletes the Jobs still '
                'running, with their pods, and keeps the finished ones: that is "Running" and '
                "nothing else.",
                'Set it to "Running" or remove it.',
            )
        )
    return problems


def _replica_problems(path: str, replica: Mapping[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    if replica.get("restartPolicy") == ALWAYS:
        problems.append(
            Problem(
                child(path, "restartPolicy"),
                "is Always, but a Job's pods may only restart OnFailure or Never: a Job is done "
                "when its pods exit 0.",
                "Use OnFailure (the same for a replica that never exits by itself, such as a PS) "
                "or ExitCode.",
            )
        )
    count = _replica_count(replica)
    if count > MAX_INDEXED_COMPLETIONS:
        problems.append(
            Problem(
                child(path, "replicas"),
                f"is {count}; an Indexed Job runs at most {MAX_INDEXED_COMPLETIONS} pods.",
                f"Use at most {MAX_INDEXED_COMPLETIONS} replicas.",
            )
        )
    pod_path = child(child(path, "template"), "spec")
    pod_spec = as_mapping(as_mapping(replica.get("template")).get("spec"))
    for key in ("hostname", "subdomain"):
        if pod_spec.get(key):
            problems.append(
                Problem(
                    child(pod_path, key),
                    "is set, but the Job and JobSet controllers give every pod its hostname and "
                    "subdomain: they are its address in TF_CONFIG.",
                    f"Remove {key}.",
                )
            )
    found = _tensorflow_container(pod_spec)
    if found is not None:
        position, container = found
        env_path = child(child(child(pod_path, "containers"), position), "env")
        for index, variable in enumerate(as_list(container.get("env"))):
            name = as_mapping(variable).get("name")
            if name in (TF_CONFIG, TASK_INDEX):
                problems.append(
                    Problem(
                        child(child(env_path, index), "name"),
                        f"is {name}, which the provider writes into every JobSet pod "
                        "(each with its own index).",
                        f"Remove the {name} variable.",
                    )
                )
    return problems


def _refusals(manifest: Mapping[str, Any], counts: Mapping[str, int]) -> list[Problem]:
    spec = as_mapping(manifest.get("spec"))
    problems = _run_policy_problems(spec)
    for replica_type, replica in as_mapping(spec.get("tfReplicaSpecs")).items():
        problems.extend(_replica_problems(child("spec.tfReplicaSpecs", replica_type), as_mapping(replica)))
    name_problem = _name_problem(str(as_mapping(manifest.get("metadata")).get("name")), counts)
    if name_problem is not None:
        problems.append(name_problem)
    return problems


def _cluster(name: str, specs: Mapping[str, Any], counts: Mapping[str, int]) -> dict[str, list[str]]:
    cluster: dict[str, list[str]] = {}
    for replica_type, replica in specs.items():
        lower = replica_type.lower()
        port = replica_port(as_mapping(as_mapping(replica).get("template")), DEFAULT_CONTAINER_NAME)
        cluster[lower] = [
            f"{names.pod_address(name, name, lower, i)}:{port}" for i in range(counts[replica_type])
        ]
    return cluster


def _replicated_job(
    replica_type: str,
    replica: Mapping[str, Any],
    count: int,
    *,
    run_policy: Mapping[str, Any],
    cluster: Mapping[str, list[str]] | None,
    worker0_decides: bool,
    rules: Rules | None,
) -> dict[str, Any]:
    fields = job_restart_fields(
        str(replica.get("restartPolicy") or NEVER),
        backoff_limit=as_int(run_policy.get("backoffLimit")),
        rules=rules,
    )
    template: dict[str, Any] = copy.deepcopy(dict(replica["template"]))
    pod_spec: dict[str, Any] = template["spec"]
    pod_spec["restartPolicy"] = fields.pop("restartPolicy")
    if cluster is not None:
        found = _tensorflow_container(pod_spec)
        if found is not None:
            container = pod_spec["containers"][found[0]]
            container["env"] = [*(container.get("env") or []), *tf_config_env(cluster, replica_type)]
    job_spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": count,
        "parallelism": count,
        **fields,
        # Replace a failed pod only once it is gone, so two pods never hold one hostname.
        "podReplacementPolicy": "Failed",
    }
    if worker0_decides:
        job_spec["successPolicy"] = {"rules": [{"succeededIndexes": "0"}]}
    deadline = as_int(run_policy.get("activeDeadlineSeconds"))
    if deadline is not None:
        job_spec["activeDeadlineSeconds"] = deadline
    job_spec["template"] = template
    return {"name": replica_type.lower(), "replicas": 1, "template": {"spec": job_spec}}


def tfjob_to_jobset(tfjob: Mapping[str, Any], *, rules: Rules | None = None) -> dict[str, Any]:
    """The ``jobset.x-k8s.io/v1alpha2`` JobSet that runs *tfjob* as the training operator would.

    *tfjob* is validated first (:func:`validate_tfjob`; its :class:`ManifestError` lists what is
    wrong with the TFJob itself); then everything JobSet cannot express raises
    :class:`JobSetTranslationError`, one problem per field.  *rules* moves exit codes between
    "permanent" and "retryable" in the ExitCode podFailurePolicy, as it does in the verdict.
    Pure: returns a new dict, never touches the network.
    """
    manifest = validate_tfjob(tfjob)
    metadata = as_mapping(manifest.get("metadata"))
    spec = as_mapping(manifest.get("spec"))
    run_policy = as_mapping(spec.get("runPolicy"))
    specs = {key: as_mapping(value) for key, value in as_mapping(spec.get("tfReplicaSpecs")).items()}
    counts = {replica_type: _replica_count(replica) for replica_type, replica in specs.items()}
    problems = _refusals(manifest, counts)
    if problems:
        raise JobSetTranslationError(problems)

    name = str(metadata["name"])
    chief = next((kind for kind in CHIEF_TYPES if kind in specs), None)
    decider = chief or "Worker"
    worker0 = chief is None and spec.get("successPolicy") != "AllWorkers"
    distributed = sum(counts.values()) != 1  # the operator's isDistributed: one replica gets no TF_CONFIG
    cluster = _cluster(name, specs, counts) if distributed else None
    replicated_jobs = [
        _replicated_job(
            replica_type,
            specs[replica_type],
            counts[replica_type],
            run_policy=run_policy,
            cluster=cluster,
            worker0_decides=worker0 and replica_type == "Worker",
            rules=rules,
        )
        for replica_type in REPLICA_TYPES
        if counts.get(replica_type, 0) > 0
    ]
    jobset_spec: dict[str, Any] = {
        "replicatedJobs": replicated_jobs,
        "network": {"enableDNSHostnames": True, "subdomain": name, "publishNotReadyAddresses": True},
        "successPolicy": {"operator": "All", "targetReplicatedJobs": [decider.lower()]},
    }
    if run_policy.get("suspend") is not None:
        jobset_spec["suspend"] = run_policy["suspend"]
    if run_policy.get("ttlSecondsAfterFinished") is not None:
        jobset_spec["ttlSecondsAfterFinished"] = run_policy["ttlSecondsAfterFinished"]
    if run_policy.get("managedBy") == MANAGED_BY_MULTIKUEUE:
        jobset_spec["managedBy"] = MANAGED_BY_MULTIKUEUE
    jobset_metadata = {
        key: copy.deepcopy(metadata[key])
        for key in ("name", "namespace", "labels", "annotations")
        if metadata.get(key)
    }
    backoff_limit = as_int(run_policy.get("backoffLimit"))
    if backoff_limit is not None:
        annotations = jobset_metadata.setdefault("annotations", {})
        annotations[names.ANNOTATION_BACKOFF_LIMIT] = str(backoff_limit)
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.KIND,
        "metadata": jobset_metadata,
        "spec": jobset_spec,
    }
