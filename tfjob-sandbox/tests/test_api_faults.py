"""API faults: 5xx, 429 + Retry-After, resets, latency, dropped watches, in process and over HTTP."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client, config
from tfjob_sandbox import Sandbox
from tfjob_sandbox.admin_client import SandboxAdminClient
from tfjob_sandbox.testing import running_sandbox, tfjob_manifest


@pytest.fixture
def faulty(tmp_path: Path) -> Iterator[Sandbox]:
    with running_sandbox(workdir=tmp_path / "pods", fault_seed=7, bookmark_interval=0.2) as sb:
        yield sb


@pytest.fixture
def core(faulty: Sandbox) -> Iterator[client.CoreV1Api]:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(faulty.kubeconfig_path), client_configuration=configuration)
    configuration.retries = False  # let each fault reach the test instead of urllib3's retry loop
    api = client.ApiClient(configuration)
    yield client.CoreV1Api(api)
    api.close()


def _status_of(call: Any, *args: Any, **kwargs: Any) -> tuple[int, dict[str, Any], Any]:
    with pytest.raises(client.ApiException) as error:
        call(*args, **kwargs)
    return error.value.status, json.loads(error.value.body), error.value.headers


def test_next_n_requests_fail_with_500_then_recover(faulty: Sandbox, core: client.CoreV1Api) -> None:
    faulty.fail_requests(500, count=2)
    for _ in range(2):
        status, body, _ = _status_of(core.list_namespaced_pod, "default")
        assert (status, body["reason"]) == (500, "InternalError")
    assert core.list_namespaced_pod("default").items == []


def test_503_is_service_unavailable(faulty: Sandbox, core: client.CoreV1Api) -> None:
    faulty.fail_requests(503)
    status, body, _ = _status_of(core.read_namespace, "default")
    assert (status, body["reason"]) == (503, "ServiceUnavailable")


def test_429_carries_retry_after(faulty: Sandbox, core: client.CoreV1Api) -> None:
    faulty.fail_requests(429, retry_after=7)
    status, body, headers = _status_of(core.list_namespaced_pod, "default")
    assert (status, body["reason"]) == (429, "TooManyRequests")
    assert headers["Retry-After"] == "7"
    assert body["details"]["retryAfterSeconds"] == 7


def test_faults_can_target_verbs_and_resources(faulty: Sandbox, core: client.CoreV1Api) -> None:
    faulty.fail_requests(500, count=None, verbs=["create"], resources=["tfjobs"])
    tfjobs = client.CustomObjectsApi(core.api_client)
    assert core.list_namespaced_pod("default").items == []
    assert tfjobs.list_namespaced_custom_object("kubeflow.org", "v1", "default", "tfjobs")["items"] == []
    for _ in range(3):
        status, _, _ = _status_of(
            tfjobs.create_namespaced_custom_object,
            "kubeflow.org",
            "v1",
            "default",
            "tfjobs",
            tfjob_manifest("f"),
        )
        assert status == 500
    faulty.clear_api_faults()
    assert tfjobs.create_namespaced_custom_object(
        "kubeflow.org", "v1", "default", "tfjobs", tfjob_manifest("f")
    )


def test_subresource_filters(faulty: Sandbox, core: client.CoreV1Api) -> None:
    faulty.fail_requests(503, count=None, resources=["pods/log"])
    status, _, _ = _status_of(core.read_namespaced_pod_log, "missing", "default")
    assert status == 503
    assert core.list_namespaced_pod("default").items == []


def test_connection_reset_reaches_the_client(faulty: Sandbox, core: client.CoreV1Api) -> None:
    faulty.reset_connections(count=1)
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.list_namespaced_pod("default")
    assert core.list_namespaced_pod("default").items == []


def test_added_latency(faulty: Sandbox, core: client.CoreV1Api) -> None:
    faulty.add_latency(0.8, count=1)
    started = time.monotonic()
    core.list_namespaced_pod("default")
    slow = time.monotonic() - started
    started = time.monotonic()
    core.list_namespaced_pod("default")
    fast = time.monotonic() - started
    assert slow >= 0.8
    assert fast < slow - 0.3  # only the first request was delayed (margin for a busy machine)


def test_rate_faults_hit_a_fraction_of_requests(faulty: Sandbox, core: client.CoreV1Api) -> None:
    faulty.api_fault("status", status=500, rate=0.5, resources=["namespaces"])
    failures = 0
    for _ in range(40):
        try:
            core.read_namespace("default")
        except client.ApiException as error:
            assert error.status == 500
            failures += 1
    assert 8 <= failures <= 32


def _watch_in_thread(core: client.CoreV1Api) -> tuple[threading.Thread, dict[str, Any]]:
    outcome: dict[str, Any] = {}

    def run() -> None:
        started = time.monotonic()
        try:
            response = core.list_namespaced_service(
                "default", watch=True, resource_version="1", timeout_seconds=30, _preload_content=False
            )
            outcome["lines"] = [line for line in response.stream() if line.strip()]
        except Exception as error:
            outcome["error"] = error
        outcome["elapsed"] = time.monotonic() - started

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def _wait_for_open_watches(sandbox: Sandbox, count: int) -> None:
    deadline = time.monotonic() + 10
    while sandbox.server.watches.open_count < count:
        assert time.monotonic() < deadline, "watch never opened"
        time.sleep(0.02)


def test_drop_watches_ends_open_streams_cleanly(faulty: Sandbox, core: client.CoreV1Api) -> None:
    thread, outcome = _watch_in_thread(core)
    _wait_for_open_watches(faulty, 1)
    assert faulty.drop_watches() == 1
    thread.join(10)
    assert "error" not in outcome and outcome["elapsed"] < 10


def test_drop_watches_with_abort_resets_connections(faulty: Sandbox, core: client.CoreV1Api) -> None:
    thread, outcome = _watch_in_thread(core)
    _wait_for_open_watches(faulty, 1)
    assert faulty.drop_watches(abort=True) == 1
    thread.join(10)
    assert isinstance(outcome.get("error"), urllib3.exceptions.HTTPError)


def test_admin_endpoints_drive_the_same_faults(faulty: Sandbox, core: client.CoreV1Api) -> None:
    admin = SandboxAdminClient.from_kubeconfig(faulty.kubeconfig_path)
    fault_id = admin.api_fault("status", status=503, verbs=["list"], resources=["pods"])
    assert [rule["id"] for rule in admin.api_faults()] == [fault_id]
    status, _, _ = _status_of(core.list_namespaced_pod, "default")
    assert status == 503
    assert admin.status()["resourceVersion"]  # admin calls are never subject to API faults
    admin.clear_api_faults(fault_id)
    assert core.list_namespaced_pod("default").items == []
    created = core.create_namespaced_service(
        "default", {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 1}]}}
    )
    admin.expire_watch_history()
    response = core.list_namespaced_service(
        "default",
        watch=True,
        resource_version=str(int(created.metadata.resource_version) - 1),
        timeout_seconds=1,
        _preload_content=False,
    )
    events = [json.loads(line) for line in response.stream() if line.strip()]
    assert events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410
    admin.set_image_unpullable("python:3.11", cause="timeout", failures=1)
    core.create_namespaced_pod(
        "default",
        {
            "metadata": {
                "name": "hollow",
                "annotations": {"tfjob-sandbox/script": "{}"},
            },
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "tensorflow", "image": "python:3.11"}],
            },
        },
    )
    deadline = time.monotonic() + 20
    while admin.end_scripted([("default", "hollow")], exit_code=3) == 0 and time.monotonic() < deadline:
        time.sleep(0.1)  # until the pod runs (after its failed pull)
    assert abs(admin.scripted_exits()["default/hollow/tensorflow"] - time.time()) < 20
    deadline = time.monotonic() + 20
    while (
        core.read_namespaced_pod("hollow", "default").status.phase != "Failed" and time.monotonic() < deadline
    ):
        time.sleep(0.1)
    terminated = core.read_namespaced_pod("hollow", "default").status.container_statuses[0].state.terminated
    assert terminated is not None and terminated.exit_code == 3
    pull_errors = [e.message for e in core.list_namespaced_event("default").items if e.reason == "Failed"]
    assert any("i/o timeout" in message for message in pull_errors)
    with pytest.raises(Exception, match="rate-limited"):
        admin.set_image_unpullable("python:3.11", cause="slow")
    admin.stop_operator()
    assert admin.status()["operatorRunning"] is False
    admin.start_operator()
    assert admin.status()["operatorRunning"] is True


def test_admin_kill_signals_a_pods_process(faulty: Sandbox, core: client.CoreV1Api) -> None:
    admin = SandboxAdminClient.from_kubeconfig(faulty.kubeconfig_path)
    core.create_namespaced_pod(
        "default",
        {
            "metadata": {"name": "victim"},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "tensorflow", "image": "python:3.11", "command": ["sleep", "60"]}],
            },
        },
    )
    deadline = time.monotonic() + 10
    while core.read_namespaced_pod("victim", "default").status.phase != "Running":
        assert time.monotonic() < deadline, "the pod never ran"
        time.sleep(0.05)
    admin.kill_process("default", "victim")
    while (pod := core.read_namespaced_pod("victim", "default")).status.phase != "Failed":
        assert time.monotonic() < deadline, "the killed pod did not fail"
        time.sleep(0.05)
    terminated = pod.status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (137, "Error")


@pytest.mark.parametrize(("kind", "status"), [("503", 503), ("429", 429)])
def test_an_outage_answers_every_request_with_retry_after_until_it_ends_by_itself(
    faulty: Sandbox, core: client.CoreV1Api, kind: str, status: int
) -> None:
    outage = faulty.api_outage(1.0, kind=kind, retry_after=3)
    for _ in range(3):
        code, _, headers = _status_of(core.list_namespaced_pod, "default")
        assert (code, headers["Retry-After"]) == (status, "3")
    time.sleep(1.1)
    assert core.list_namespaced_pod("default").items == []
    assert faulty.faults.rules() == []  # gone, not merely idle
    assert faulty.faults.fired(outage) == 3


def test_an_outage_of_resets_and_one_of_latency(faulty: Sandbox, core: client.CoreV1Api) -> None:
    faulty.api_outage(0.6, kind="reset")
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.list_namespaced_pod("default")
    time.sleep(0.7)
    assert core.list_namespaced_pod("default").items == []
    faulty.api_outage(0.6, kind="latency", latency=0.3)
    started = time.monotonic()
    core.list_namespaced_pod("default")
    assert time.monotonic() - started >= 0.3
    time.sleep(0.7)
    started = time.monotonic()
    core.list_namespaced_pod("default")
    assert time.monotonic() - started < 0.3


def test_a_fault_duration_must_be_positive(faulty: Sandbox) -> None:
    with pytest.raises(ValueError, match="duration"):
        faulty.api_outage(0)
