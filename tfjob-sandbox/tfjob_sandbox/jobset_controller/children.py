"""What the JobSet controller creates: child Jobs (``constructJob``) and the headless Service."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import Any

from tfjob_sandbox.api import jobset_wire as wire

Obj = Mapping[str, Any]


def job_name(jobset_name: str, rjob_name: str, job_index: int) -> str:
    return f"{jobset_name}-{rjob_name}-{job_index}"


def job_key(namespace: str, name: str) -> str:
    """The ``job-key`` value: SHA-1 of ``<namespace>/<job name>``, 40 hex digits."""
    return hashlib.sha1(f"{namespace}/{name}".encode()).hexdigest()


def subdomain(jobset: Obj) -> str:
    """``network.subdomain``, else the JobSet's name (upstream ``GetSubdomain``)."""
    network = (jobset.get("spec") or {}).get("network") or {}
    return str(network.get("subdomain") or jobset["metadata"]["name"])


def dns_hostnames_enabled(jobset: Obj) -> bool:
    return bool(((jobset.get("spec") or {}).get("network") or {}).get("enableDNSHostnames"))


def owner_reference(jobset: Obj) -> dict[str, Any]:
    meta = jobset["metadata"]
    return {
        "apiVersion": wire.API_VERSION,
        "kind": wire.KIND,
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def global_job_index(spec: Obj, rjob_name: str, job_index: int) -> str:
    """The Job's index across the whole JobSet, counting replicatedJobs in spec order."""
    total = 0
    for rjob in spec.get("replicatedJobs") or []:
        if rjob.get("name") == rjob_name:
            return str(total + job_index)
        total += int(rjob.get("replicas", 1))
    return ""


def identity(jobset: Obj, rjob: Obj, job_index: int) -> dict[str, str]:
    """The labels (and, identical, annotations) a child Job and its pod template get."""
    meta = jobset["metadata"]
    spec = jobset.get("spec") or {}
    status = jobset.get("status") or {}
    rjob_name = str(rjob["name"])
    name = job_name(str(meta["name"]), rjob_name, job_index)
    values = {
        wire.JOBSET_NAME: str(meta["name"]),
        wire.REPLICATED_JOB_NAME: rjob_name,
        wire.RESTART_ATTEMPT: str(int(status.get("restarts") or 0)),
        wire.REPLICATED_JOB_REPLICAS: str(int(rjob.get("replicas", 1))),
        wire.GLOBAL_REPLICAS: str(sum(int(r.get("replicas", 1)) for r in spec.get("replicatedJobs") or [])),
        wire.JOB_INDEX: str(job_index),
        wire.JOB_KEY: job_key(str(meta.get("namespace", "default")), name),
        wire.JOB_GLOBAL_INDEX: global_job_index(spec, rjob_name, job_index),
    }
    coordinator = spec.get("coordinator")
    if isinstance(coordinator, Mapping):
        values[wire.COORDINATOR] = (
            f"{meta['name']}-{coordinator.get('replicatedJob')}-{int(coordinator.get('jobIndex') or 0)}-"
            f"{int(coordinator.get('podIndex') or 0)}.{subdomain(jobset)}"
        )
    return values


def _label_and_annotate(meta: dict[str, Any], values: Mapping[str, str]) -> None:
    meta["labels"] = {**(meta.get("labels") or {}), **values}
    meta["annotations"] = {**(meta.get("annotations") or {}), **values}


def construct_job(jobset: Obj, rjob: Obj, job_index: int) -> dict[str, Any]:
    """The Job manifest for replica ``job_index`` of ``rjob``, owned by the JobSet."""
    meta = jobset["metadata"]
    template = rjob.get("template") or {}
    template_meta = template.get("metadata") or {}
    job_meta: dict[str, Any] = {
        "name": job_name(str(meta["name"]), str(rjob["name"]), job_index),
        "namespace": meta.get("namespace", "default"),
        "labels": dict(template_meta.get("labels") or {}),
        "annotations": dict(template_meta.get("annotations") or {}),
        "ownerReferences": [owner_reference(jobset)],
    }
    job_spec = copy.deepcopy(dict(template.get("spec") or {}))
    values = identity(jobset, rjob, job_index)
    _label_and_annotate(job_meta, values)
    pod_template = job_spec.setdefault("template", {})
    _label_and_annotate(pod_template.setdefault("metadata", {}), values)
    if dns_hostnames_enabled(jobset):
        pod_template.setdefault("spec", {})["subdomain"] = subdomain(jobset)
    job_spec["suspend"] = bool((jobset.get("spec") or {}).get("suspend"))
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta, "spec": job_spec}


def headless_service(jobset: Obj) -> dict[str, Any]:
    """The Service that gives pods their ``<pod hostname>.<subdomain>`` names."""
    meta = jobset["metadata"]
    network = (jobset.get("spec") or {}).get("network") or {}
    publish = network.get("publishNotReadyAddresses")
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": subdomain(jobset),
            "namespace": meta.get("namespace", "default"),
            "ownerReferences": [owner_reference(jobset)],
        },
        "spec": {
            "clusterIP": "None",
            "selector": {wire.JOBSET_NAME: str(meta["name"])},
            "publishNotReadyAddresses": True if publish is None else bool(publish),
        },
    }


def resumed_pod_template(job: Obj, rjob: Obj) -> dict[str, Any]:
    """The Job's pod template with the replicatedJob's labels, annotations, nodeSelector,
    tolerations and scheduling gates merged in (``resumeJob``: Kueue may have changed them)."""
    template = copy.deepcopy(dict((job.get("spec") or {}).get("template") or {}))
    source = (rjob.get("template") or {}).get("spec", {}).get("template") or {}
    source_meta = source.get("metadata") or {}
    source_spec = source.get("spec") or {}
    meta = template.setdefault("metadata", {})
    for key in ("labels", "annotations"):
        meta[key] = {**(meta.get(key) or {}), **(source_meta.get(key) or {})}
    pod_spec = template.setdefault("spec", {})
    pod_spec["nodeSelector"] = {
        **(pod_spec.get("nodeSelector") or {}),
        **(source_spec.get("nodeSelector") or {}),
    }
    for key in ("tolerations", "schedulingGates"):
        merged = list(pod_spec.get(key) or [])
        merged.extend(item for item in source_spec.get(key) or [] if item not in merged)
        pod_spec[key] = merged
    for key in ("nodeSelector", "tolerations", "schedulingGates"):
        if not pod_spec[key]:
            del pod_spec[key]
    return template
