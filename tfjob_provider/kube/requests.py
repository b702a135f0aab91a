"""Every HTTP request the provider makes, as plain data (:class:`ApiRequest`), with the RBAC rule it
exercises.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from tfjob_provider.constants import GROUP, LABEL_JOB_NAME, PLURAL, VERSION

#: The API the provider needs; discovery of this group-version tells whether TFJobs are served.
TFJOB_API_PATH = f"/apis/{GROUP}/{VERSION}"


@dataclass(frozen=True)
class RbacRule:
    """The permission one request needs, in the words of a Kubernetes ``Role`` rule."""

    verb: str
    api_group: str
    resource: str
    namespace: str | None = None

    def describe(self) -> str:
        group = self.api_group or '"" (core)'
        where = f"namespace {self.namespace!r}" if self.namespace else "the cluster"
        return f"verb {self.verb!r} on resource {self.resource!r} of apiGroup {group} in {where}"


@dataclass(frozen=True)
class ApiRequest:
    """One HTTP request to the API server, independent of any client library.

    :param method: HTTP method in upper case.
    :param path: absolute path below the server URL, already percent-encoded.
    :param query: query parameters in order (a tuple so the request stays hashable and immutable).
    :param body: JSON body, or ``None``.
    :param headers: extra headers (``Accept``, ``Content-Type``); auth is the transport's business.
    :param stream: the response is a stream of lines (watch, follow) and must not be read whole.
    :param rbac: the permission this request exercises, used to explain a 403.
    :param read_timeout: seconds of silence after which the transport gives up reading; for a
        watch this is the inactivity timeout, for ordinary calls a generous upper bound.
    """

    method: str
    path: str
    query: tuple[tuple[str, str], ...] = ()
    body: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    stream: bool = False
    rbac: RbacRule | None = None
    read_timeout: float | None = None

    def describe(self) -> str:
        """Short human form for logs and error messages, e.g. ``GET /api/v1/namespaces/x/pods``."""
        return f"{self.method} {self.path}"


def _q(value: str) -> str:
    return quote(value, safe="")


def _tfjobs_path(namespace: str, name: str | None = None) -> str:
    base = f"{TFJOB_API_PATH}/namespaces/{_q(namespace)}/{PLURAL}"
    return f"{base}/{_q(name)}" if name is not None else base


def _core_path(namespace: str, resource: str, name: str | None = None, sub: str | None = None) -> str:
    path = f"/api/v1/namespaces/{_q(namespace)}/{resource}"
    if name is not None:
        path += f"/{_q(name)}"
    if sub is not None:
        path += f"/{sub}"
    return path


def job_pods_selector(name: str) -> str:
    """Label selector of the pods the training operator makes for TFJob ``name`` (docs/concepts/rules.md)."""
    return f"{LABEL_JOB_NAME}={name}"


# --- discovery -----------------------------------------------------------------------------


def discover_tfjob_api() -> ApiRequest:
    """``GET /apis/kubeflow.org/v1``: the resource list that says whether ``tfjobs`` is served."""
    return ApiRequest("GET", TFJOB_API_PATH, headers={"Accept": "application/json"})


# --- TFJobs --------------------------------------------------------------------------------


def create_tfjob(manifest: Mapping[str, Any], *, namespace: str, dry_run: bool = False) -> ApiRequest:
    """``POST`` a TFJob with ``fieldValidation=Strict``: unknown or duplicate fields are a 422,
    not a silent drop — a misspelt ``restartPolicy`` must never run a job with the default."""
    query: list[tuple[str, str]] = [("fieldValidation", "Strict")]
    if dry_run:
        query.append(("dryRun", "All"))
    return ApiRequest(
        "POST",
        _tfjobs_path(namespace),
        query=tuple(query),
        body=manifest,
        headers={"Content-Type": "application/json", "Accept": "application/json"},
        rbac=RbacRule("create", GROUP, PLURAL, namespace),
    )


def get_tfjob(name: str, *, namespace: str) -> ApiRequest:
    return ApiRequest(
        "GET",
        _tfjobs_path(namespace, name),
        headers={"Accept": "application/json"},
        rbac=RbacRule("get", GROUP, PLURAL, namespace),
    )


def delete_tfjob(
    name: str,
    *,
    namespace: str,
    propagation: str = "Foreground",
    grace_period_seconds: int | None = None,
) -> ApiRequest:
    """``DELETE`` with a ``DeleteOptions`` body; Foreground keeps the TFJob visible until its pods
    are gone, so a caller that waits for the deletion knows no replica is still burning GPUs."""
    if propagation not in ("Foreground", "Background", "Orphan"):
        raise ValueError(f"propagation must be Foreground, Background or Orphan, not {propagation!r}")
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation}
    if grace_period_seconds is not None:
        body["gracePeriodSeconds"] = int(grace_period_seconds)
    return ApiRequest(
        "DELETE",
        _tfjobs_path(namespace, name),
        body=body,
        headers={"Content-Type": "application/json", "Accept": "application/json"},
        rbac=RbacRule("delete", GROUP, PLURAL, namespace),
    )


def _selectors(label_selector: str | None, field_selector: str | None) -> list[tuple[str, str]]:
    query: list[tuple[str, str]] = []
    if label_selector:
        query.append(("labelSelector", label_selector))
    if field_selector:
        query.append(("fieldSelector", field_selector))
    return query


def list_tfjobs(
    *, namespace: str, label_selector: str | None = None, field_selector: str | None = None
) -> ApiRequest:
    return ApiRequest(
        "GET",
        _tfjobs_path(namespace),
        query=tuple(_selectors(label_selector, field_selector)),
        headers={"Accept": "application/json"},
        rbac=RbacRule("list", GROUP, PLURAL, namespace),
    )


def _watch_query(
    *,
    resource_version: str,
    timeout_seconds: int,
    label_selector: str | None,
    field_selector: str | None,
) -> tuple[tuple[str, str], ...]:
    query = [
        ("watch", "true"),
        ("resourceVersion", resource_version),
        ("allowWatchBookmarks", "true"),
        ("timeoutSeconds", str(int(timeout_seconds))),
        *_selectors(label_selector, field_selector),
    ]
    return tuple(query)


def watch_tfjobs(
    *,
    namespace: str,
    resource_version: str,
    timeout_seconds: int,
    read_timeout: float,
    label_selector: str | None = None,
    field_selector: str | None = None,
) -> ApiRequest:
    """Watch TFJobs from exactly ``resource_version`` (the list's), with bookmarks."""
    return ApiRequest(
        "GET",
        _tfjobs_path(namespace),
        query=_watch_query(
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            label_selector=label_selector,
            field_selector=field_selector,
        ),
        headers={"Accept": "application/json"},
        stream=True,
        rbac=RbacRule("watch", GROUP, PLURAL, namespace),
        read_timeout=read_timeout,
    )


# --- pods, logs, events --------------------------------------------------------------------


def list_pods(
    *, namespace: str, label_selector: str | None = None, field_selector: str | None = None
) -> ApiRequest:
    return ApiRequest(
        "GET",
        _core_path(namespace, "pods"),
        query=tuple(_selectors(label_selector, field_selector)),
        headers={"Accept": "application/json"},
        rbac=RbacRule("list", "", "pods", namespace),
    )


def watch_pods(
    *,
    namespace: str,
    resource_version: str,
    timeout_seconds: int,
    read_timeout: float,
    label_selector: str | None = None,
    field_selector: str | None = None,
) -> ApiRequest:
    return ApiRequest(
        "GET",
        _core_path(namespace, "pods"),
        query=_watch_query(
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            label_selector=label_selector,
            field_selector=field_selector,
        ),
        headers={"Accept": "application/json"},
        stream=True,
        rbac=RbacRule("watch", "", "pods", namespace),
        read_timeout=read_timeout,
    )


def read_log(
    pod: str,
    *,
    namespace: str,
    container: str,
    tail_lines: int | None = None,
    limit_bytes: int | None = None,
    previous: bool = False,
    follow: bool = False,
    since_seconds: int | None = None,
    read_timeout: float | None = None,
) -> ApiRequest:
    """``GET pods/<pod>/log``.  Either bounded (``tailLines``/``limitBytes``: the server cuts the
    log, so memory is bounded however large the log is) or followed (a stream of lines)."""
    query: list[tuple[str, str]] = [("container", container)]
    if tail_lines is not None:
        query.append(("tailLines", str(int(tail_lines))))
    if limit_bytes is not None:
        query.append(("limitBytes", str(int(limit_bytes))))
    if previous:
        query.append(("previous", "true"))
    if follow:
        query.append(("follow", "true"))
    if since_seconds is not None:
        query.append(("sinceSeconds", str(int(since_seconds))))
    return ApiRequest(
        "GET",
        _core_path(namespace, "pods", pod, "log"),
        query=tuple(query),
        headers={"Accept": "text/plain"},
        stream=follow,
        rbac=RbacRule("get", "", "pods/log", namespace),
        read_timeout=read_timeout,
    )


def list_events(*, namespace: str, involved_name: str) -> ApiRequest:
    """core/v1 events about one object.  Field selectors cannot OR several names, so the client
    issues one of these per involved object (the job and each of its pods)."""
    return ApiRequest(
        "GET",
        _core_path(namespace, "events"),
        query=(("fieldSelector", f"involvedObject.name={involved_name}"),),
        headers={"Accept": "application/json"},
        rbac=RbacRule("list", "", "events", namespace),
    )


__all__ = [
    "TFJOB_API_PATH",
    "ApiRequest",
    "RbacRule",
    "create_tfjob",
    "delete_tfjob",
    "discover_tfjob_api",
    "get_tfjob",
    "job_pods_selector",
    "list_events",
    "list_pods",
    "list_tfjobs",
    "read_log",
    "watch_pods",
    "watch_tfjobs",
]
