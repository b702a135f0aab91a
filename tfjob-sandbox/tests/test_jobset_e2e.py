"""JobSets end to end: the JobSet controller, the Job controller and the kubelet together, with
scripted pods (no processes) in the shape the provider writes (Indexed Jobs, ExitCode
podFailurePolicy, worker 0 deciding through the Job's successPolicy, no JobSet failurePolicy).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from jobset_helpers import PREFIX, JobSetClient, namespace_client
from tfjob_sandbox import Sandbox
from tfjob_sandbox.testing import wait_for

SCRIPT = "tfjob-sandbox/script"
EXIT_CODE_RULES = [
    {
        "action": "FailJob",
        "onExitCodes": {"containerName": "tensorflow", "operator": "In", "values": list(range(1, 128))},
    },
    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
    {
        "action": "Ignore",
        "onExitCodes": {"containerName": "tensorflow", "operator": "In", "values": list(range(128, 256))},
    },
]


@pytest.fixture
def js(module_sandbox: Sandbox) -> Iterator[JobSetClient]:
    with namespace_client(module_sandbox) as js_client:
        yield js_client


def replica(
    kind: str,
    count: int,
    steps: list[dict[str, Any]],
    *,
    exit_code_policy: bool = False,
    worker0_decides: bool = False,
) -> dict[str, Any]:
    """A replicatedJob as the provider writes it, its pods playing ``steps``."""
    job_spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": count,
        "parallelism": count,
        "backoffLimit": 2147483647 if exit_code_policy else 0,
        "podReplacementPolicy": "Failed",
        "template": {
            "metadata": {"annotations": {SCRIPT: json.dumps({"steps": steps})}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.15.0"}],
            },
        },
    }
    if exit_code_policy:
        job_spec["podFailurePolicy"] = {"rules": EXIT_CODE_RULES}
    if worker0_decides:
        job_spec["successPolicy"] = {"rules": [{"succeededIndexes": "0"}]}
    return {"name": kind, "replicas": 1, "template": {"spec": job_spec}}


def jobset(name: str, replicas: list[dict[str, Any]], decider: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": {
            "replicatedJobs": replicas,
            "network": {"enableDNSHostnames": True, "subdomain": name, "publishNotReadyAddresses": True},
            "successPolicy": {"operator": "All", "targetReplicatedJobs": [decider]},
            **spec,
        },
    }


def pods(js: JobSetClient) -> dict[str, Any]:
    return {p.metadata.name: p for p in js.core.list_namespaced_pod(js.namespace).items}


def pod_of(js: JobSetClient, job: str, index: int) -> Any:
    """The newest live pod of ``job``'s completion ``index``."""

    def probe() -> Any:
        found = [
            p
            for p in pods(js).values()
            if p.metadata.labels.get("batch.kubernetes.io/job-name") == job
            and p.metadata.annotations.get("batch.kubernetes.io/job-completion-index") == str(index)
            and p.status.phase == "Running"
            and not p.metadata.deletion_timestamp
        ]
        return max(found, key=lambda p: p.metadata.creation_timestamp) if found else None

    return wait_for(probe, what=f"a running pod of {job} index {index}")


def test_worker_killed_by_a_signal_is_replaced_and_worker_0_completes_the_jobset(
    js: JobSetClient, module_sandbox: Sandbox
) -> None:
    """ExitCode: worker 0 SIGKILLed (137) gets a new pod with the same hostname; its exit 0 completes
    the worker Job (successPolicy index 0), hence the JobSet; the PS Job still running is deleted."""
    js.create(
        jobset(
            "mnist",
            [
                replica("ps", 1, [{"run": None}]),
                replica("worker", 2, [{"run": None}], exit_code_policy=True, worker0_decides=True),
            ],
            "worker",
        )
    )
    first = pod_of(js, "mnist-worker-0", 0)
    assert first.spec.hostname == "mnist-worker-0-0"
    assert first.spec.subdomain == "mnist"
    assert first.metadata.labels[PREFIX + "jobset-name"] == "mnist"
    assert first.metadata.annotations[PREFIX + "restart-attempt"] == "0"
    module_sandbox.kill_process(js.namespace, first.metadata.name)
    second = wait_for(
        lambda: (p := pod_of(js, "mnist-worker-0", 0)).metadata.uid != first.metadata.uid and p,
        what="the replacement pod",
    )
    assert second.spec.hostname == "mnist-worker-0-0"
    assert js.condition("Failed", "mnist") is None
    module_sandbox.call(module_sandbox.kubelet.end_scripted, js.namespace, second.metadata.name, exit_code=0)
    completed = js.wait_condition("Completed", "mnist")
    assert completed["reason"] == "AllJobsCompleted"
    wait_for(lambda: "mnist-ps-0" not in js.jobs(), what="the running PS Job deleted")
    wait_for(
        lambda: (
            not [p for p in pods(js).values() if p.metadata.labels.get(PREFIX + "replicatedjob-name") == "ps"]
        ),
        what="the PS pod deleted",
    )
    worker = js.jobs()["mnist-worker-0"]
    assert any(c["type"] == "Complete" and c["status"] == "True" for c in worker["status"]["conditions"])


def test_chief_program_error_fails_the_jobset(js: JobSetClient) -> None:
    """A chief exiting 1 under Never fails its Job (BackoffLimitExceeded), hence the JobSet
    (FailedJobs, no failurePolicy); the workers' Job, still running, is deleted with its pods."""
    js.create(
        jobset(
            "trainer",
            [
                replica("chief", 1, [{"run": 0.3, "exit": 1}]),
                replica("worker", 2, [{"run": None}], exit_code_policy=True),
            ],
            "chief",
        )
    )
    failed = js.wait_condition("Failed", "trainer")
    assert (failed["reason"], failed["message"]) == (
        "FailedJobs",
        "jobset failed due to one or more job failures (first failed job: trainer-chief-0)",
    )
    chief = js.jobs()["trainer-chief-0"]
    assert [(c["type"], c.get("reason")) for c in chief["status"]["conditions"] if c["type"] == "Failed"] == [
        ("Failed", "BackoffLimitExceeded")
    ]
    wait_for(lambda: set(js.jobs()) == {"trainer-chief-0"}, what="the worker Job deleted")
    wait_for(
        lambda: not [p for p in pods(js).values() if p.status.phase in ("Pending", "Running")],
        what="no pod left running",
    )


def test_failure_policy_restart_recreates_jobs_and_pods_then_reaches_max_restarts(js: JobSetClient) -> None:
    """failurePolicy maxRestarts 1: the first failure restarts the whole set (Jobs and pods of attempt 0
    deleted, attempt 1 created), the second fails it with ReachedMaxRestarts."""
    js.create(
        jobset(
            "again",
            [
                replica("worker", 1, [{"run": 0.3, "exit": 1}]),
                replica("ps", 1, [{"run": None}]),
            ],
            "worker",
            failurePolicy={"maxRestarts": 1},
        )
    )
    js.wait_status("restarts", 1, "again")
    failed = js.wait_condition("Failed", "again")
    assert failed["reason"] == "ReachedMaxRestarts"
    status = js.get("again")["status"]
    assert (status["restarts"], status["restartsCountTowardsMax"]) == (1, 1)
    assert {j["metadata"]["labels"][PREFIX + "restart-attempt"] for j in js.jobs().values()} == {"1"}
    assert {p.metadata.labels[PREFIX + "restart-attempt"] for p in pods(js).values()} == {"1"}
