"""Loopback TF_CONFIG ports: outside the kernel's ephemeral range, held until the pod's process starts.

The ports a loopback job writes into TF_CONFIG are bound by the replicas' servers seconds later;
these tests pin that nothing else can have them meanwhile: the kernel does not hand them to
outgoing connections (they are outside its ephemeral range) and no other program can bind them
(a socket holds each until the kubelet starts the process that will listen on it).
"""

from __future__ import annotations

import errno
import json
import socket
from pathlib import Path

import pytest
from tfjob_sandbox.api.resource_types import TFJOBS
from tfjob_sandbox.host.loopback_ports import (
    LOWEST_PORT,
    PortReservations,
    candidate_ports,
    ephemeral_range,
)
from workload_helpers import (
    container_status,
    phase,
    py,
    replica,
    run,
    running_node,
    tfjob,
    wait_for,
)


def _bindable(port: int) -> bool:
    """Can another program bind ``port`` on every interface right now?"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("0.0.0.0", port))
        except OSError as error:
            assert error.errno == errno.EADDRINUSE, error
            return False
        return True


def test_the_ephemeral_range_is_read_from_the_kernel_file(tmp_path: Path) -> None:
    path = tmp_path / "ip_local_port_range"
    path.write_text("40000\t50000\n")
    assert ephemeral_range(path) == (40000, 50000)
    assert ephemeral_range(tmp_path / "missing") == (32768, 60999)  # Linux's default


@pytest.mark.parametrize(
    ("ephemeral", "expected"),
    [
        ((32768, 60999), range(LOWEST_PORT, 32768)),  # Linux's default: the ports below it
        ((1024, 65000), range(65001, 65536)),  # a wide range: only the top is left
        ((49152, 65535), range(LOWEST_PORT, 49152)),  # IANA's (macOS, Windows)
    ],
)
def test_candidates_are_the_largest_range_outside_the_ephemeral_one(
    ephemeral: tuple[int, int], expected: range
) -> None:
    assert candidate_ports(ephemeral) == expected


def test_an_ephemeral_range_covering_everything_is_refused_with_the_fix() -> None:
    with pytest.raises(RuntimeError, match="ip_local_port_range"):
        candidate_ports((1024, 65535))


def test_a_reserved_port_is_held_until_released() -> None:
    reservations = PortReservations()
    low, high = ephemeral_range()
    port = reservations.reserve()
    try:
        assert not low <= port <= high, "the kernel could hand this port to an outgoing connection"
        assert port in reservations.held()
        assert not _bindable(port), "another program could take the reserved port"
    finally:
        reservations.release(port)
    assert _bindable(port)
    assert reservations.held() == set()


def test_a_port_held_elsewhere_is_skipped_and_the_error_names_the_range() -> None:
    elsewhere = PortReservations()
    port = elsewhere.reserve()
    try:
        only_that_port = PortReservations(candidates=range(port, port + 1), attempts=5)
        with pytest.raises(RuntimeError, match=f"no free local port in {port}-{port} after 5 attempts"):
            only_that_port.reserve()
    finally:
        elsewhere.release(port)
    assert only_that_port.reserve() == port
    only_that_port.close()
    assert _bindable(port)


#: A replica that does what a TensorFlow server does first: bind its TF_CONFIG port everywhere.
BIND_OWN_PORT = py(
    "import json, os, socket\n"
    "config = json.loads(os.environ['TF_CONFIG'])\n"
    "task = config['task']\n"
    "port = int(config['cluster'][task['type']][task['index']].rpartition(':')[2])\n"
    "server = socket.socket()\n"
    "server.bind(('0.0.0.0', port))\n"
    "server.listen()\n"
    "print('listening on', port, flush=True)\n"
)


def test_the_kubelet_releases_a_replicas_port_when_its_process_starts(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, loopback_tf_config=True, pod_start_delay=2.0) as node:
            node.store.create(TFJOBS, tfjob("bind", {"Worker": replica(BIND_OWN_PORT, replicas=2)}))
            pods = await wait_for(
                lambda: (
                    [node.pod_or_none(f"bind-worker-{i}") for i in range(2)]
                    if all(node.pod_or_none(f"bind-worker-{i}") for i in range(2))
                    else None
                )
            )
            ports = [pod["spec"]["containers"][0]["ports"][0]["containerPort"] for pod in pods]
            env = pods[0]["spec"]["containers"][0]["env"]
            config = json.loads(next(e["value"] for e in env if e["name"] == "TF_CONFIG"))
            assert config["cluster"]["worker"] == [f"127.0.0.1:{port}" for port in ports]
            # Created, not started (ContainerCreating): the ports are held for the pods.
            assert all(phase(pod) == "Pending" for pod in pods)
            assert not any(_bindable(port) for port in ports)
            # Started: each process could bind its own port, and nothing holds it any more.
            for index in range(2):
                await wait_for(lambda i=index: phase(node.pod(f"bind-worker-{i}")) == "Succeeded")
                assert (
                    container_status(node.pod(f"bind-worker-{index}"))["state"]["terminated"]["exitCode"] == 0
                )
            assert node.ports is not None and node.ports.held() & set(ports) == set()

    run(scenario())
