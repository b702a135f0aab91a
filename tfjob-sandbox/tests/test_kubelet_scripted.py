"""Scripted ("hollow") pods: the kubelet plays a JSON script through the same pod-status machinery.

What must hold: a scripted pod runs no process, yet its container states, restart counts,
CrashLoop back-off, OOMKilled and Evicted traces, image-pull failures, graceful deletion and the
training operator's reaction are those of a process pod; a bad script is a clear, field-named error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tfjob_sandbox.api.resource_types import PODS, TFJOBS
from tfjob_sandbox.kubelet.scripted_pods import SCRIPT_ANNOTATION, ScriptError, parse_script
from workload_helpers import (
    container_status,
    phase,
    pod_manifest,
    replica,
    run,
    running_node,
    tfjob,
    wait_for,
)


def scripted_pod(name: str, script: dict[str, Any], *, restart_policy: str = "Never") -> dict[str, Any]:
    pod = pod_manifest(name, ["never-run"], restart_policy=restart_policy)
    pod["metadata"]["annotations"] = {SCRIPT_ANNOTATION: json.dumps(script)}
    return pod


def scripted_replica(
    script: dict[str, Any], *, replicas: int = 1, restart_policy: str = "Never"
) -> dict[str, Any]:
    spec = replica(["never-run"], replicas=replicas, restart_policy=restart_policy)
    spec["template"]["metadata"] = {"annotations": {SCRIPT_ANNOTATION: json.dumps(script)}}
    return spec


def test_a_scripted_pod_waits_runs_and_exits_as_scripted_without_a_process(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(
                PODS, scripted_pod("hollow", {"start_after": 0.3, "steps": [{"run": 0.4, "exit": 3}]})
            )
            creating = await wait_for(
                lambda: node.pod("hollow").get("status", {}).get("startTime") and node.pod("hollow")
            )
            assert container_status(creating)["state"]["waiting"]["reason"] == "ContainerCreating"
            running = await wait_for(lambda: phase(node.pod("hollow")) == "Running" and node.pod("hollow"))
            assert container_status(running)["ready"] is True
            assert node.kubelet.running_processes == 0  # nothing was spawned
            done = await wait_for(lambda: phase(node.pod("hollow")) == "Failed" and node.pod("hollow"))
            terminated = container_status(done)["state"]["terminated"]
            assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
            assert not (tmp_path / "pods").exists() or not any((tmp_path / "pods").iterdir())
            assert node.events(name="hollow", reason="Started")
            assert "default/hollow/tensorflow" in node.kubelet.scripted_exit_times

    run(scenario())


def test_steps_follow_restarts_under_on_failure_with_crash_loop_back_off(tmp_path: Path) -> None:
    script = {
        "steps": [{"run": 0.1, "exit": 137}, {"run": 0.1, "reason": "OOMKilled"}, {"run": 0.2, "exit": 0}]
    }

    async def scenario() -> None:
        async with running_node(tmp_path, operator=False, backoff_initial=0.2) as node:
            node.store.create(PODS, scripted_pod("crashy", script, restart_policy="OnFailure"))
            backing_off = await wait_for(
                lambda: (
                    container_status(node.pod("crashy"))["state"].get("waiting", {}).get("reason")
                    == "CrashLoopBackOff"
                    and node.pod("crashy")
                )
            )
            last = container_status(backing_off)["lastState"]["terminated"]
            assert (last["exitCode"], last["reason"]) == (137, "OOMKilled")  # the second run
            done = await wait_for(lambda: phase(node.pod("crashy")) == "Succeeded" and node.pod("crashy"))
            assert container_status(done)["restartCount"] == 2
            assert container_status(done)["state"]["terminated"]["exitCode"] == 0

    run(scenario())


def test_an_evicted_step_evicts_the_pod(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, scripted_pod("evictee", {"steps": [{"run": 0.2, "reason": "Evicted"}]}))
            pod = await wait_for(lambda: phase(node.pod("evictee")) == "Failed" and node.pod("evictee"))
            assert pod["status"]["reason"] == "Evicted"
            assert container_status(pod)["state"]["terminated"]["exitCode"] == 137

    run(scenario())


def test_a_scripted_image_pull_failure_backs_off_then_clears(tmp_path: Path) -> None:
    script = {"image_pull": {"cause": "rate-limited", "failures": 1}, "steps": [{"run": 0.1}]}

    async def scenario() -> None:
        async with running_node(tmp_path, operator=False, backoff_initial=0.3) as node:
            node.store.create(PODS, scripted_pod("pulls", script))
            waiting = await wait_for(
                lambda: (
                    container_status(node.pod("pulls"))["state"].get("waiting", {}).get("reason")
                    == "ErrImagePull"
                    and node.pod("pulls")
                )
            )
            assert "429 Too Many Requests" in container_status(waiting)["state"]["waiting"]["message"]
            await wait_for(lambda: phase(node.pod("pulls")) == "Succeeded")

    run(scenario())


def test_deleting_a_scripted_pod_ends_it_with_sigterm(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, scripted_pod("forever", {"steps": [{"run": None}]}))
            await wait_for(lambda: phase(node.pod("forever")) == "Running")
            node.kubelet.oom_kill("default", "forever")  # a kill works on a scripted container too
            killed = await wait_for(lambda: phase(node.pod("forever")) == "Failed" and node.pod("forever"))
            assert container_status(killed)["state"]["terminated"]["reason"] == "OOMKilled"
            node.store.create(PODS, scripted_pod("doomed", {}))
            await wait_for(lambda: phase(node.pod("doomed")) == "Running")
            node.store.delete(PODS, "doomed", namespace="default", grace_period_seconds=30)
            await wait_for(lambda: node.pod_or_none("doomed") is None)

    run(scenario())


def test_the_training_operator_sees_scripted_replicas_like_process_replicas(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path) as node:
            node.store.create(
                TFJOBS,
                tfjob(
                    "hollow",
                    {
                        "Chief": scripted_replica({"steps": [{"run": 0.3, "exit": 0}]}),
                        "Worker": scripted_replica({"steps": [{"run": None}]}, replicas=2),
                    },
                ),
            )
            await wait_for(lambda: ("Succeeded", "True") in node.conditions("hollow"), timeout=20)
            # A PS that dies with a permanent exit code fails its job.
            node.store.create(
                TFJOBS,
                tfjob(
                    "ps-dies",
                    {
                        "Chief": scripted_replica({"steps": [{"run": None}]}),
                        "PS": scripted_replica({"steps": [{"run": 0.3, "exit": 1}]}),
                    },
                ),
            )
            await wait_for(lambda: ("Failed", "True") in node.conditions("ps-dies"), timeout=20)

    run(scenario())


def test_a_bad_script_keeps_the_container_waiting_with_a_config_error(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, scripted_pod("bad", {"steps": [{"run": -1}]}))
            pod = await wait_for(
                lambda: (
                    container_status(node.pod("bad"))["state"].get("waiting", {}).get("reason")
                    == "CreateContainerConfigError"
                    and node.pod("bad")
                )
            )
            assert "steps[0].run" in container_status(pod)["state"]["waiting"]["message"]

    run(scenario())


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("not json", ("not JSON",)),
        ("[1]", ("JSON object",)),
        ('{"steps": []}', ("steps", "non-empty")),
        ('{"stepz": []}', ("unknown key", "stepz")),
        ('{"steps": [{"run": 1, "exit": 256}]}', ("steps[0].exit", "0 to 255")),
        ('{"steps": [{"reason": "Killed"}]}', ("steps[0].reason", "OOMKilled")),
        ('{"start_after": "soon"}', ("start_after",)),
        ('{"image_pull": {"cause": "gone"}}', ("image_pull.cause", "rate-limited")),
        ('{"image_pull": {"failures": 0}}', ("image_pull.failures",)),
    ],
)
def test_script_errors_name_the_field(text: str, words: tuple[str, ...]) -> None:
    with pytest.raises(ScriptError) as caught:
        parse_script(text)
    assert all(word in str(caught.value) for word in words), caught.value


def test_script_defaults() -> None:
    script = parse_script(
        '{"steps": [{"run": 5, "reason": "OOMKilled"}, {"run": 1}], "image_pull": "timeout"}'
    )
    assert (script.step(0).exit, script.step(1).exit, script.step(7).run) == (137, 0, 1.0)
    assert (script.start_after, script.pull_cause, script.pull_failures) == (0.0, "timeout", None)
    assert parse_script("{}").step(0).run is None  # no steps: runs until killed
