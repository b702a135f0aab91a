"""Folding TFJob and pod events into snapshots."""

from __future__ import annotations

import json
from typing import Any

from tfjob_provider.kube.tracking import JobSnapshot, JobTracker, slim_pod

NS = "ns"
KEY = (NS, "mnist")


def tfjob(name: str = "mnist", uid: str = "job-1", **status: Any) -> dict[str, Any]:
    return {
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": NS, "uid": uid, "managedFields": [{"big": "x" * 100}]},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2}}},
        "status": status,
    }


def pod(
    name: str, *, job: str = "mnist", uid: str = "pod-1", owner: str | None = "job-1", phase: str = "Running"
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": NS,
        "uid": uid,
        "labels": {"training.kubeflow.org/job-name": job, "training.kubeflow.org/replica-type": "worker"},
        "managedFields": [{"noise": True}],
        "annotations": {"big": "y" * 1000},
    }
    if owner:
        metadata["ownerReferences"] = [
            {"kind": "TFJob", "name": job, "uid": owner, "controller": True, "apiVersion": "x"}
        ]
    return {
        "metadata": metadata,
        "spec": {"containers": [{"name": "tensorflow", "image": "i", "env": [1] * 50}]},
        "status": {"phase": phase},
    }


def names(snapshot: JobSnapshot) -> list[str]:
    return [p["metadata"]["name"] for p in snapshot.pods]


def test_unknown_job_is_neither_present_nor_deleted() -> None:
    assert JobTracker(namespace=NS).snapshot(KEY) == JobSnapshot(tfjob=None, pods=(), deleted=False)


def test_events_build_the_snapshot_and_managed_fields_are_dropped() -> None:
    tracker = JobTracker(namespace=NS, only=[KEY])
    assert tracker.apply_tfjob_event("ADDED", tfjob()) == {KEY}
    tracker.apply_pod_event("ADDED", pod("mnist-worker-1", uid="b"))
    tracker.apply_pod_event("ADDED", pod("mnist-worker-0", uid="a"))
    snapshot = tracker.snapshot(KEY)
    assert snapshot.tfjob is not None and snapshot.tfjob["metadata"]["uid"] == "job-1"
    assert not snapshot.deleted
    assert names(snapshot) == ["mnist-worker-0", "mnist-worker-1"]
    assert snapshot.tfjob is not None and "managedFields" not in snapshot.tfjob["metadata"]
    assert all("managedFields" not in p["metadata"] for p in snapshot.pods)


def test_other_jobs_are_ignored_when_tracking_one() -> None:
    tracker = JobTracker(namespace=NS, only=[KEY])
    assert tracker.apply_tfjob_event("ADDED", tfjob(name="other")) == set()
    assert tracker.apply_pod_event("ADDED", pod("other-worker-0", job="other")) == set()
    other = tracker.snapshot((NS, "other"))
    assert other.tfjob is None and other.pods == () and not other.deleted


def test_pod_recreated_with_the_same_name_replaces_the_old_one() -> None:
    tracker = JobTracker(namespace=NS)
    tracker.apply_tfjob_event("ADDED", tfjob())
    tracker.apply_pod_event("ADDED", pod("mnist-worker-0", uid="old", phase="Failed"))
    tracker.apply_pod_event("ADDED", pod("mnist-worker-0", uid="new", phase="Pending"))
    # The old incarnation's DELETED arrives late: it must not remove the new pod.
    tracker.apply_pod_event("DELETED", pod("mnist-worker-0", uid="old", phase="Failed"))
    (only,) = tracker.snapshot(KEY).pods
    assert only["metadata"]["uid"] == "new" and only["status"]["phase"] == "Pending"


def test_deleted_then_added_pod() -> None:
    tracker = JobTracker(namespace=NS)
    tracker.apply_pod_event("ADDED", pod("mnist-worker-0", uid="a"))
    tracker.apply_pod_event("DELETED", pod("mnist-worker-0", uid="a"))
    assert tracker.snapshot(KEY).pods == ()
    tracker.apply_pod_event("ADDED", pod("mnist-worker-0", uid="b"))
    assert [p["metadata"]["uid"] for p in tracker.snapshot(KEY).pods] == ["b"]


def test_relist_replaces_and_drops_vanished_pods() -> None:
    tracker = JobTracker(namespace=NS)
    tracker.apply_pod_event("ADDED", pod("mnist-worker-0", uid="a"))
    tracker.apply_pod_event("ADDED", pod("mnist-worker-1", uid="b"))
    changed = tracker.relist_pods([pod("mnist-worker-1", uid="b", phase="Succeeded")])
    assert changed == {KEY}
    snapshot = tracker.snapshot(KEY)
    assert names(snapshot) == ["mnist-worker-1"] and snapshot.pods[0]["status"]["phase"] == "Succeeded"


def test_a_shrunk_relist_keeps_the_items_as_given_and_an_unshrunk_one_cuts_them() -> None:
    """The shared watch shrinks listed items page by page (``call_list(shrink=...)``) and relists
    with ``shrunk=True``: the tracker must not cut them a second time, nor skip cutting otherwise."""
    whole = pod("mnist-worker-0", uid="a")
    tracker = JobTracker(namespace=NS, slim=True)
    shrunk = tracker.shrink_pod(whole)
    assert "managedFields" not in shrunk["metadata"]
    tracker.relist_pods([shrunk], shrunk=True)
    assert tracker.snapshot(KEY).pods[0] is shrunk
    tracker.relist_pods([whole])
    kept = tracker.snapshot(KEY).pods[0]
    assert kept is not whole and kept == shrunk


def test_tfjob_deleted_by_event() -> None:
    tracker = JobTracker(namespace=NS)
    tracker.apply_tfjob_event("ADDED", tfjob())
    tracker.apply_tfjob_event("DELETED", tfjob())
    assert tracker.snapshot(KEY) == JobSnapshot(tfjob=None, pods=(), deleted=True)


def test_tfjob_missing_from_a_relist_counts_as_deleted_and_a_new_one_revives_it() -> None:
    tracker = JobTracker(namespace=NS)
    tracker.relist_tfjobs([tfjob()])
    tracker.relist_tfjobs([])
    assert tracker.snapshot(KEY).deleted
    tracker.apply_tfjob_event("ADDED", tfjob(uid="job-2"))
    snapshot = tracker.snapshot(KEY)
    assert not snapshot.deleted and snapshot.tfjob is not None
    assert snapshot.tfjob["metadata"]["uid"] == "job-2"


def test_pods_of_an_earlier_job_with_the_same_name_are_excluded() -> None:
    tracker = JobTracker(namespace=NS)
    tracker.apply_tfjob_event("ADDED", tfjob(uid="job-2"))
    tracker.apply_pod_event("ADDED", pod("mnist-worker-0", uid="a", owner="job-1"))
    tracker.apply_pod_event("ADDED", pod("mnist-worker-1", uid="b", owner="job-2"))
    assert names(tracker.snapshot(KEY)) == ["mnist-worker-1"]


def test_many_jobs_are_keyed_by_namespace_and_name() -> None:
    tracker = JobTracker(namespace=NS)
    assert tracker.apply_pod_event("ADDED", pod("a-worker-0", job="a", owner=None)) == {(NS, "a")}
    assert tracker.apply_pod_event("ADDED", pod("b-worker-0", job="b", owner=None)) == {(NS, "b")}
    assert names(tracker.snapshot((NS, "a"))) == ["a-worker-0"]
    assert names(tracker.snapshot((NS, "b"))) == ["b-worker-0"]


def test_slim_pods_keep_status_and_identity_but_not_bulk() -> None:
    full = pod("mnist-worker-0")
    full["status"]["conditions"] = [
        {"type": kind, "status": "True", "lastTransitionTime": "2025-03-01T11:00:00Z"}
        for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
    ]
    slim = slim_pod(full)
    # Only the conditions the verdict reads are kept.
    assert slim["status"] == {**full["status"], "conditions": [full["status"]["conditions"][-1]]}
    assert slim["metadata"]["labels"] == full["metadata"]["labels"]
    assert slim["metadata"]["ownerReferences"] == [
        {"kind": "TFJob", "name": "mnist", "uid": "job-1", "controller": True}
    ]
    assert "annotations" not in slim["metadata"] and slim["spec"]["containers"] == [{"name": "tensorflow"}]
    assert len(repr(slim)) < len(repr(full)) / 2


def test_forget_drops_a_job() -> None:
    tracker = JobTracker(namespace=NS, slim=True)
    tracker.apply_tfjob_event("ADDED", tfjob())
    tracker.apply_tfjob_event("DELETED", tfjob())
    assert tracker.snapshot(KEY).deleted
    tracker.forget(KEY)
    forgotten = tracker.snapshot(KEY)
    assert forgotten.tfjob is None and forgotten.pods == () and not forgotten.deleted


def test_slimming_never_changes_the_verdict() -> None:
    # The shared watch keeps only slim copies; the verdict engine must reach the same conclusion
    # on them as on the full objects, whatever the pods show.
    from tests.unit.factories import make_pod, make_tfjob
    from tfjob_provider.kube.tracking import slim_tfjob
    from tfjob_provider.policy import decide

    cases = [
        (
            make_tfjob({"Chief": 1, "Worker": 2, "PS": 1}),
            [make_pod("Chief", 0, phase="Succeeded", exit_code=0)],
        ),
        (
            make_tfjob({"Worker": 2}, restart_policy="ExitCode"),
            [
                make_pod("Worker", 0),
                make_pod("Worker", 1, phase="Failed", exit_code=137, restart_policy="Never"),
            ],
        ),
        (
            make_tfjob({"Chief": 1, "Worker": 1}, restart_policy="OnFailure", run_policy={"backoffLimit": 2}),
            [make_pod("Chief", 0, restarts=2, last_exit_code=1, restart_policy="OnFailure")],
        ),
        (make_tfjob({"Chief": 1}), [make_pod("Chief", 0, phase="Pending", waiting="ImagePullBackOff")]),
        (make_tfjob({"Chief": 1, "PS": 1}), [make_pod("PS", 0, phase="Failed", pod_reason="Evicted")]),
    ]
    for tfjob, pods in cases:
        full = decide(tfjob, pods)
        slim = decide(slim_tfjob(tfjob), [slim_pod(pod) for pod in pods])
        assert slim == full, (full, slim)


def test_slim_tfjob_drops_pod_templates_but_keeps_what_the_verdict_reads() -> None:
    from tests.unit.factories import make_tfjob
    from tfjob_provider.kube.tracking import slim_tfjob

    tfjob = make_tfjob({"Chief": 1, "Worker": 3}, restart_policy="ExitCode", run_policy={"backoffLimit": 1})
    slim = slim_tfjob(tfjob)
    worker = slim["spec"]["tfReplicaSpecs"]["Worker"]
    assert (worker["replicas"], worker["restartPolicy"]) == (3, "ExitCode")
    assert worker["template"] == {"spec": {"containers": [{"name": "tensorflow"}]}}
    assert slim["spec"]["runPolicy"] == tfjob["spec"]["runPolicy"]
    assert slim["status"] == tfjob["status"]


def replica_pod(
    replica_type: str, index: int, *, uid: str, owner: str = "job-1", phase: str = "Running"
) -> dict[str, Any]:
    made = pod(f"mnist-{replica_type.lower()}-{index}", uid=uid, owner=owner, phase=phase)
    made["metadata"]["labels"].update(
        {
            "training.kubeflow.org/replica-type": replica_type.lower(),
            "training.kubeflow.org/replica-index": str(index),
        }
    )
    return made


def test_a_slot_whose_pod_comes_back_with_another_uid_counts_as_a_recreation() -> None:
    tracker = JobTracker(namespace=NS, only=[KEY])
    tracker.apply_tfjob_event("ADDED", tfjob())
    tracker.apply_pod_event("ADDED", replica_pod("Worker", 0, uid="w0-a"))
    tracker.apply_pod_event("ADDED", replica_pod("Worker", 1, uid="w1-a"))
    tracker.apply_pod_event("MODIFIED", replica_pod("Worker", 1, uid="w1-a", phase="Failed"))
    assert tracker.snapshot(KEY).recreations == {}
    # ExitCode restart: the operator deletes worker-1 and creates it again under the same name.
    tracker.apply_pod_event("DELETED", replica_pod("Worker", 1, uid="w1-a", phase="Failed"))
    tracker.apply_pod_event("ADDED", replica_pod("Worker", 1, uid="w1-b"))
    tracker.apply_pod_event("MODIFIED", replica_pod("Worker", 1, uid="w1-b", phase="Succeeded"))
    # A relist that shows a third incarnation (the second one's events were missed) counts too.
    tracker.relist_pods([replica_pod("Worker", 0, uid="w0-a"), replica_pod("Worker", 1, uid="w1-c")])
    tracker.apply_pod_event("ADDED", replica_pod("PS", 0, uid="ps-a"))
    tracker.apply_pod_event("ADDED", replica_pod("PS", 0, uid="ps-b"))
    assert tracker.snapshot(KEY).recreations == {"Worker": 2, "PS": 1}


def test_recreations_of_a_previous_tfjob_under_the_same_name_are_not_counted() -> None:
    tracker = JobTracker(namespace=NS, only=[KEY])
    tracker.apply_pod_event("ADDED", replica_pod("Worker", 0, uid="old-a", owner="job-0"))
    tracker.apply_pod_event("ADDED", replica_pod("Worker", 0, uid="old-b", owner="job-0"))
    tracker.apply_tfjob_event("ADDED", tfjob(uid="job-1"))
    tracker.apply_pod_event("ADDED", replica_pod("Worker", 0, uid="new-a"))
    assert tracker.snapshot(KEY).recreations == {}
    tracker.forget(KEY)
    tracker.apply_tfjob_event("ADDED", tfjob(uid="job-1"))
    tracker.apply_pod_event("ADDED", replica_pod("Worker", 0, uid="new-b"))
    assert tracker.snapshot(KEY).recreations == {}, "forget() starts the count afresh"


def test_slim_copies_share_keys_and_short_strings_between_snapshots() -> None:
    # Decoded separately, as two watch events are: equal keys and values become one object each.
    first, second = (slim_pod(json.loads(json.dumps(pod("mnist-worker-0")))) for _ in range(2))
    key_first = next(k for k in first["status"] if k == "phase")
    key_second = next(k for k in second["status"] if k == "phase")
    assert key_first is key_second
    assert first["status"]["phase"] is second["status"]["phase"]
    assert first["metadata"]["labels"] == second["metadata"]["labels"]
