"""The ``tfjob_record``: pod instances as short rows, bounded whatever the job's size, no spec or secret."""

from __future__ import annotations

import json
import tracemalloc
from datetime import timedelta
from typing import Any

from tests.unit.factories import JOB_NAME, JOB_UID, NAMESPACE, NOW, make_pod, make_tfjob, rfc3339
from tfjob_provider.kube.instances import (
    MAX_EARLIER_INSTANCES,
    EarlierInstances,
    PodInstance,
    epoch_seconds,
    instance_of,
)
from tfjob_provider.kube.tracking import JobTracker, slim_pod
from tfjob_provider.policy import decide
from tfjob_provider.ui.record import (
    MAX_RECORD_BYTES,
    MAX_RECORD_EVENTS,
    MAX_RECORD_LOG_LINES,
    MAX_RECORD_PODS,
    POD_FIELDS,
    build_record,
    events_about,
    observe,
    refreshed,
    size_of,
)

KEY = (NAMESPACE, JOB_NAME)


def _event(
    obj: str, kind: str, reason: str, minute: int, message: str = "something happened"
) -> dict[str, Any]:
    return {
        "metadata": {"name": f"{obj}.{minute:x}", "uid": f"ev-{obj}-{minute}"},
        "involvedObject": {"kind": kind, "name": obj, "namespace": NAMESPACE},
        "reason": reason,
        "type": "Warning" if reason == "BackOff" else "Normal",
        "message": message,
        "lastTimestamp": rfc3339(NOW + timedelta(minutes=minute)),
        "count": 2,
    }


def _recreated(pod: dict[str, Any], generation: int) -> dict[str, Any]:
    """The same slot's pod created again by the training operator (another UID)."""
    copy = json.loads(json.dumps(pod))
    copy["metadata"]["uid"] = f"{copy['metadata']['uid']}-{generation}"
    copy["metadata"]["creationTimestamp"] = rfc3339(NOW + timedelta(seconds=generation))
    return copy


def _big_job_tracker(workers: int, recreations: int) -> tuple[JobTracker, list[dict[str, Any]]]:
    tracker = JobTracker(namespace=NAMESPACE, slim=True)
    tracker.apply_tfjob_event("ADDED", make_tfjob({"Chief": 1, "Worker": workers}, restart_policy="ExitCode"))
    pods = [make_pod("Chief", 0), *(make_pod("Worker", index) for index in range(workers))]
    for pod in pods:
        tracker.apply_pod_event("ADDED", pod)
    for generation in range(1, recreations + 1):
        index = generation % workers
        old = next(pod for pod in pods if pod["metadata"]["name"] == f"{JOB_NAME}-worker-{index}")
        failed = make_pod("Worker", index, phase="Failed", exit_code=137)
        failed["metadata"] = old["metadata"]
        tracker.apply_pod_event("MODIFIED", failed)
        new = _recreated(make_pod("Worker", index), generation)
        tracker.apply_pod_event("ADDED", new)  # the ADDED of the new pod may come before the DELETED
        tracker.apply_pod_event("DELETED", failed)
        pods = [new if pod is old else pod for pod in pods]
    return tracker, pods


def test_a_pod_becomes_a_short_instance_without_its_spec() -> None:
    pod = make_pod("Worker", 3, phase="Failed", exit_code=137, terminated_reason="OOMKilled", restarts=2)
    found = instance_of(pod)
    assert found == PodInstance(
        replica_type="Worker",
        replica_index=3,
        name=f"{JOB_NAME}-worker-3",
        created=epoch_seconds(pod["metadata"]["creationTimestamp"]),
        started=epoch_seconds(pod["status"]["containerStatuses"][0]["state"]["terminated"]["startedAt"]),
        finished=epoch_seconds(rfc3339(NOW - timedelta(minutes=1))),
        phase="Failed",
        exit_code=137,
        reason="OOMKilled",
        restarts=2,
        node="node-a",
    )
    assert instance_of(make_pod("Worker", 0, labels={"training.kubeflow.org/replica-index": None})) is None
    assert epoch_seconds("2025-03-01T14:00:00+02:00") == epoch_seconds("2025-03-01T12:00:00Z")


def test_the_record_of_100_replicas_with_20_recreations_is_small_and_holds_no_spec() -> None:
    tracker, _pods = _big_job_tracker(workers=99, recreations=20)
    snapshot = tracker.snapshot(KEY)
    assert len(snapshot.earlier) == 20 and snapshot.recreations == {"Worker": 20}
    tfjob = make_tfjob({"Chief": 1, "Worker": 99})
    verdict = decide(tfjob, snapshot.pods)
    observed = observe(tfjob, snapshot.pods, earlier=snapshot.earlier, decided_at=rfc3339(NOW))
    events = [_event(f"{JOB_NAME}-worker-{index % 99}", "Pod", "BackOff", index) for index in range(200)]
    record = build_record(
        name=JOB_NAME,
        namespace=NAMESPACE,
        uid=JOB_UID,
        status="success",
        message="done",
        verdict=verdict.to_dict(),
        observed=observed,
        events=events,
        logs={f"{JOB_NAME}-chief-0": "\n".join(f"step {n} " + "x" * 500 for n in range(5000))},
        try_number=1,
    )
    size = size_of(record)
    print(f"record of 100 replicas with 20 recreations: {size} bytes")
    assert size <= 40 * 1024  # a few tens of KiB
    assert len(record["pods"]) == 120 and record["pods_more"] == 0
    gone = [dict(zip(POD_FIELDS, row, strict=True)) for row in record["pods"] if row[-1]]
    assert len(gone) == 20 and {row["exit_code"] for row in gone} == {137}
    assert len(record["events"]) == MAX_RECORD_EVENTS and record["events_more"] == 200 - MAX_RECORD_EVENTS
    assert len(record["logs"][f"{JOB_NAME}-chief-0"]) == MAX_RECORD_LOG_LINES
    text = json.dumps(record)
    for leaked in ("TF_CONFIG", "/opt/train.py", "registry.example.com", "containerd://", "10.244."):
        assert leaked not in text


def test_a_huge_job_is_cut_to_the_cap_logs_first() -> None:
    pods = [make_pod("Worker", index, name=f"{'w' * 200}-{index}") for index in range(2000)]
    observed = observe(make_tfjob({"Worker": 2000}), pods)
    assert len(observed["pods"]) == MAX_RECORD_PODS and observed["pods_more"] == 2000 - MAX_RECORD_PODS
    record = build_record(
        name=JOB_NAME,
        namespace=NAMESPACE,
        uid=JOB_UID,
        status="failed",
        message="x" * 50_000,
        verdict=None,
        observed=observed,
        events=[_event(JOB_NAME, "TFJob", "Big", n, "m" * 5000) for n in range(100)],
        logs={f"pod-{n}": "\n".join("y" * 1000 for _ in range(100)) for n in range(3)},
    )
    assert size_of(record) <= MAX_RECORD_BYTES
    assert record["logs"] == {} and record["pods_more"] > 2000 - MAX_RECORD_PODS
    assert len(record["message"]) < 1100


def test_events_kept_are_the_jobs_and_its_pods_newest_first() -> None:
    events = [
        _event(JOB_NAME, "TFJob", "TFJobRestarting", 1),
        _event(f"{JOB_NAME}-worker-0", "Pod", "Killing", 3),
        _event("another-job", "TFJob", "TFJobRestarting", 2),
        _event(f"{JOB_NAME}-worker-9", "Pod", "Killing", 4),  # not one of the pods named
    ]
    rows, more = events_about(events, job=JOB_NAME, pods={f"{JOB_NAME}-worker-0"}, limit=1)
    assert rows == [
        [
            rfc3339(NOW + timedelta(minutes=3)),
            "Normal",
            "Killing",
            f"pod/{JOB_NAME}-worker-0",
            "something happened",
            2,
        ]
    ]
    assert more == 1


def test_a_pod_gone_by_the_end_is_marked_gone_and_a_live_one_updated() -> None:
    running = [make_pod("Chief", 0), make_pod("PS", 0)]
    observed = observe(make_tfjob({"Chief": 1, "PS": 1}), running)
    now = epoch_seconds(rfc3339(NOW)) or 0
    chief = make_pod("Chief", 0, phase="Succeeded")
    result = refreshed(observed, None, [chief], now=now)
    rows = {row[2]: dict(zip(POD_FIELDS, row, strict=True)) for row in result["pods"]}
    assert (rows[f"{JOB_NAME}-chief-0"]["exit_code"], rows[f"{JOB_NAME}-chief-0"]["gone"]) == (0, False)
    assert (rows[f"{JOB_NAME}-ps-0"]["gone"], rows[f"{JOB_NAME}-ps-0"]["finished"]) == (True, now)
    assert result["tfjob"] == observed["tfjob"]  # the TFJob is gone: the observed summary stays


def test_a_waiter_keeps_a_few_kib_per_job_however_often_its_pods_are_recreated() -> None:
    gone = [
        slim_pod(make_pod("Worker", index % 100, phase="Failed", exit_code=137, terminated_reason="Error"))
        for index in range(500)
    ]
    store = EarlierInstances()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for pod in gone:
            store.add(JOB_UID, pod)
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(store.of(JOB_UID)) == MAX_EARLIER_INSTANCES and store.dropped == 500 - MAX_EARLIER_INSTANCES
    assert store.of("another-tfjob") == ()
    print(f"{MAX_EARLIER_INSTANCES} gone pod instances kept: {kept} bytes")
    assert kept <= 8 * 1024


def test_the_tracker_remembers_replaced_and_deleted_pods_of_its_own_tfjob_only() -> None:
    tracker, _ = _big_job_tracker(workers=2, recreations=3)
    snapshot = tracker.snapshot(KEY)
    assert [(item.replica_index, item.exit_code, item.gone) for item in snapshot.earlier] == [
        (1, 137, True),
        (0, 137, True),
        (1, 137, True),
    ]
    tracker.relist_pods([])  # every pod vanished while the watch was away
    assert len(tracker.snapshot(KEY).earlier) == 6
    tracker.forget(KEY)
    assert tracker.snapshot(KEY).earlier == ()
