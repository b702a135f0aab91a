"""The operator's quirks, pinned on the pure reconcile pass where real processes cannot stage them.

Pod states are written by hand here (phase, container statuses, deletion marks) so each rule of
the operator rules (docs/concepts/rules.md) that needs an exact coincidence — two failures seen in one
pass, a restart
count at the limit, a pod being deleted while Running — can be checked directly.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from tfjob_sandbox.admission.tfjob_webhook import validate_tfjob
from tfjob_sandbox.training_operator.reconcile import (
    CreatePod,
    DeletePod,
    RecordEvent,
    WriteStatus,
    reconcile,
)
from tfjob_sandbox.training_operator.tf_config import tf_config

NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
UID = "job-uid"


def job(specs: dict[str, Any], *, status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    replica_specs = {
        name: {
            "replicas": count,
            "restartPolicy": policy,
            "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}},
        }
        for name, (count, policy) in specs.items()
    }
    return {
        "metadata": {"name": "j", "namespace": "ns", "uid": UID},
        "spec": {"tfReplicaSpecs": replica_specs, **spec},
        "status": status or {},
    }


def pod(
    kind: str,
    index: int,
    phase: str,
    *,
    exit_code: int | None = None,
    restarts: int = 0,
    deleting: bool = False,
) -> dict[str, Any]:
    state: dict[str, Any] = {"running": {}} if exit_code is None else {"terminated": {"exitCode": exit_code}}
    meta: dict[str, Any] = {
        "name": f"j-{kind}-{index}",
        "namespace": "ns",
        "labels": {
            "training.kubeflow.org/operator-name": "tfjob-controller",
            "training.kubeflow.org/job-name": "j",
            "training.kubeflow.org/replica-type": kind,
            "training.kubeflow.org/replica-index": str(index),
        },
        "ownerReferences": [{"kind": "TFJob", "name": "j", "uid": UID, "controller": True}],
    }
    if deleting:
        meta["deletionTimestamp"] = "2025-03-01T12:00:30Z"
    return {
        "metadata": meta,
        "status": {
            "phase": phase,
            "containerStatuses": [{"name": "tensorflow", "state": state, "restartCount": restarts}],
        },
    }


def status_of(outcome: Any) -> dict[str, Any]:
    writes = [a for a in outcome.actions if isinstance(a, WriteStatus)]
    assert writes, "expected a status write"
    return dict(writes[-1].status)


def condition_list(status: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["type"], c["status"]) for c in status.get("conditions", [])]


def running_status() -> dict[str, Any]:
    return {
        "conditions": [
            {
                "type": "Running",
                "status": "True",
                "reason": "TFJobRunning",
                "message": "m",
                "lastUpdateTime": "t",
                "lastTransitionTime": "t",
            }
        ],
        "startTime": "2025-03-01T11:59:00Z",
    }


def test_success_and_failure_in_one_pass_leave_both_conditions() -> None:
    tfjob = job({"Chief": (1, "Never"), "Worker": (1, "Never")}, status=running_status())
    pods = [pod("chief", 0, "Succeeded", exit_code=0), pod("worker", 0, "Failed", exit_code=1)]
    status = status_of(reconcile(tfjob, pods, [], now=NOW))
    assert condition_list(status) == [("Running", "False"), ("Succeeded", "True"), ("Failed", "True")]


def test_restarting_masks_a_never_replica_failure() -> None:
    tfjob = job({"PS": (1, "ExitCode"), "Worker": (1, "Never")}, status=running_status())
    pods = [pod("ps", 0, "Failed", exit_code=137), pod("worker", 0, "Failed", exit_code=1)]
    outcome = reconcile(tfjob, pods, [], now=NOW)
    assert condition_list(status_of(outcome)) == [("Restarting", "True")]
    assert DeletePod("j-ps-0") in outcome.actions and DeletePod("j-worker-0") not in outcome.actions


@pytest.mark.parametrize(
    ("limit", "restarts", "fails"), [(3, 2, False), (3, 3, True), (0, 1, True), (1, 1, True)]
)
def test_backoff_limit_counts_restarts_of_running_pods(limit: int, restarts: int, fails: bool) -> None:
    tfjob = job({"Worker": (2, "OnFailure")}, status=running_status(), runPolicy={"backoffLimit": limit})
    pods = [pod("worker", 0, "Running", restarts=restarts), pod("worker", 1, "Running")]
    failed = (
        [
            c
            for c in status_of(reconcile(tfjob, pods, [], now=NOW)).get("conditions", [])
            if c["type"] == "Failed"
        ]
        if fails
        else []
    )
    if fails:
        assert failed[0]["message"] == "Job j has failed because it has reached the specified backoff limit"
    else:
        assert not any(
            isinstance(a, WriteStatus) and any(c["type"] == "Failed" for c in a.status.get("conditions", []))
            for a in reconcile(tfjob, pods, [], now=NOW).actions
        )


def test_never_replicas_are_not_counted_for_backoff_limit() -> None:
    tfjob = job({"Worker": (1, "Never")}, status=running_status(), runPolicy={"backoffLimit": 1})
    status = status_of(reconcile(tfjob, [pod("worker", 0, "Running", restarts=5)], [], now=NOW))
    assert condition_list(status) == [("Running", "True")]


@pytest.mark.parametrize(("policy", "deletes"), [("None", False), ("All", True)])
def test_deadline_failure_honours_clean_pod_policy_as_in_v1_9_4(policy: str, deletes: bool) -> None:
    tfjob = job(
        {"Worker": (1, "Never")},
        status=running_status(),
        runPolicy={"activeDeadlineSeconds": 30, "cleanPodPolicy": policy},
    )
    outcome = reconcile(tfjob, [pod("worker", 0, "Running")], [], now=NOW)
    assert condition_list(status_of(outcome))[-1] == ("Failed", "True")
    assert (DeletePod("j-worker-0") in outcome.actions) is deletes


def test_deadline_requeue_is_the_time_left() -> None:
    tfjob = job({"Worker": (1, "Never")}, status=running_status(), runPolicy={"activeDeadlineSeconds": 100})
    outcome = reconcile(tfjob, [pod("worker", 0, "Running")], [], now=NOW)
    assert outcome.requeue_after == pytest.approx(40.0)


def test_running_pod_being_deleted_counts_as_failed() -> None:
    tfjob = job({"Worker": (1, "OnFailure")}, status=running_status())
    status = status_of(reconcile(tfjob, [pod("worker", 0, "Running", deleting=True)], [], now=NOW))
    assert status["replicaStatuses"] == {"Worker": {"failed": 1}}
    assert condition_list(status)[-1] == ("Failed", "True")


def test_zero_chief_replicas_succeed_at_once_and_still_create_slot_zero() -> None:
    outcome = reconcile(job({"Chief": (0, "Never")}), [], [], now=NOW, add_created=True)
    assert [a.manifest["metadata"]["name"] for a in outcome.actions if isinstance(a, CreatePod)] == [
        "j-chief-0"
    ]
    assert condition_list(status_of(outcome)) == [("Created", "True"), ("Succeeded", "True")]


def test_pending_pods_are_invisible_and_the_job_stays_created() -> None:
    pending = pod("worker", 0, "Pending")
    pending["status"]["containerStatuses"][0]["state"] = {
        "waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "x"'}
    }
    outcome = reconcile(job({"Worker": (1, "Never")}), [pending], [], now=NOW, add_created=True)
    status = status_of(outcome)
    assert condition_list(status) == [("Created", "True")]
    assert status["replicaStatuses"] == {"Worker": {}}
    warnings = [a for a in outcome.actions if isinstance(a, RecordEvent) and a.type == "Warning"]
    assert warnings == [
        RecordEvent(
            "Warning",
            "ImagePullBackOff",
            'Error pod j-worker-0 container tensorflow waiting message: Back-off pulling image "x"',
        )
    ]


def test_lower_case_replica_keys_are_recased_for_status() -> None:
    tfjob = job({"worker": (1, "Never")})
    status = status_of(reconcile(tfjob, [pod("worker", 0, "Running")], [], now=NOW))
    assert status["replicaStatuses"] == {"Worker": {"active": 1}}
    assert condition_list(status) == [("Running", "True")]


def test_template_restart_policy_is_overridden_with_a_warning() -> None:
    tfjob = job({"Worker": (1, "ExitCode")})
    tfjob["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["restartPolicy"] = "Always"
    outcome = reconcile(tfjob, [], [], now=NOW)
    created = next(a for a in outcome.actions if isinstance(a, CreatePod))
    assert created.manifest["spec"]["restartPolicy"] == "Never"
    assert any(
        isinstance(a, RecordEvent) and a.reason == "SetPodTemplateRestartPolicy" for a in outcome.actions
    )


def test_sparse_tf_config_for_dynamic_workers() -> None:
    specs = {"Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "tensorflow"}]}}}}
    assert tf_config(
        job_name="d", namespace="ns", replica_specs=specs, replica_type="Worker", index=1, dynamic_worker=True
    ) == (
        '{"cluster":{"worker":{"1":"d-worker-1.ns.svc:2222"},"ps":null},"task":{"type":"worker","index":1}}'
    )


def test_sparse_tf_config_for_a_slot_beyond_zero_replicas_has_no_own_address() -> None:
    # R15 creates slot 0 even for ``replicas: 0``; that pod has no address in the cluster spec.
    specs = {"Worker": {"replicas": 0}, "PS": {"replicas": 0}}
    for replica_type in ("Worker", "PS"):
        config = tf_config(
            job_name="j",
            namespace="ns",
            replica_specs=specs,
            replica_type=replica_type,
            index=0,
            dynamic_worker=True,
        )
        assert '"worker":{}' in config
        assert '"ps":[]' in config


def test_custom_port_and_cluster_domain_in_tf_config() -> None:
    container = {"name": "tensorflow", "ports": [{"name": "tfjob-port", "containerPort": 3333}]}
    specs = {
        "PS": {"replicas": 1, "template": {"spec": {"containers": [container]}}},
        "Worker": {"replicas": 1, "template": {"spec": {"containers": [{"name": "tensorflow"}]}}},
    }
    assert tf_config(
        job_name="d",
        namespace="ns",
        replica_specs=specs,
        replica_type="PS",
        index=0,
        cluster_domain="cluster.local",
    ) == (
        '{"cluster":{"ps":["d-ps-0.ns.svc.cluster.local:3333"],"worker":["d-worker-0.ns.svc.cluster.local:2222"]},'
        '"task":{"type":"ps","index":0},"environment":"cloud"}'
    )


def test_webhook_reports_missing_specs_and_empty_containers() -> None:
    assert validate_tfjob("CREATE", {"metadata": {"name": "ok"}, "spec": {}}, None) == [
        {
            "type": "FieldValueRequired",
            "message": "Required value: must be required",
            "field": "spec.tfReplicaSpecs",
        }
    ]
    empty = {"metadata": {"name": "ok"}, "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": {}}}}}}
    path = "spec.tfReplicaSpecs[Worker].template.spec.containers"
    assert validate_tfjob("CREATE", empty, None) == [
        {"type": "FieldValueRequired", "message": "Required value: must be specified", "field": path},
        {
            "type": "FieldValueRequired",
            "message": "Required value: must have at least one container with name tensorflow",
            "field": path,
        },
    ]
    too_long = {"metadata": {"name": "a" * 64}, "spec": {"tfReplicaSpecs": {}}}
    assert validate_tfjob("CREATE", too_long, None)[0]["message"] == (
        f'Invalid value: "{"a" * 64}": should match: must be no more than 63 characters'
    )


def test_finished_job_ttl_requeue_and_expiry() -> None:
    finished = {
        "conditions": [{"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded"}],
        "completionTime": "2025-03-01T11:59:50Z",
    }
    tfjob = job({"Worker": (1, "Never")}, status=finished, runPolicy={"ttlSecondsAfterFinished": 30})
    assert reconcile(tfjob, [], [], now=NOW).requeue_after == pytest.approx(20.001)
    later = reconcile(tfjob, [], [], now=NOW + timedelta(seconds=21))
    assert [type(a).__name__ for a in later.actions] == ["DeleteJob"]
