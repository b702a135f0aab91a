"""The Job controller end to end through the official client: pods, env, policies, faults, deletion.

Each test runs on the module sandbox in a namespace of its own, with ``python -c`` or scripted
containers so that a scenario takes about a second (pod-failure back-off: the sandbox's 0.2 s).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client
from tfjob_sandbox import Sandbox
from tfjob_sandbox.admin_client import SandboxAdminClient
from tfjob_sandbox.kubelet.scripted_pods import SCRIPT_ANNOTATION
from tfjob_sandbox.testing import job_manifest, wait_for

PY = [sys.executable, "-I", "-S", "-c"]
INDEX_LABEL = "batch.kubernetes.io/job-completion-index"


@pytest.fixture
def batch_v1(module_api_client: Any) -> client.BatchV1Api:
    return client.BatchV1Api(module_api_client)


@pytest.fixture
def admin(module_sandbox: Sandbox) -> SandboxAdminClient:
    return SandboxAdminClient.from_kubeconfig(module_sandbox.kubeconfig_path)


def _conditions(batch_v1: client.BatchV1Api, name: str, namespace: str) -> list[tuple[str, str, str]]:
    status = batch_v1.read_namespaced_job_status(name, namespace).status
    return [(c.type, c.reason or "", c.message or "") for c in status.conditions or []]


def _until_condition(batch_v1: client.BatchV1Api, name: str, namespace: str, kind: str) -> client.V1JobStatus:
    def reached() -> client.V1JobStatus | None:
        status = batch_v1.read_namespaced_job_status(name, namespace).status
        return status if any(c.type == kind and c.status == "True" for c in status.conditions or []) else None

    return wait_for(reached, what=f"Job {name} to get {kind}", timeout=30)


def _pods(core_v1: client.CoreV1Api, namespace: str, name: str) -> list[client.V1Pod]:
    return list(
        core_v1.list_namespaced_pod(namespace, label_selector=f"batch.kubernetes.io/job-name={name}").items
    )


def _scripted(name: str, script: dict[str, Any], **spec: Any) -> dict[str, Any]:
    manifest = job_manifest(name, command=["never-run"], **spec)
    manifest["spec"]["template"]["metadata"] = {"annotations": {SCRIPT_ANNOTATION: json.dumps(script)}}
    return manifest


def _running_pod_of_index(
    core_v1: client.CoreV1Api, namespace: str, name: str, index: str
) -> Callable[[], str | None]:
    def find() -> str | None:
        for pod in _pods(core_v1, namespace, name):
            labels = pod.metadata.labels or {}
            if (
                labels.get(INDEX_LABEL) == index
                and pod.status.phase == "Running"
                and not pod.metadata.deletion_timestamp
            ):
                return str(pod.metadata.name)
        return None

    return find


def test_indexed_job_pods_carry_index_hostname_labels_and_env(
    batch_v1: client.BatchV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    code = "import os; print('index', os.environ['JOB_COMPLETION_INDEX'], os.environ['TASK'])"
    manifest = job_manifest(
        "mnist-worker-0", command=[*PY, code], completionMode="Indexed", completions=3, parallelism=3
    )
    container = manifest["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [
        {"name": "TASK", "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{INDEX_LABEL}']"}}}
    ]
    manifest["spec"]["template"]["spec"]["subdomain"] = "mnist"
    job = batch_v1.create_namespaced_job(namespace, manifest)
    status = _until_condition(batch_v1, "mnist-worker-0", namespace, "Complete")
    assert (status.succeeded, status.failed, status.completed_indexes, status.active) == (3, 0, "0-2", 0)
    assert [c.type for c in status.conditions] == ["SuccessCriteriaMet", "Complete"]
    assert status.conditions[-1].reason == "CompletionsReached" and status.completion_time is not None
    pods = sorted(_pods(core_v1, namespace, "mnist-worker-0"), key=lambda p: p.metadata.labels[INDEX_LABEL])
    assert len(pods) == 3
    for index, pod in enumerate(pods):
        meta = pod.metadata
        assert re.fullmatch(rf"mnist-worker-0-{index}-[a-z0-9]{{5}}", meta.name)
        assert meta.annotations[INDEX_LABEL] == str(index)
        assert (
            meta.labels["job-name"] == "mnist-worker-0" and meta.labels["controller-uid"] == job.metadata.uid
        )
        assert meta.labels["batch.kubernetes.io/controller-uid"] == job.metadata.uid
        assert (pod.spec.hostname, pod.spec.subdomain) == (f"mnist-worker-0-{index}", "mnist")
        owner = meta.owner_references[0]
        assert (owner.kind, owner.name, owner.controller, owner.block_owner_deletion) == (
            "Job",
            "mnist-worker-0",
            True,
            True,
        )
        assert not meta.finalizers  # counted, so released
        log = core_v1.read_namespaced_pod_log(meta.name, namespace, _preload_content=False).data.decode()
        assert log.strip() == f"index {index} {index}"
    reasons = [
        e.reason for e in core_v1.list_namespaced_event(namespace).items if e.involved_object.kind == "Job"
    ]
    assert reasons.count("SuccessfulCreate") == 3 and "Completed" in reasons


def test_backoff_limit_exceeded_fails_the_job(batch_v1: client.BatchV1Api, namespace: str) -> None:
    batch_v1.create_namespaced_job(
        namespace, job_manifest("flaky", command=[*PY, "raise SystemExit(1)"], backoffLimit=1)
    )
    status = _until_condition(batch_v1, "flaky", namespace, "Failed")
    assert status.failed == 2
    assert _conditions(batch_v1, "flaky", namespace) == [
        ("FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
        ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
    ]


def test_fail_job_rule_fails_the_job_and_deletes_the_other_pods(
    batch_v1: client.BatchV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    code = (
        "import os, sys, time; time.sleep(30) if os.environ['JOB_COMPLETION_INDEX'] == '1' else sys.exit(42)"
    )
    policy = {
        "rules": [
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}}
        ]
    }
    manifest = job_manifest(
        "pfp",
        command=[*PY, code],
        completionMode="Indexed",
        completions=2,
        parallelism=2,
        podFailurePolicy=policy,
    )
    batch_v1.create_namespaced_job(namespace, manifest)
    _until_condition(batch_v1, "pfp", namespace, "Failed")
    (target_type, reason, message), final = _conditions(batch_v1, "pfp", namespace)
    assert (target_type, reason, final[:2]) == (
        "FailureTarget",
        "PodFailurePolicy",
        ("Failed", "PodFailurePolicy"),
    )
    assert re.fullmatch(
        rf"Container main for pod {namespace}/pfp-0-[a-z0-9]{{5}} failed with exit code 42 "
        "matching FailJob rule at index 0",
        message,
    )
    assert wait_for(
        lambda: (
            not _pods(core_v1, namespace, "pfp")
            or all(p.status.phase == "Failed" for p in _pods(core_v1, namespace, "pfp"))
        )
    )


def test_scripted_index_exits_137_then_0_under_an_ignore_rule(
    batch_v1: client.BatchV1Api, core_v1: client.CoreV1Api, namespace: str, admin: SandboxAdminClient
) -> None:
    policy = {"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [137]}}]}
    manifest = _scripted(
        "hollow",
        {"steps": [{"run": None, "exit": 0}]},
        completionMode="Indexed",
        completions=1,
        backoffLimit=0,
        podFailurePolicy=policy,
    )
    batch_v1.create_namespaced_job(namespace, manifest)
    first = wait_for(_running_pod_of_index(core_v1, namespace, "hollow", "0"), what="index 0 running")
    assert admin.end_scripted([(namespace, first)], exit_code=137) == 1
    second = wait_for(
        lambda: (name := _running_pod_of_index(core_v1, namespace, "hollow", "0")()) != first and name,
        what="index 0 replaced",
    )
    assert admin.end_scripted([(namespace, second)], exit_code=0) == 1
    status = _until_condition(batch_v1, "hollow", namespace, "Complete")
    assert (status.succeeded, status.failed, status.completed_indexes) == (1, 0, "0")


def test_a_killed_job_pod_counts_against_the_backoff_limit_and_is_replaced(
    batch_v1: client.BatchV1Api, core_v1: client.CoreV1Api, namespace: str, admin: SandboxAdminClient
) -> None:
    code = "import os, sys, time; time.sleep(0.5 if os.environ.get('DONE') else 30)"
    manifest = job_manifest(
        "killed", command=[*PY, code], completionMode="Indexed", completions=1, backoffLimit=1
    )
    batch_v1.create_namespaced_job(namespace, manifest)
    first = wait_for(_running_pod_of_index(core_v1, namespace, "killed", "0"), what="index 0 running")
    admin.kill_process(namespace, first, container="main")
    replacement = wait_for(
        lambda: (name := _running_pod_of_index(core_v1, namespace, "killed", "0")()) != first and name,
        what="index 0 replaced",
    )
    killed = core_v1.read_namespaced_pod(first, namespace)
    assert killed.status.container_statuses[0].state.terminated.exit_code == 137
    assert batch_v1.read_namespaced_job_status("killed", namespace).status.failed == 1
    admin.kill_process(namespace, replacement, container="main")
    _until_condition(batch_v1, "killed", namespace, "Failed")


def test_eviction_matches_a_disruption_target_rule(
    batch_v1: client.BatchV1Api, core_v1: client.CoreV1Api, namespace: str, admin: SandboxAdminClient
) -> None:
    policy = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    manifest = _scripted(
        "evicted", {"steps": [{"run": None, "exit": 0}]}, backoffLimit=0, podFailurePolicy=policy
    )
    batch_v1.create_namespaced_job(namespace, manifest)
    first = wait_for(
        lambda: next(
            (p.metadata.name for p in _pods(core_v1, namespace, "evicted") if p.status.phase == "Running"),
            None,
        )
    )
    admin.evict(namespace, first)
    second = wait_for(
        lambda: next(
            (
                p.metadata.name
                for p in _pods(core_v1, namespace, "evicted")
                if p.status.phase == "Running" and p.metadata.name != first
            ),
            None,
        ),
        what="a replacement after the eviction",
    )
    admin.end_scripted([(namespace, second)])
    status = _until_condition(batch_v1, "evicted", namespace, "Complete")
    assert (status.succeeded, status.failed) == (1, 0)


def test_success_policy_completes_and_terminates_the_rest(
    batch_v1: client.BatchV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    code = "import os, time; time.sleep(0 if os.environ['JOB_COMPLETION_INDEX'] == '0' else 30)"
    manifest = job_manifest(
        "leader",
        command=[*PY, code],
        completionMode="Indexed",
        completions=3,
        parallelism=3,
        successPolicy={"rules": [{"succeededIndexes": "0"}]},
    )
    batch_v1.create_namespaced_job(namespace, manifest)
    status = _until_condition(batch_v1, "leader", namespace, "Complete")
    assert [(c.type, c.reason, c.message) for c in status.conditions] == [
        ("SuccessCriteriaMet", "SuccessPolicy", "Matched rules at index 0"),
        ("Complete", "SuccessPolicy", "Matched rules at index 0"),
    ]
    assert (status.completed_indexes, status.succeeded, status.active, status.terminating) == ("0", 1, 0, 0)
    assert wait_for(lambda: all(p.status.phase != "Running" for p in _pods(core_v1, namespace, "leader")))


def test_suspend_deletes_active_pods_and_resume_recreates_them(
    batch_v1: client.BatchV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    manifest = job_manifest(
        "pausing",
        command=[*PY, "import time; time.sleep(30)"],
        completionMode="Indexed",
        completions=2,
        parallelism=2,
    )
    batch_v1.create_namespaced_job(namespace, manifest)
    wait_for(lambda: batch_v1.read_namespaced_job_status("pausing", namespace).status.active == 2)
    batch_v1.patch_namespaced_job("pausing", namespace, {"spec": {"suspend": True}})
    status = _until_condition(batch_v1, "pausing", namespace, "Suspended")
    assert status.active == 0
    assert wait_for(lambda: not _pods(core_v1, namespace, "pausing"), what="pods of the suspended Job gone")
    batch_v1.patch_namespaced_job("pausing", namespace, {"spec": {"suspend": False}})
    wait_for(lambda: batch_v1.read_namespaced_job_status("pausing", namespace).status.active == 2)
    assert _conditions(batch_v1, "pausing", namespace) == [("Suspended", "JobResumed", "Job resumed")]


def test_active_deadline_and_ttl(batch_v1: client.BatchV1Api, namespace: str) -> None:
    manifest = job_manifest(
        "slow",
        command=[*PY, "import time; time.sleep(30)"],
        activeDeadlineSeconds=1,
        ttlSecondsAfterFinished=1,
    )
    batch_v1.create_namespaced_job(namespace, manifest)
    _until_condition(batch_v1, "slow", namespace, "Failed")
    assert _conditions(batch_v1, "slow", namespace)[-1] == (
        "Failed",
        "DeadlineExceeded",
        "Job was active longer than specified deadline",
    )

    def gone() -> bool:
        return not [j for j in batch_v1.list_namespaced_job(namespace).items if j.metadata.name == "slow"]

    assert wait_for(gone, what="the TTL controller to delete the Job", timeout=15)


def test_deleting_a_running_job_collects_pods_despite_tracking_finalizers(
    batch_v1: client.BatchV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    manifest = job_manifest(
        "doomed",
        command=[*PY, "import time; time.sleep(30)"],
        completionMode="Indexed",
        completions=2,
        parallelism=2,
    )
    batch_v1.create_namespaced_job(namespace, manifest)
    wait_for(lambda: batch_v1.read_namespaced_job_status("doomed", namespace).status.active == 2)
    assert all(
        "batch.kubernetes.io/job-tracking" in p.metadata.finalizers
        for p in _pods(core_v1, namespace, "doomed")
    )
    batch_v1.delete_namespaced_job("doomed", namespace, propagation_policy="Background")
    assert wait_for(
        lambda: not core_v1.list_namespaced_pod(namespace).items, what="the pods to be collected", timeout=20
    )


def test_backoff_limit_per_index_fails_one_index_and_lets_the_others_finish(
    batch_v1: client.BatchV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    code = "import os, sys; sys.exit(1 if os.environ['JOB_COMPLETION_INDEX'] == '0' else 0)"
    manifest = job_manifest(
        "perindex",
        command=[*PY, code],
        completionMode="Indexed",
        completions=2,
        parallelism=2,
        backoffLimitPerIndex=1,
    )
    batch_v1.create_namespaced_job(namespace, manifest)
    status = _until_condition(batch_v1, "perindex", namespace, "Failed")
    assert (status.failed_indexes, status.completed_indexes, status.failed, status.succeeded) == (
        "0",
        "1",
        2,
        1,
    )
    assert status.conditions[-1].reason == "FailedIndexes"
    counts = sorted(
        (p.metadata.annotations or {}).get("batch.kubernetes.io/job-index-failure-count", "")
        for p in _pods(core_v1, namespace, "perindex")
        if p.metadata.labels[INDEX_LABEL] == "0"
    )
    assert counts == ["0", "1"]
