"""Loopback mode maps pod DNS names (``<hostname>.<subdomain>``) to local ports, for any pod.

Unit tests pin the rewrite and the port bookkeeping; the end-to-end test runs an Indexed Job
whose two pods find each other through a TF_CONFIG-shaped variable naming both by DNS name.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from tfjob_sandbox import Sandbox
from tfjob_sandbox.host.hostname_ports import HostnamePorts
from tfjob_sandbox.host.loopback_ports import PortReservations
from tfjob_sandbox.testing import job_manifest, running_sandbox, sync_api_client, wait_for


@pytest.fixture
def names() -> Iterator[tuple[HostnamePorts, PortReservations]]:
    reservations = PortReservations(seed=7)
    yield HostnamePorts(reservations), reservations
    reservations.close()


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.mark.parametrize(
    "address",
    [
        "mnist-worker-0-1.mnist:2222",
        "mnist-worker-0-1.mnist.team:2222",
        "mnist-worker-0-1.mnist.team.svc:2222",
        "mnist-worker-0-1.mnist.team.svc.cluster.local:2222",
    ],
)
def test_every_dns_form_of_a_pod_name_becomes_the_same_local_port(
    names: tuple[HostnamePorts, PortReservations], address: str
) -> None:
    hostnames, _ = names
    env = {"PEERS": json.dumps({"cluster": {"worker": [address]}})}
    rewritten = hostnames.rewrite(env, namespace="team", subdomains={"mnist"}, referrer="pod-a")
    port = hostnames.port_of("team", "mnist-worker-0-1", "mnist")
    assert port is not None
    assert json.loads(rewritten["PEERS"]) == {"cluster": {"worker": [f"127.0.0.1:{port}"]}}


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("example.com:443", id="a subdomain no pod uses"),
        pytest.param("mnist-worker-0-1.mnist.other:2222", id="another namespace"),
        pytest.param("x.mnist-worker-0-1.mnist:2222", id="part of a longer name"),
        pytest.param("mnist-worker-0-1.mnist", id="no port"),
    ],
)
def test_other_addresses_are_left_alone(names: tuple[HostnamePorts, PortReservations], value: str) -> None:
    hostnames, _ = names
    assert hostnames.rewrite({"V": value}, namespace="team", subdomains={"mnist"}, referrer="p") == {
        "V": value
    }


def test_a_port_is_stable_held_until_its_owner_listens_and_freed_with_the_last_referrer(
    names: tuple[HostnamePorts, PortReservations],
) -> None:
    hostnames, reservations = names
    env = {"A": "w-0.net:1,w-1.net:1"}
    hostnames.rewrite(env, namespace="ns", subdomains={"net"}, referrer="pod-0")
    again = hostnames.rewrite(env, namespace="ns", subdomains={"net"}, referrer="pod-1")
    port_0, port_1 = hostnames.port_of("ns", "w-0", "net"), hostnames.port_of("ns", "w-1", "net")
    assert again == {"A": f"127.0.0.1:{port_0},127.0.0.1:{port_1}"} and port_0 != port_1
    assert port_0 is not None and port_1 is not None
    assert {port_0, port_1} <= reservations.held() and not _bindable(port_1)  # w-1 does not exist yet
    assert hostnames.claim_own("ns", "w-1", "net", "pod-1") == port_1
    assert port_1 not in reservations.held() and _bindable(port_1)
    hostnames.forget("pod-1")
    assert hostnames.port_of("ns", "w-1", "net") == port_1  # pod-0 still names it
    hostnames.forget("pod-0")
    assert hostnames.port_of("ns", "w-0", "net") is None and hostnames.port_of("ns", "w-1", "net") is None
    assert not reservations.held()


PEER_PROGRAM = """
import json, os, socket, sys, time
config = json.loads(os.environ["TF_CONFIG"])
index = config["task"]["index"]
host, port = config["cluster"]["worker"][0].rsplit(":", 1)
if index == 0:
    server = socket.create_server((host, int(port)))
    connection, _ = server.accept()
    print("worker 0 got", connection.recv(100).decode(), flush=True)
else:
    for _ in range(200):
        try:
            with socket.create_connection((host, int(port)), timeout=1) as peer:
                peer.sendall(b"hello from worker 1")
            break
        except OSError:
            time.sleep(0.05)
    else:
        sys.exit(3)
"""


@pytest.fixture
def loopback_sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    with running_sandbox(
        workdir=tmp_path / "pods", loopback_tf_config=True, backoff_initial=0.2, backoff_cap=1.0
    ) as sb:
        yield sb


def test_two_job_pods_connect_through_their_dns_names(loopback_sandbox: Sandbox) -> None:
    api = sync_api_client(loopback_sandbox)
    batch_v1, core_v1 = client.BatchV1Api(api), client.CoreV1Api(api)
    tf_config = (
        '{"cluster":{"worker":["peers-0.net:2222","peers-1.net:2222"]},'
        '"task":{"type":"worker","index":$(TF_CONFIG_TASK_INDEX)},"environment":"cloud"}'
    )
    manifest = job_manifest(
        "peers",
        command=[sys.executable, "-I", "-S", "-c", PEER_PROGRAM],
        completionMode="Indexed",
        completions=2,
        parallelism=2,
    )
    pod_spec: dict[str, Any] = manifest["spec"]["template"]["spec"]
    pod_spec["subdomain"] = "net"
    pod_spec["containers"][0]["env"] = [
        {
            "name": "TF_CONFIG_TASK_INDEX",
            "valueFrom": {
                "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
            },
        },
        {"name": "TF_CONFIG", "value": tf_config},
    ]
    batch_v1.create_namespaced_job("default", manifest)

    def complete() -> bool:
        conditions = batch_v1.read_namespaced_job_status("peers", "default").status.conditions or []
        return any(c.type == "Complete" for c in conditions)

    assert wait_for(complete, what="both workers to finish", timeout=30)
    server = next(p for p in core_v1.list_namespaced_pod("default").items if p.spec.hostname == "peers-0")
    log = core_v1.read_namespaced_pod_log(
        server.metadata.name, "default", _preload_content=False
    ).data.decode()
    assert log.strip() == "worker 0 got hello from worker 1"
    api.close()


def test_a_reference_sees_only_variables_defined_before_it() -> None:
    from tfjob_sandbox.kubelet.container_env import container_environment

    index_from_annotation = {
        "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
    }
    pod = {"metadata": {"name": "p", "annotations": {"batch.kubernetes.io/job-completion-index": "3"}}}
    container = {
        "name": "main",
        "env": [
            {"name": "EARLY", "value": "index=$(JOB_COMPLETION_INDEX)"},
            {"name": "JOB_COMPLETION_INDEX", "valueFrom": index_from_annotation},
            {"name": "LATE", "value": "index=$(JOB_COMPLETION_INDEX)"},
        ],
    }
    env = container_environment(container, pod, home="/tmp")
    assert (env["EARLY"], env["LATE"]) == ("index=$(JOB_COMPLETION_INDEX)", "index=3")
