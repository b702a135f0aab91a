"""The operator emulation and kubelet seen through the official ``kubernetes`` client, like the provider.

The other workload tests drive the store directly; these go through the sandbox's HTTP API with
a kubeconfig, so they also prove that what the emulations write survives serialisation: TFJob
conditions, pod labels and TF_CONFIG, container logs, OOM kills and admission rejections.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config
from tfjob_sandbox.launch.in_thread import Sandbox

GROUP, VERSION, PLURAL = "kubeflow.org", "v1", "tfjobs"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(backoff_initial=0.1, backoff_cap=0.4) as sb:
        yield sb


@pytest.fixture(scope="module")
def api(sandbox: Sandbox) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(str(sandbox.kubeconfig_path))
    yield api_client
    api_client.close()


def replica(code: str, *, replicas: int = 1, restart_policy: str = "Never") -> dict[str, Any]:
    return {
        "replicas": replicas,
        "restartPolicy": restart_policy,
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "tensorflow",
                        "image": "tf:2.15",
                        "command": [sys.executable, "-I", "-S", "-c", code],
                    }
                ]
            }
        },
    }


def submit(api: client.ApiClient, name: str, specs: dict[str, Any]) -> None:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {"tfReplicaSpecs": specs},
    }
    client.CustomObjectsApi(api).create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)


def wait_finished(api: client.ApiClient, name: str, *, timeout: float = 20) -> dict[str, Any]:
    objects = client.CustomObjectsApi(api)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = objects.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name)
        conditions = (job.get("status") or {}).get("conditions") or []
        if any(c["type"] in ("Succeeded", "Failed") and c["status"] == "True" for c in conditions):
            return dict(job)
        time.sleep(0.05)
    raise AssertionError(f"TFJob {name} did not finish within {timeout}s")


def test_tfjob_runs_to_success_through_the_api(api: client.ApiClient) -> None:
    submit(
        api,
        "via-api",
        {
            "Chief": replica("import json, os; print(json.loads(os.environ['TF_CONFIG'])['task'])"),
            "Worker": replica("import time; time.sleep(0.2)", replicas=2),
        },
    )
    job = wait_finished(api, "via-api")
    assert [c["type"] for c in job["status"]["conditions"]][-1] == "Succeeded"
    core = client.CoreV1Api(api)
    pods = core.list_namespaced_pod(
        "default",
        label_selector="training.kubeflow.org/job-name=via-api,training.kubeflow.org/replica-type=worker",
    ).items
    assert sorted(p.metadata.name for p in pods) == ["via-api-worker-0", "via-api-worker-1"]
    chief = core.read_namespaced_pod("via-api-chief-0", "default")
    tf_config = next(e.value for e in chief.spec.containers[0].env if e.name == "TF_CONFIG")
    assert json.loads(tf_config)["cluster"]["worker"] == [
        "via-api-worker-0.default.svc:2222",
        "via-api-worker-1.default.svc:2222",
    ]
    assert chief.status.container_statuses[0].state.terminated.exit_code == 0
    log = core.read_namespaced_pod_log("via-api-chief-0", "default", container="tensorflow")
    assert "'type': 'chief'" in str(log)


def test_oom_kill_under_exit_code_policy_recreates_the_pod(sandbox: Sandbox, api: client.ApiClient) -> None:
    submit(api, "oom", {"Worker": replica("import time; time.sleep(60)", restart_policy="ExitCode")})
    core = client.CoreV1Api(api)
    deadline = time.monotonic() + 10
    while True:
        pod = (
            core.read_namespaced_pod("oom-worker-0", "default")
            if core.list_namespaced_pod("default", field_selector="metadata.name=oom-worker-0").items
            else None
        )
        if pod is not None and pod.status.phase == "Running":
            break
        assert time.monotonic() < deadline, "worker never ran"
        time.sleep(0.05)
    first_uid = pod.metadata.uid
    sandbox.oom_kill("default", "oom-worker-0")
    while True:
        pods = core.list_namespaced_pod("default", field_selector="metadata.name=oom-worker-0").items
        if pods and pods[0].metadata.uid != first_uid and pods[0].status.phase == "Running":
            break
        assert time.monotonic() < deadline + 10, "the OOM-killed worker was not recreated"
        time.sleep(0.05)
    events = core.list_namespaced_event("default", field_selector="involvedObject.name=oom").items
    assert any(e.reason == "ExitedWithCode" and e.message.endswith("exited with code 137") for e in events)
    client.CustomObjectsApi(api).delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "oom")


def test_admission_rejection_is_a_422_with_causes(api: client.ApiClient) -> None:
    with pytest.raises(client.ApiException) as rejected:
        submit(api, "00bad", {"Worker": replica("pass")})
    assert rejected.value.status == 422
    body = json.loads(rejected.value.body)
    assert body["reason"] == "Invalid"
    assert [c["field"] for c in body["details"]["causes"]] == ["metadata.name"]
