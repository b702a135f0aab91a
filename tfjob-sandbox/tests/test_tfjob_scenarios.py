"""End-to-end TFJob scenarios: operator emulation + kubelet + store, real processes, v1.9.4 rules.

One scenario per family of operator rules (R1-R16): who decides success (chief, worker-0, AllWorkers),
which failures fail the job, ExitCode recreation vs permanent codes, the backoffLimit and
deadline failures, suspend/resume, cleanPodPolicy, TTL, TF_CONFIG, managedBy, admission, and the
operator being down.  Containers are tiny ``python -c`` programs, so each scenario takes about a
second.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.api.resource_types import PODS, SERVICES, TFJOBS
from tfjob_sandbox.store.patching import MERGE_PATCH
from workload_helpers import (
    Node,
    phase,
    py,
    replica,
    run,
    running_node,
    sleep_then_exit,
    tfjob,
    wait_for,
)

LONG = sleep_then_exit(60)


def _status(node: Node, job: str) -> dict[str, Any]:
    return node.job(job).get("status") or {}


def _has(node: Node, job: str, kind: str) -> bool:
    return (kind, "True") in node.conditions(job)


def _condition(node: Node, job: str, kind: str) -> dict[str, Any]:
    return next(c for c in _status(node, job)["conditions"] if c["type"] == kind)


def _parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _pod_names(node: Node) -> set[str]:
    return {p["metadata"]["name"] for p in node.store.list(PODS)["items"]}


def _finished(node: Node, job: str) -> bool:
    return _has(node, job, "Succeeded") or _has(node, job, "Failed")


def test_chief_success_leaves_ps_running(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path) as node:
            node.store.create(
                TFJOBS,
                tfjob(
                    "mnist",
                    {
                        "Chief": replica(sleep_then_exit(0.6)),
                        "PS": replica(LONG),
                        "Worker": replica(sleep_then_exit(0.2), replicas=2),
                    },
                ),
            )
            await wait_for(lambda: _finished(node, "mnist"))
            assert node.conditions("mnist") == [
                ("Created", "True"),
                ("Running", "False"),
                ("Succeeded", "True"),
            ]
            succeeded = _condition(node, "mnist", "Succeeded")
            assert (succeeded["reason"], succeeded["message"]) == (
                "TFJobSucceeded",
                "TFJob default/mnist successfully completed.",
            )
            status = _status(node, "mnist")
            assert status["replicaStatuses"] == {
                "Chief": {"succeeded": 1},
                "PS": {"succeeded": 1},
                "Worker": {"succeeded": 2},
            }
            assert status["startTime"] and status["completionTime"]
            assert phase(node.pod("mnist-ps-0")) == "Running"  # cleanPodPolicy None
            pod = node.pod("mnist-chief-0")
            assert pod["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master"
            owner = pod["metadata"]["ownerReferences"][0]
            assert (owner["kind"], owner["controller"], owner["blockOwnerDeletion"]) == ("TFJob", True, True)
            service = node.store.get(SERVICES, "mnist-worker-1")
            assert service["spec"]["clusterIP"] == "None"
            assert service["spec"]["ports"][0]["name"] == "tfjob-port"
            assert service["spec"]["ports"][0]["port"] == 2222
            reasons = [e["reason"] for e in node.events(name="mnist")]
            assert reasons.count("SuccessfulCreatePod") == 4 and "ExitedWithCode" in reasons

    run(scenario())


def test_worker0_success_decides_in_worker_mode(tmp_path: Path) -> None:
    program = py("import os, time; time.sleep(0.3 if os.environ['HOSTNAME'].endswith('-0') else 60)")

    async def scenario() -> None:
        async with running_node(tmp_path) as node:
            node.store.create(TFJOBS, tfjob("w0", {"Worker": replica(program, replicas=2)}))
            await wait_for(lambda: _finished(node, "w0"))
            assert _has(node, "w0", "Succeeded") and not _has(node, "w0", "Failed")
            assert phase(node.pod("w0-worker-1")) == "Running"
            assert node.pod("w0-worker-0")["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master"
            assert "training.kubeflow.org/job-role" not in node.pod("w0-worker-1")["metadata"]["labels"]
            assert _status(node, "w0")["replicaStatuses"] == {"Worker": {"succeeded": 2}}

    run(scenario())


def test_all_workers_policy_waits_for_every_worker(tmp_path: Path) -> None:
    program = py("import os, time; time.sleep(0.2 if os.environ['HOSTNAME'].endswith('-0') else 1.0)")

    async def scenario() -> None:
        async with running_node(tmp_path) as node:
            node.store.create(
                TFJOBS, tfjob("all", {"Worker": replica(program, replicas=2)}, successPolicy="AllWorkers")
            )
            await wait_for(lambda: phase(node.pod_or_none("all-worker-0")) == "Succeeded")
            await wait_for(
                lambda: _status(node, "all").get("replicaStatuses", {}).get("Worker", {}).get("succeeded")
            )
            assert not _finished(node, "all")
            await wait_for(lambda: _finished(node, "all"))
            assert _has(node, "all", "Succeeded")

    run(scenario())


@pytest.mark.parametrize("failing", ["PS", "Chief", "Evaluator"])
def test_replica_failure_fails_the_job(tmp_path: Path, failing: str) -> None:
    specs = {"Chief": replica(LONG), "PS": replica(LONG), "Evaluator": replica(LONG), "Worker": replica(LONG)}
    specs[failing] = replica(sleep_then_exit(0.3, 1))

    async def scenario() -> None:
        async with running_node(tmp_path) as node:
            node.store.create(TFJOBS, tfjob("broken", specs))
            await wait_for(lambda: _finished(node, "broken"))
            failed = _condition(node, "broken", "Failed")
            assert (failed["reason"], failed["message"]) == (
                "TFJobFailed",
                f"TFJob default/broken has failed because 1 {failing} replica(s) failed.",
            )
            assert not _has(node, "broken", "Succeeded")
            assert node.conditions("broken")[-1] == ("Failed", "True")

    run(scenario())


def test_exit_code_137_recreates_the_pod_then_succeeds(tmp_path: Path) -> None:
    marker = tmp_path / "crashed-once"
    program = py(
        "import os, signal, time\n"
        f"if not os.path.exists({str(marker)!r}):\n"
        f"    open({str(marker)!r}, 'w').close(); time.sleep(0.3); os.kill(os.getpid(), signal.SIGKILL)\n"
        "time.sleep(0.3)"
    )

    async def scenario() -> None:
        async with running_node(tmp_path) as node:
            node.store.create(TFJOBS, tfjob("retry", {"Worker": replica(program, restart_policy="ExitCode")}))
            seen: list[dict[str, Any]] = []

            def remember(event_type: str, rt: Any, new: dict[str, Any], old: Any) -> None:
                if rt == TFJOBS and new["metadata"]["name"] == "retry":
                    seen.extend((new.get("status") or {}).get("conditions") or [])

            node.store.add_listener(remember)
            first_uid = (await wait_for(lambda: node.pod_or_none("retry-worker-0")))["metadata"]["uid"]
            assert node.pod("retry-worker-0")["spec"]["restartPolicy"] == "Never"
            restarting = await wait_for(lambda: next((c for c in seen if c["type"] == "Restarting"), None))
            assert restarting["message"] == "job retry is restarting because Worker replica(s) failed."
            await wait_for(lambda: _finished(node, "retry"), timeout=15)
            assert _has(node, "retry", "Succeeded")
            assert node.pod("retry-worker-0")["metadata"]["uid"] != first_uid
            assert node.events(name="retry", reason="TFJobRestarting")[0]["type"] == "Warning"
            assert any(
                e["message"] == "Pod: default.retry-worker-0 exited with code 137"
                for e in node.events(name="retry", reason="ExitedWithCode")
            )

    run(scenario())


def test_exit_code_3_is_permanent(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path) as node:
            node.store.create(
                TFJOBS, tfjob("perm", {"Worker": replica(sleep_then_exit(0.2, 3), restart_policy="ExitCode")})
            )
            await wait_for(lambda: _finished(node, "perm"))
            failed = _condition(node, "perm", "Failed")
            assert failed["message"] == 'job "perm" is failing because "Worker" replica(s) failed.'
            assert phase(node.pod("perm-worker-0")) == "Failed"  # not deleted, not recreated

    run(scenario())


def test_on_failure_crash_loop_hits_backoff_limit(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path) as node:
            node.store.create(
                TFJOBS,
                tfjob(
                    "crashy",
                    {"Worker": replica(sleep_then_exit(0, 1), restart_policy="OnFailure")},
                    runPolicy={"backoffLimit": 2},
                ),
            )
            await wait_for(lambda: _finished(node, "crashy"), timeout=15)
            failed = _condition(node, "crashy", "Failed")
            assert (
                failed["message"]
                == "Job crashy has failed because it has reached the specified backoff limit"
            )
            # Crash loops are invisible before that: never a Restarting condition.
            assert "Restarting" not in [kind for kind, _ in node.conditions("crashy")]
            # v1.9.4 (#3420): cleanPodPolicy None keeps the pods after a backoff failure.
            assert "crashy-worker-0" in _pod_names(node)

    run(scenario())


def test_active_deadline_is_enforced_on_time(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path) as node:
            node.store.create(
                TFJOBS,
                tfjob(
                    "slow",
                    {"Worker": replica(LONG)},
                    runPolicy={"activeDeadlineSeconds": 1, "cleanPodPolicy": "All"},
                ),
            )
            # The deadline counts from status.startTime, set when the pods are created; on a busy
            # machine it can pass before the pod is Running, so the test waits only for the end.
            created = time.monotonic()
            await wait_for(lambda: "slow-worker-0" in _pod_names(node) or _finished(node, "slow"))
            await wait_for(lambda: _finished(node, "slow"), timeout=10)
            assert time.monotonic() - created < 8.0, "the deadline was not enforced promptly"
            status = _status(node, "slow")
            active = _parse_time(status["completionTime"]) - _parse_time(status["startTime"])
            assert active.total_seconds() >= 1, f"failed {active} after startTime, deadline 1s"
            failed = _condition(node, "slow", "Failed")
            assert (
                failed["message"]
                == "Job slow has failed because it was active longer than specified deadline"
            )
            await wait_for(lambda: "slow-worker-0" not in _pod_names(node))
            assert not node.store.list(SERVICES)["items"]

    run(scenario())


def test_suspend_and_resume(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path) as node:
            node.store.create(TFJOBS, tfjob("paused", {"Worker": replica(LONG)}, runPolicy={"suspend": True}))
            await wait_for(lambda: _has(node, "paused", "Suspended"))
            assert node.conditions("paused") == [("Created", "True"), ("Suspended", "True")]
            assert not _pod_names(node) and "startTime" not in _status(node, "paused")
            node.store.patch(
                TFJOBS, "paused", {"spec": {"runPolicy": {"suspend": False}}}, patch_type=MERGE_PATCH
            )
            await wait_for(lambda: _has(node, "paused", "Running"))
            resumed = _condition(node, "paused", "Suspended")
            assert (resumed["status"], resumed["reason"]) == ("False", "TFJobResumed")
            node.store.patch(
                TFJOBS, "paused", {"spec": {"runPolicy": {"suspend": True}}}, patch_type=MERGE_PATCH
            )
            await wait_for(lambda: _has(node, "paused", "Suspended"))
            running = _condition(node, "paused", "Running")
            assert (running["status"], running["reason"]) == ("False", "TFJobSuspended")
            await wait_for(lambda: not _pod_names(node))

    run(scenario())


@pytest.mark.parametrize(("policy", "kept"), [("Running", {"clean-chief-0"}), ("All", set())])
def test_clean_pod_policy_after_success(tmp_path: Path, policy: str, kept: set[str]) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path) as node:
            node.store.create(
                TFJOBS,
                tfjob(
                    "clean",
                    {"Chief": replica(sleep_then_exit(0.3)), "PS": replica(LONG)},
                    runPolicy={"cleanPodPolicy": policy},
                ),
            )
            await wait_for(lambda: _finished(node, "clean"))
            await wait_for(lambda: _pod_names(node) == kept)
            assert {s["metadata"]["name"] for s in node.store.list(SERVICES)["items"]} == kept

    run(scenario())


def test_ttl_deletes_the_finished_job(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path) as node:
            node.store.create(
                TFJOBS,
                tfjob(
                    "brief",
                    {"Worker": replica(sleep_then_exit(0.1))},
                    # completionTime has whole seconds, so the job may live only ttl - 1 s after
                    # it finished; 3 s leaves the poll below a window it cannot miss on a busy machine.
                    runPolicy={"ttlSecondsAfterFinished": 3},
                ),
            )
            await wait_for(lambda: _finished(node, "brief"))
            await wait_for(lambda: node.store.peek(TFJOBS, "brief") is None, timeout=8)
            await wait_for(lambda: not _pod_names(node))

    run(scenario())


def test_tf_config_is_the_operators_exact_string(tmp_path: Path) -> None:
    def tf_config(node: Node, pod: str) -> str | None:
        env = node.pod(pod)["spec"]["containers"][0].get("env") or []
        return next((e["value"] for e in env if e["name"] == "TF_CONFIG"), None)

    async def scenario() -> None:
        async with running_node(tmp_path) as node:
            node.store.create(
                TFJOBS,
                tfjob(
                    "dist",
                    {"PS": replica(LONG), "Worker": replica(LONG, replicas=2), "Evaluator": replica(LONG)},
                ),
            )
            node.store.create(TFJOBS, tfjob("solo", {"Worker": replica(LONG)}))
            await wait_for(lambda: {"dist-worker-1", "solo-worker-0"} <= _pod_names(node))
            assert tf_config(node, "dist-worker-1") == (
                '{"cluster":{"evaluator":["dist-evaluator-0.default.svc:2222"],'
                '"ps":["dist-ps-0.default.svc:2222"],'
                '"worker":["dist-worker-0.default.svc:2222","dist-worker-1.default.svc:2222"]},'
                '"task":{"type":"worker","index":1},"environment":"cloud"}'
            )
            assert tf_config(node, "solo-worker-0") is None
            ports = node.pod("solo-worker-0")["spec"]["containers"][0]["ports"]
            assert ports == [{"name": "tfjob-port", "containerPort": 2222, "protocol": "TCP"}]

    run(scenario())


def test_loopback_tf_config_gives_each_replica_a_local_port(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, loopback_tf_config=True) as node:
            node.store.create(TFJOBS, tfjob("local", {"Worker": replica(LONG, replicas=2)}))
            await wait_for(lambda: {"local-worker-0", "local-worker-1"} <= _pod_names(node))
            configs = []
            for index in range(2):
                container = node.pod(f"local-worker-{index}")["spec"]["containers"][0]
                config = json.loads(next(e["value"] for e in container["env"] if e["name"] == "TF_CONFIG"))
                configs.append(config)
                assert (
                    config["cluster"]["worker"][index]
                    == f"127.0.0.1:{container['ports'][0]['containerPort']}"
                )
            assert configs[0]["cluster"] == configs[1]["cluster"]
            hosts = configs[0]["cluster"]["worker"]
            assert len(set(hosts)) == 2 and all(h.startswith("127.0.0.1:") for h in hosts)

    run(scenario())


def test_jobs_managed_by_another_controller_are_ignored(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path) as node:
            node.store.create(
                TFJOBS,
                tfjob(
                    "elsewhere",
                    {"Worker": replica(LONG)},
                    runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"},
                ),
            )
            node.store.create(TFJOBS, tfjob("here", {"Worker": replica(sleep_then_exit(0.1))}))
            await wait_for(lambda: _finished(node, "here"))
            assert "status" not in node.job("elsewhere") or not node.job("elsewhere")["status"]
            assert not any(name.startswith("elsewhere") for name in _pod_names(node))

    run(scenario())


def test_admission_rejects_what_the_webhook_rejects(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path) as node:
            with pytest.raises(ApiError) as rejected:
                node.store.create(
                    TFJOBS,
                    tfjob(
                        "00test",
                        {
                            "Chief": replica(LONG),
                            "Master": replica(LONG),
                            "Worker": {"template": {"spec": {"containers": [{"name": "main", "image": ""}]}}},
                        },
                        runPolicy={"managedBy": "someone/else"},
                    ),
                )
            assert (rejected.value.code, rejected.value.reason) == (422, "Invalid")
            causes = {(c["field"], c["message"].split(":")[0]) for c in rejected.value.details["causes"]}
            assert causes == {
                ("metadata.name", "Invalid value"),
                ("spec.runPolicy.managedBy", "Unsupported value"),
                ("spec.tfReplicaSpecs[Worker].template.spec.containers[0].image", "Required value"),
                ("spec.tfReplicaSpecs[Worker].template.spec.containers", "Required value"),
                ("spec.tfReplicaSpecs", "Forbidden"),
            }
            node.store.create(TFJOBS, tfjob("fine", {"Worker": replica(LONG)}))
            with pytest.raises(ApiError) as immutable:
                node.store.patch(
                    TFJOBS,
                    "fine",
                    {"spec": {"runPolicy": {"managedBy": "kueue.x-k8s.io/multikueue"}}},
                    patch_type=MERGE_PATCH,
                )
            assert immutable.value.details["causes"] == [
                {
                    "type": "FieldValueInvalid",
                    "field": "spec.runPolicy.managedBy",
                    "message": 'Invalid value: "kueue.x-k8s.io/multikueue": field is immutable',
                }
            ]

    run(scenario())


def test_operator_down_means_no_status_until_it_returns(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path) as node:
            await node.operator.stop()
            assert not node.operator.running
            node.store.create(TFJOBS, tfjob("orphaned", {"Worker": replica(sleep_then_exit(0.1))}))
            for _ in range(10):
                await wait_for(lambda: True)
            assert not node.job("orphaned").get("status") and not _pod_names(node)
            node.operator.start()
            await wait_for(lambda: _finished(node, "orphaned"))
            assert node.conditions("orphaned")[0] == ("Created", "True")

    run(scenario())


def test_lost_node_fails_the_job_through_terminating_pods(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path) as node:
            node.store.create(TFJOBS, tfjob("lost", {"Worker": replica(LONG, restart_policy="OnFailure")}))
            await wait_for(lambda: _has(node, "lost", "Running"))
            node.kubelet.lose_node()
            await wait_for(lambda: _finished(node, "lost"))
            failed = _condition(node, "lost", "Failed")
            assert failed["message"] == "TFJob default/lost has failed because 1 Worker replica(s) failed."

    run(scenario())
