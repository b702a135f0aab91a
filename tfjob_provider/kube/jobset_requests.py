"""The requests of the JobSet backend as plain data: JobSets (``jobset.x-k8s.io/v1alpha2``), their
Jobs (``batch/v1``) and their pods, each with the RBAC rule it exercises (docs/guides/rbac.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tfjob_provider._jobset import names
from tfjob_provider.kube.requests import ApiRequest, RbacRule, _q, _selectors, _watch_query

JOBSET_API_PATH = f"/apis/{names.GROUP}/{names.VERSION}"
_JOBS_GROUP = "batch"
_JOBS_PATH = "/apis/batch/v1"
_JSON = {"Accept": "application/json"}
_JSON_BODY = {"Content-Type": "application/json", "Accept": "application/json"}


def jobset_children_selector(name: str | None = None) -> str:
    """Label selector of the Jobs and pods of JobSet ``name`` (of every JobSet when None)."""
    return f"{names.LABEL_JOBSET_NAME}={name}" if name else names.LABEL_JOBSET_NAME


def _jobsets_path(namespace: str, name: str | None = None) -> str:
    base = f"{JOBSET_API_PATH}/namespaces/{_q(namespace)}/{names.PLURAL}"
    return f"{base}/{_q(name)}" if name is not None else base


def _jobs_path(namespace: str) -> str:
    return f"{_JOBS_PATH}/namespaces/{_q(namespace)}/jobs"


def discover_jobset_api() -> ApiRequest:
    """``GET /apis/jobset.x-k8s.io/v1alpha2``: whether ``jobsets`` is served."""
    return ApiRequest("GET", JOBSET_API_PATH, headers=_JSON)


def create_jobset(manifest: Mapping[str, Any], *, namespace: str) -> ApiRequest:
    """``POST`` a JobSet with ``fieldValidation=Strict`` (as TFJobs are created)."""
    return ApiRequest(
        "POST",
        _jobsets_path(namespace),
        query=(("fieldValidation", "Strict"),),
        body=manifest,
        headers=_JSON_BODY,
        rbac=RbacRule("create", names.GROUP, names.PLURAL, namespace),
    )


def get_jobset(name: str, *, namespace: str) -> ApiRequest:
    return ApiRequest(
        "GET",
        _jobsets_path(namespace, name),
        headers=_JSON,
        rbac=RbacRule("get", names.GROUP, names.PLURAL, namespace),
    )


def delete_jobset(name: str, *, namespace: str) -> ApiRequest:
    """``DELETE`` with Foreground propagation: the JobSet stays visible until its Jobs and pods are gone."""
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground"}
    return ApiRequest(
        "DELETE",
        _jobsets_path(namespace, name),
        body=body,
        headers=_JSON_BODY,
        rbac=RbacRule("delete", names.GROUP, names.PLURAL, namespace),
    )


def list_jobsets(*, namespace: str, field_selector: str | None = None) -> ApiRequest:
    return ApiRequest(
        "GET",
        _jobsets_path(namespace),
        query=tuple(_selectors(None, field_selector)),
        headers=_JSON,
        rbac=RbacRule("list", names.GROUP, names.PLURAL, namespace),
    )


def watch_jobsets(
    *,
    namespace: str,
    resource_version: str,
    timeout_seconds: int,
    read_timeout: float,
    field_selector: str | None = None,
) -> ApiRequest:
    return ApiRequest(
        "GET",
        _jobsets_path(namespace),
        query=_watch_query(
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            label_selector=None,
            field_selector=field_selector,
        ),
        headers=_JSON,
        stream=True,
        rbac=RbacRule("watch", names.GROUP, names.PLURAL, namespace),
        read_timeout=read_timeout,
    )


def list_jobs(*, namespace: str, label_selector: str) -> ApiRequest:
    return ApiRequest(
        "GET",
        _jobs_path(namespace),
        query=tuple(_selectors(label_selector, None)),
        headers=_JSON,
        rbac=RbacRule("list", _JOBS_GROUP, "jobs", namespace),
    )


def watch_jobs(
    *, namespace: str, resource_version: str, timeout_seconds: int, read_timeout: float, label_selector: str
) -> ApiRequest:
    return ApiRequest(
        "GET",
        _jobs_path(namespace),
        query=_watch_query(
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            label_selector=label_selector,
            field_selector=None,
        ),
        headers=_JSON,
        stream=True,
        rbac=RbacRule("watch", _JOBS_GROUP, "jobs", namespace),
        read_timeout=read_timeout,
    )


__all__ = [
    "JOBSET_API_PATH",
    "create_jobset",
    "delete_jobset",
    "discover_jobset_api",
    "get_jobset",
    "jobset_children_selector",
    "list_jobs",
    "list_jobsets",
    "watch_jobs",
    "watch_jobsets",
]
