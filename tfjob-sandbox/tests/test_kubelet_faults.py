"""Workload faults of the sandbox node: what pods look like after each, as on a real cluster.

Eviction, OOM kills, unpullable images, a cordoned node, a lost node and a sandbox restart each
leave a specific, documented trace in pod status and events; the provider's failure
classification depends on these details, so each is pinned here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.api.resource_types import PODS
from tfjob_sandbox.kubelet.kubelet import Kubelet
from tfjob_sandbox.store.store import Store
from workload_helpers import (
    container_status,
    group_alive,
    phase,
    pod_manifest,
    run,
    running_node,
    sleep_then_exit,
    wait_for,
)


def _condition(pod: dict, kind: str) -> dict:
    return next((c for c in pod["status"].get("conditions") or [] if c["type"] == kind), {})


def test_eviction_fails_the_pod_and_kills_its_processes(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, pod_manifest("evictee", sleep_then_exit(60), restart_policy="OnFailure"))
            await wait_for(lambda: phase(node.pod("evictee")) == "Running")
            groups = node.kubelet.process_group_ids()
            node.kubelet.evict("default", "evictee", message="The node was low on resource: memory. ")
            pod = await wait_for(lambda: phase(node.pod("evictee")) == "Failed" and node.pod("evictee"))
            assert (pod["status"]["reason"], pod["status"]["message"]) == (
                "Evicted",
                "The node was low on resource: memory. ",
            )
            assert _condition(pod, "DisruptionTarget")["reason"] == "TerminationByKubelet"
            assert container_status(pod)["state"]["terminated"]["exitCode"] == 137
            assert node.events(name="evictee", reason="Evicted")[0]["type"] == "Warning"
            assert not any(group_alive(g) for g in groups)
            # OnFailure does not bring an evicted pod back: the pod itself is finished.
            assert container_status(node.pod("evictee"))["restartCount"] == 0

    run(scenario())


def test_oom_kill_reports_137_oomkilled_and_restarts_under_on_failure(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, pod_manifest("hungry", sleep_then_exit(60), restart_policy="OnFailure"))
            await wait_for(lambda: phase(node.pod("hungry")) == "Running")
            node.kubelet.oom_kill("default", "hungry")
            pod = await wait_for(
                lambda: container_status(node.pod("hungry"))["restartCount"] == 1 and node.pod("hungry")
            )
            last = container_status(pod)["lastState"]["terminated"]
            assert (last["exitCode"], last["reason"]) == (137, "OOMKilled")
            assert phase(pod) == "Running"
            with pytest.raises(ApiError):
                node.kubelet.oom_kill("default", "hungry", "no-such-container")

    run(scenario())


def test_a_process_killed_from_outside_reports_137_error_and_the_restart_policy_applies(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, pod_manifest("victim", sleep_then_exit(60), restart_policy="OnFailure"))
            await wait_for(lambda: phase(node.pod("victim")) == "Running")
            groups = node.kubelet.process_group_ids()
            node.kubelet.kill_process("default", "victim")
            pod = await wait_for(
                lambda: container_status(node.pod("victim"))["restartCount"] == 1 and node.pod("victim")
            )
            last = container_status(pod)["lastState"]["terminated"]
            assert (last["exitCode"], last["reason"]) == (137, "Error")  # a kill, not the OOM killer
            assert not any(group_alive(g) for g in groups)
            node.kubelet.kill_process("default", "victim", sig=15)
            pod = await wait_for(
                lambda: container_status(node.pod("victim"))["restartCount"] == 2 and node.pod("victim")
            )
            assert container_status(pod)["lastState"]["terminated"]["exitCode"] == 143
            with pytest.raises(ApiError):
                node.kubelet.kill_process("default", "victim", "no-such-container")

    run(scenario())


def test_unpullable_image_waits_in_back_off_until_it_can_be_pulled(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, operator=False, backoff_initial=0.2, backoff_cap=0.4) as node:
            node.kubelet.set_image_unpullable("registry.example/tf:missing")
            node.store.create(
                PODS, pod_manifest("pull", sleep_then_exit(0), image="registry.example/tf:missing")
            )
            failed = await wait_for(
                lambda: (
                    container_status(node.pod("pull"))["state"].get("waiting", {}).get("reason")
                    == "ErrImagePull"
                    and node.pod("pull")
                )
            )
            assert phase(failed) == "Pending"
            ref = "registry.example/tf:missing"
            assert container_status(failed)["state"]["waiting"]["message"] == (
                f'rpc error: code = NotFound desc = failed to pull and unpack image "{ref}": '
                f'failed to resolve reference "{ref}": {ref}: not found'
            )
            backing_off = await wait_for(
                lambda: (
                    container_status(node.pod("pull"))["state"].get("waiting", {}).get("reason")
                    == "ImagePullBackOff"
                    and node.pod("pull")
                )
            )
            assert container_status(backing_off)["state"]["waiting"]["message"].startswith(
                f'Back-off pulling image "{ref}": ErrImagePull: rpc error: code = NotFound'
            )
            messages = {e["message"] for e in node.events(name="pull", reason="Failed")}
            assert {"Error: ErrImagePull", "Error: ImagePullBackOff"} <= messages
            assert any(
                m.startswith('Failed to pull image "registry.example/tf:missing": rpc error')
                for m in messages
            )
            assert node.events(name="pull", reason="BackOff")
            node.kubelet.set_image_unpullable("registry.example/tf:missing", False)
            await wait_for(lambda: phase(node.pod("pull")) == "Succeeded")

    run(scenario())


@pytest.mark.parametrize(
    ("cause", "words"),
    [
        (
            "rate-limited",
            ("429 Too Many Requests", "toomanyrequests", "registry-1.docker.io/v2/library/python"),
        ),
        ("server-error", ("503 Service Unavailable",)),
        ("timeout", ("dial tcp", "i/o timeout")),
        ("connection-refused", ("connect: connection refused",)),
        ("tls-handshake-timeout", ("TLS handshake timeout",)),
        ("access-denied", ("pull access denied",)),
    ],
)
def test_a_pull_failure_cause_gives_the_nodes_message_and_a_count_lets_the_registry_recover(
    tmp_path: Path, cause: str, words: tuple[str, ...]
) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, operator=False, backoff_initial=0.2, backoff_cap=0.4) as node:
            node.kubelet.set_image_unpullable("python:3.11", cause=cause, failures=2)
            node.store.create(PODS, pod_manifest("pull", sleep_then_exit(0), image="python:3.11"))
            failed = await wait_for(
                lambda: (
                    container_status(node.pod("pull"))["state"].get("waiting", {}).get("reason")
                    == "ErrImagePull"
                    and node.pod("pull")
                )
            )
            message = container_status(failed)["state"]["waiting"]["message"]
            ref = "docker.io/library/python:3.11"
            assert message.startswith(
                f'rpc error: code = Unknown desc = failed to pull and unpack image "{ref}": '
            )
            assert all(word in message for word in words), message
            await wait_for(lambda: phase(node.pod("pull")) == "Succeeded")  # two failed pulls, then one works
            pulls = node.events(name="pull", reason="Pulling")  # repeats are counted on one event
            assert sum(event.get("count", 1) for event in pulls) == 3
            with pytest.raises(ValueError, match="rate-limited"):
                node.kubelet.set_image_unpullable("python:3.11", cause="rate-limitted")

    run(scenario())


def test_unschedulable_node_keeps_pods_pending_until_uncordoned(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.kubelet.set_unschedulable()
            node.store.create(PODS, pod_manifest("waiting", sleep_then_exit(0)))
            pod = await wait_for(
                lambda: _condition(node.pod("waiting"), "PodScheduled") and node.pod("waiting")
            )
            scheduled = _condition(pod, "PodScheduled")
            assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
            assert "node(s) were unschedulable" in scheduled["message"]
            assert phase(pod) == "Pending" and not pod["spec"].get("nodeName")
            event = node.events(name="waiting", reason="FailedScheduling")[0]
            assert (event["type"], event["source"]["component"]) == ("Warning", "default-scheduler")
            node.kubelet.set_unschedulable(False)
            done = await wait_for(lambda: phase(node.pod("waiting")) == "Succeeded" and node.pod("waiting"))
            assert _condition(done, "PodScheduled")["status"] == "True"

    run(scenario())


def test_lost_node_marks_pods_for_deletion_and_they_stay_running(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, pod_manifest("stranded", sleep_then_exit(60), grace=30))
            await wait_for(lambda: phase(node.pod("stranded")) == "Running")
            groups = node.kubelet.process_group_ids()
            node.kubelet.lose_node()
            pod = await wait_for(
                lambda: node.pod("stranded")["metadata"].get("deletionTimestamp") and node.pod("stranded")
            )
            assert phase(pod) == "Running"
            assert (pod["status"]["reason"], _condition(pod, "Ready")["status"]) == ("NodeLost", "False")
            assert node.events(name="stranded", reason="NodeControllerEviction")
            await wait_for(lambda: not any(group_alive(g) for g in groups))
            # New pods cannot land on the lost node.
            node.store.create(PODS, pod_manifest("newcomer", sleep_then_exit(0)))
            await wait_for(lambda: _condition(node.pod("newcomer"), "PodScheduled").get("status") == "False")
            assert (
                "node.kubernetes.io/unreachable"
                in _condition(node.pod("newcomer"), "PodScheduled")["message"]
            )
            # The node comes back: the marked pod is finished off, the pending one runs.
            node.kubelet.restore_node()
            await wait_for(lambda: node.pod_or_none("stranded") is None)
            await wait_for(lambda: phase(node.pod("newcomer")) == "Succeeded")

    run(scenario())


def test_pods_of_an_earlier_sandbox_come_back_failed(tmp_path: Path) -> None:
    store = Store()

    async def first_life() -> None:
        kubelet = Kubelet(store, workdir=tmp_path)
        kubelet.start()
        store.create(PODS, pod_manifest("survivor", sleep_then_exit(60)))
        await wait_for(lambda: phase(store.get(PODS, "survivor")) == "Running")
        await kubelet.stop()

    async def second_life() -> dict:
        kubelet = Kubelet(store, workdir=tmp_path)
        kubelet.start()
        try:
            return await wait_for(
                lambda: phase(store.get(PODS, "survivor")) == "Failed" and store.get(PODS, "survivor")
            )
        finally:
            await kubelet.stop()

    run(first_life())
    assert phase(store.get(PODS, "survivor")) == "Running"  # a killed node reports nothing
    pod = run(second_life())
    assert pod["status"]["reason"] == "NodeLost"
    terminated = container_status(pod)["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "ContainerStatusUnknown")
