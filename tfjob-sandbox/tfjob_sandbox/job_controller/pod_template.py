"""The pod a Job creates from its template (GetPodFromTemplate plus the Indexed Job additions)."""

from __future__ import annotations

import copy
from typing import Any

from tfjob_sandbox.api import job_wire

#: names.MaxGeneratedNameLength: generateName prefixes are cut to this length.
MAX_GENERATED_NAME_LENGTH = 58


def generate_name(job_name: str, index: int | None) -> str:
    """``<job>-`` or ``<job>-<index>-`` (the job name shortened so the prefix fits)."""
    if index is None:
        return f"{job_name}-"[:MAX_GENERATED_NAME_LENGTH]
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > MAX_GENERATED_NAME_LENGTH:
        prefix = job_name[: MAX_GENERATED_NAME_LENGTH - len(suffix)] + suffix
    return prefix


def pod_for_job(
    job: dict[str, Any], index: int | None, extra_annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """A pod manifest for ``job`` (``index``: Indexed Jobs), controller-owned, with the tracking finalizer."""
    meta = job["metadata"]
    template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
    template_meta = template.get("metadata") or {}
    spec = template.get("spec") or {}
    labels = dict(template_meta.get("labels") or {})
    annotations = dict(template_meta.get("annotations") or {})
    finalizers = list(template_meta.get("finalizers") or [])
    if job_wire.TRACKING_FINALIZER not in finalizers:
        finalizers.append(job_wire.TRACKING_FINALIZER)
    if index is not None:
        _add_index_env(spec)
        annotations[job_wire.COMPLETION_INDEX] = str(index)
        labels[job_wire.COMPLETION_INDEX] = str(index)
        spec["hostname"] = f"{meta['name']}-{index}"
        annotations.update(extra_annotations or {})
    pod_meta: dict[str, Any] = {
        "generateName": generate_name(str(meta["name"]), index),
        "labels": labels,
        "finalizers": finalizers,
        "ownerReferences": [
            {
                "apiVersion": job_wire.API_VERSION,
                "kind": job_wire.KIND,
                "name": meta["name"],
                "uid": meta.get("uid", ""),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if annotations:
        pod_meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


def _add_index_env(spec: dict[str, Any]) -> None:
    """Append JOB_COMPLETION_INDEX (from the annotation, downward API) to every container lacking it."""
    source = {"fieldRef": {"fieldPath": f"metadata.annotations['{job_wire.COMPLETION_INDEX}']"}}
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        env = container.setdefault("env", [])
        if not any(item.get("name") == job_wire.COMPLETION_INDEX_ENV for item in env):
            env.append({"name": job_wire.COMPLETION_INDEX_ENV, "valueFrom": copy.deepcopy(source)})
