"""Helpers for the JobSet suites: manifests, and reading/writing JobSets and Jobs through the clients."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from tfjob_sandbox import Sandbox
from tfjob_sandbox.testing import running_sandbox, sync_api_client, unique_name, wait_for

GROUP, VERSION, PLURAL = "jobset.x-k8s.io", "v1alpha2", "jobsets"
PREFIX = "jobset.sigs.k8s.io/"


@contextmanager
def jobless_sandbox(**options: Any) -> Iterator[Sandbox]:
    """A sandbox with its Job controller stopped, as in upstream's envtest: only tests write Job status."""
    with running_sandbox(**options) as sb:
        sb.call(sb.runtime.job_controller.stop)
        yield sb


@contextmanager
def namespace_client(sb: Sandbox) -> Iterator[JobSetClient]:
    """A :class:`JobSetClient` on a fresh namespace of ``sb``."""
    api = sync_api_client(sb)
    namespace = unique_name("js")
    client.CoreV1Api(api).create_namespace({"metadata": {"name": namespace}})
    try:
        yield JobSetClient(api, namespace)
    finally:
        api.close()


def replicated_job(
    name: str, replicas: int = 1, *, command: list[str] | None = None, **job_spec: Any
) -> dict[str, Any]:
    """One replicatedJob whose pods run ``command`` (default: sleep) in a ``main`` container."""
    return {
        "name": name,
        "replicas": replicas,
        "template": {
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {"name": "main", "image": "busybox", "command": command or ["sleep", "60"]}
                        ],
                    }
                },
                **job_spec,
            }
        },
    }


def upstream_jobset(name: str = "test-js", **spec: Any) -> dict[str, Any]:
    """Upstream's ``testJobSet``: replicated-job-a (1 Job) and replicated-job-b (3 Jobs)."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": {
            "replicatedJobs": [
                replicated_job("replicated-job-a", 1),
                replicated_job("replicated-job-b", 3, completionMode="Indexed"),
            ],
            **spec,
        },
    }


@dataclass
class JobSetClient:
    """One namespace's JobSets and Jobs, read as plain dicts (the wire's camelCase)."""

    api: Any
    namespace: str

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api)

    @property
    def batch(self) -> client.BatchV1Api:
        return client.BatchV1Api(self.api)

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    def create(self, manifest: dict[str, Any]) -> dict[str, Any]:
        created: dict[str, Any] = self.custom.create_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, manifest
        )
        return created

    def get(self, name: str = "test-js") -> dict[str, Any]:
        found: dict[str, Any] = self.custom.get_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, name
        )
        return found

    def patch(self, patch: dict[str, Any], name: str = "test-js") -> dict[str, Any]:
        patched: dict[str, Any] = self.custom.patch_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, name, patch
        )
        return patched

    def jobs(self) -> dict[str, dict[str, Any]]:
        response = self.batch.list_namespaced_job(self.namespace, _preload_content=False)
        return {job["metadata"]["name"]: job for job in json.loads(response.data)["items"]}

    def wait_jobs(self, count: int, *, attempt: int | None = None) -> dict[str, dict[str, Any]]:
        """The Jobs once ``count`` exist (all of restart ``attempt``, when given)."""

        def probe() -> dict[str, dict[str, Any]] | None:
            jobs = self.jobs()
            if attempt is not None:
                jobs = {
                    n: j
                    for n, j in jobs.items()
                    if j["metadata"]["labels"][PREFIX + "restart-attempt"] == str(attempt)
                }
            return jobs if len(jobs) == count else None

        return wait_for(probe, what=f"{count} Jobs (attempt {attempt})")

    def set_job_status(self, name: str, status: dict[str, Any]) -> None:
        self.batch.patch_namespaced_job_status(name, self.namespace, {"status": status})

    def complete(self, name: str) -> None:
        self.set_job_status(
            name,
            {
                "conditions": [
                    {"type": "Complete", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}
                ],
                "succeeded": 1,
            },
        )

    def fail(self, name: str, reason: str = "", when: str = "2025-01-01T00:00:00Z") -> None:
        condition = {"type": "Failed", "status": "True", "lastTransitionTime": when}
        if reason:
            condition["reason"] = reason
        self.set_job_status(name, {"conditions": [condition]})

    def ready(self, name: str) -> None:
        self.set_job_status(name, {"ready": 1, "active": 1})

    def condition(self, type_: str, name: str = "test-js") -> dict[str, Any] | None:
        conditions = (self.get(name).get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == type_ and c["status"] == "True"), None)

    def wait_condition(self, type_: str, name: str = "test-js") -> dict[str, Any]:
        return wait_for(lambda: self.condition(type_, name), what=f"JobSet condition {type_}")

    def wait_status(self, key: str, value: Any, name: str = "test-js") -> dict[str, Any]:
        return wait_for(
            lambda: (status := self.get(name).get("status") or {}).get(key) == value and status,
            what=f"status.{key} == {value!r}",
        )
