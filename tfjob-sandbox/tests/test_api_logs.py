"""The pod ``log`` subresource with kubectl's options, read through the official client."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from tfjob_sandbox.testing import pod_manifest, wait_for

FIVE_LINES = ["sh", "-c", "for i in 1 2 3 4 5; do echo line-$i; done"]


def _log(core_v1: client.CoreV1Api, name: str, namespace: str, **options: Any) -> str:
    # The official client mangles text responses (str(bytes)); read the raw body instead.
    response = core_v1.read_namespaced_pod_log(name, namespace, _preload_content=False, **options)
    return response.data.decode()


def _finished(core_v1: client.CoreV1Api, name: str, namespace: str) -> bool:
    return core_v1.read_namespaced_pod(name, namespace).status.phase in ("Succeeded", "Failed")


@pytest.fixture
def finished_pod(core_v1: client.CoreV1Api, namespace: str) -> tuple[str, str]:
    core_v1.create_namespaced_pod(namespace, pod_manifest("printer", command=FIVE_LINES))
    wait_for(lambda: _finished(core_v1, "printer", namespace), what="printer finished")
    return "printer", namespace


def test_whole_log(core_v1: client.CoreV1Api, finished_pod: tuple[str, str]) -> None:
    assert _log(core_v1, *finished_pod) == "".join(f"line-{i}\n" for i in range(1, 6))


def test_tail_lines_and_limit_bytes(core_v1: client.CoreV1Api, finished_pod: tuple[str, str]) -> None:
    assert _log(core_v1, *finished_pod, tail_lines=2) == "line-4\nline-5\n"
    assert _log(core_v1, *finished_pod, tail_lines=0) == ""
    assert _log(core_v1, *finished_pod, limit_bytes=9) == "line-1\nli"


def test_timestamps_prefix_every_line(core_v1: client.CoreV1Api, finished_pod: tuple[str, str]) -> None:
    lines = _log(core_v1, *finished_pod, timestamps=True).splitlines()
    assert len(lines) == 5
    for index, line in enumerate(lines, start=1):
        assert re.fullmatch(rf"\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{{9}}Z line-{index}", line)


def test_since_seconds_filters_old_output(core_v1: client.CoreV1Api, finished_pod: tuple[str, str]) -> None:
    assert _log(core_v1, *finished_pod, since_seconds=3600).count("\n") == 5
    time.sleep(1.2)
    assert _log(core_v1, *finished_pod, since_seconds=1) == ""


def test_container_must_be_named_when_there_are_several(core_v1: client.CoreV1Api, namespace: str) -> None:
    manifest = pod_manifest("pair", command=["sh", "-c", "echo first"])
    manifest["spec"]["containers"].append(
        {"name": "sidecar", "image": "busybox", "command": ["sh", "-c", "echo second"]}
    )
    core_v1.create_namespaced_pod(namespace, manifest)
    with pytest.raises(ApiException) as error:
        core_v1.read_namespaced_pod_log("pair", namespace)
    assert error.value.status == 400
    assert json.loads(error.value.body)["message"] == (
        "a container name must be specified for pod pair, choose one of: [main sidecar]"
    )
    wait_for(lambda: _finished(core_v1, "pair", namespace), what="pair finished")
    assert _log(core_v1, "pair", namespace, container="sidecar") == "second\n"


def test_previous_reads_the_last_terminated_run(core_v1: client.CoreV1Api, namespace: str) -> None:
    script = "echo run-$(cat count 2>/dev/null || echo 0); test -f count && exit 0; echo 1 > count; exit 3"
    core_v1.create_namespaced_pod(
        namespace, pod_manifest("retry", command=["sh", "-c", script], restartPolicy="OnFailure")
    )
    wait_for(lambda: _finished(core_v1, "retry", namespace), timeout=20, what="retry finished")
    assert _log(core_v1, "retry", namespace) == "run-1\n"
    assert _log(core_v1, "retry", namespace, previous=True) == "run-0\n"


def test_previous_without_a_restart_is_400(core_v1: client.CoreV1Api, finished_pod: tuple[str, str]) -> None:
    with pytest.raises(ApiException) as error:
        core_v1.read_namespaced_pod_log(*finished_pod, previous=True)
    assert error.value.status == 400
    assert "previous terminated container" in json.loads(error.value.body)["message"]


def test_follow_streams_until_the_container_ends(core_v1: client.CoreV1Api, namespace: str) -> None:
    script = "for i in 1 2 3 4; do echo tick-$i; sleep 0.4; done"
    core_v1.create_namespaced_pod(namespace, pod_manifest("ticker", command=["sh", "-c", script]))
    wait_for(
        lambda: core_v1.read_namespaced_pod("ticker", namespace).status.phase == "Running", what="Running"
    )
    started = time.monotonic()
    response = core_v1.read_namespaced_pod_log("ticker", namespace, follow=True, _preload_content=False)
    arrivals: list[tuple[float, bytes]] = []
    for chunk in response.stream(amt=None):
        arrivals.append((time.monotonic() - started, chunk))
    text = b"".join(chunk for _, chunk in arrivals).decode()
    assert text == "".join(f"tick-{i}\n" for i in range(1, 5))
    assert arrivals[0][0] < arrivals[-1][0] - 0.5  # output arrived while the container was still running
    assert _finished(core_v1, "ticker", namespace)


def test_log_of_a_container_that_has_not_started_is_400(sandbox: Any, api_client: Any) -> None:
    core_v1 = client.CoreV1Api(api_client)
    sandbox.set_unschedulable(True)
    core_v1.create_namespaced_pod("default", pod_manifest("stuck"))
    with pytest.raises(ApiException) as error:
        core_v1.read_namespaced_pod_log("stuck", "default")
    assert error.value.status == 400
    assert 'container "main" in pod "stuck" is waiting to start' in json.loads(error.value.body)["message"]
