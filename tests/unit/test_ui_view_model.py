"""The TFJob tab's VIEW JSON from a record and from a live read: rows, lanes, bars, caps."""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta
from typing import Any

import pytest

from tests.unit.factories import JOB_NAME, JOB_UID, NAMESPACE, NOW, condition, make_pod, make_tfjob, rfc3339
from tfjob_provider.kube.instances import PodInstance, epoch_seconds, instance_of
from tfjob_provider.policy import Rules, decide
from tfjob_provider.ui.record import (
    MAX_RECORD_BYTES,
    MAX_RECORD_LINE_CHARS,
    MAX_RECORD_LOG_LINES,
    build_record,
    observe,
    refreshed,
    size_of,
)
from tfjob_provider.ui.view_model import (
    JobData,
    empty_view,
    from_record,
    outcome_of,
    view,
    with_live,
    without_its_tfjob,
)

CHIEF, PS, WORKER0, WORKER1 = (f"{JOB_NAME}-{name}" for name in ("chief-0", "ps-0", "worker-0", "worker-1"))


def _recovered_pods() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Chief + 2 Workers + PS after worker 1 was killed (137) and recreated: (pods, the killed one)."""
    killed = make_pod("Worker", 1, phase="Failed", exit_code=137, created=NOW - timedelta(minutes=9))
    current = [
        make_pod("Chief", 0, phase="Succeeded"),
        make_pod("PS", 0, phase="Running"),
        make_pod("Worker", 0, phase="Succeeded"),
        make_pod("Worker", 1, phase="Succeeded", created=NOW - timedelta(minutes=5)),
    ]
    current[3]["metadata"]["uid"] = "pod-worker-1-second"
    return current, [killed]


def _record(pods: list[dict[str, Any]], gone: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    tfjob = make_tfjob(
        {"Chief": 1, "PS": 1, "Worker": 2}, conditions=[condition("Created"), condition("Succeeded")]
    )
    verdict = decide(tfjob, pods)
    earlier = [item._replace(gone=True) for item in (instance_of(pod) for pod in gone) if item is not None]
    observed = observe(tfjob, pods, earlier=earlier, decided_at=rfc3339(NOW))
    fields = {
        "name": JOB_NAME,
        "namespace": NAMESPACE,
        "uid": JOB_UID,
        "status": "success",
        "message": verdict.message,
        "verdict": verdict.to_dict(),
        "observed": observed,
        "try_number": 2,
        **extra,
    }
    return json.loads(json.dumps(build_record(**fields)))  # as it comes back from XCom


def _lane(shown: dict[str, Any], replica_type: str, index: int) -> list[dict[str, Any]]:
    (lane,) = [
        lane for lane in shown["timeline"]["lanes"] if (lane["type"], lane["index"]) == (replica_type, index)
    ]
    bars: list[dict[str, Any]] = lane["bars"]
    return bars


def test_a_record_becomes_rows_grouped_by_type_and_lanes_of_bars() -> None:
    pods, gone = _recovered_pods()
    shown = view(from_record(_record(pods, gone)), status="record", message="m", running=False)
    assert shown["status"] == "record" and shown["tfjob"]["try_number"] == 2
    assert [(group["type"], group["count"]) for group in shown["replicas"]["groups"]] == [
        ("Chief", 1),
        ("PS", 1),
        ("Worker", 2),
    ]
    chief = shown["replicas"]["groups"][0]["rows"][0]
    assert (chief["pod"], chief["deciding"], chief["culprit"], chief["exit_code"]) == (CHIEF, True, False, 0)
    worker1 = shown["replicas"]["groups"][2]["rows"][1]
    assert (worker1["pod"], worker1["recreations"], worker1["exit_code"]) == (WORKER1, 1, 0)
    assert [(bar["outcome"], bar["exit_code"]) for bar in _lane(shown, "Worker", 1)] == [
        ("failed_retryable", 137),
        ("succeeded", 0),
    ]
    assert [bar["outcome"] for bar in _lane(shown, "PS", 0)] == ["running"]
    assert shown["verdict"] == {
        "state": "Succeeded",
        "reason": "ChiefSucceeded",
        "retryable": False,
        "message": shown["verdict"]["message"],
        "decided_at": rfc3339(NOW),
        "deciding": [CHIEF],
    }
    assert shown["timeline"]["verdict_at"] == rfc3339(NOW)
    assert shown["timeline"]["start"] == rfc3339(NOW - timedelta(minutes=9))
    assert [condition["type"] for condition in shown["tfjob"]["conditions"]] == ["Created", "Succeeded"]
    assert [entry["live"] for entry in shown["logs"]["pods"]] == [False] * 4


def test_a_finished_tfjob_looks_the_same_live_and_from_its_record() -> None:
    pods, gone = _recovered_pods()
    record = _record(pods, gone)
    # Read once the TFJob is gone: the PS, running when the record was written, went with it.
    from_the_record = view(
        without_its_tfjob(from_record(record)), status="record", message=None, running=False
    )
    tfjob = make_tfjob(
        {"Chief": 1, "PS": 1, "Worker": 2}, conditions=[condition("Created"), condition("Succeeded")]
    )
    # Later the training operator removed the PS: the live read no longer has it.
    live_pods = [pod for pod in pods if pod["metadata"]["name"] != PS]
    live = view(
        with_live(from_record(record), tfjob=tfjob, pods=live_pods, events=[]),
        status="live",
        message=None,
        running=False,
    )
    for part in ("verdict", "replicas", "timeline", "tfjob"):
        assert live[part] == from_the_record[part], part
    assert [bar["outcome"] for bar in _lane(live, "PS", 0)] == ["deleted"]
    assert {entry["pod"]: entry["live"] for entry in live["logs"]["pods"]} == {
        CHIEF: True,
        PS: False,
        WORKER0: True,
        WORKER1: True,
    }


def test_a_running_tfjob_without_a_record_is_judged_from_the_live_read() -> None:
    tfjob = make_tfjob({"Chief": 1, "Worker": 1}, conditions=[condition("Created"), condition("Running")])
    pods = [make_pod("Chief", 0), make_pod("Worker", 0, phase="Failed", exit_code=2)]
    data = with_live(
        JobData(namespace=NAMESPACE, name=JOB_NAME, uid=JOB_UID), tfjob=tfjob, pods=pods, events=None
    )
    shown = view(data, status="live", message=None, running=True)
    assert shown["verdict"]["state"] == "Failed" and shown["verdict"]["decided_at"] is None
    worker = shown["replicas"]["groups"][1]["rows"][0]
    assert (worker["culprit"], worker["exit_code"]) == (True, 2)
    assert [bar["outcome"] for bar in _lane(shown, "Worker", 0)] == ["failed_permanent"]
    assert [bar["outcome"] for bar in _lane(shown, "Chief", 0)] == ["running"]


def test_pods_of_an_earlier_tfjob_of_the_same_name_are_not_shown() -> None:
    tfjob = make_tfjob({"Worker": 1})
    stale = make_pod("Worker", 0, owner_uid="an-earlier-tfjob", name=f"{JOB_NAME}-worker-0")
    data = with_live(
        JobData(namespace=NAMESPACE, name=JOB_NAME, uid=JOB_UID), tfjob=tfjob, pods=[stale], events=None
    )
    assert data.instances == ()


def _instance(**fields: Any) -> PodInstance:
    base = {
        "replica_type": "Worker",
        "replica_index": 0,
        "name": "w",
        "created": 1,
        "started": 2,
        "finished": None,
        "phase": "Running",
        "exit_code": None,
        "reason": None,
        "restarts": 0,
        "node": None,
        "gone": False,
    }
    return PodInstance(**{**base, **fields})


@pytest.mark.parametrize(
    ("fields", "rules", "expected"),
    [
        ({}, Rules(), "running"),
        ({"phase": "Pending", "started": None}, Rules(), "running"),
        ({"phase": "Succeeded", "exit_code": 0, "finished": 3}, Rules(), "succeeded"),
        ({"phase": "Failed", "exit_code": 3, "finished": 3}, Rules(), "failed_permanent"),
        ({"phase": "Failed", "exit_code": 137, "finished": 3}, Rules(), "failed_retryable"),
        (
            {"phase": "Failed", "exit_code": 3, "finished": 3},
            Rules(retryable_exit_codes=[3]),
            "failed_retryable",
        ),
        (
            {"exit_code": 137, "reason": "OOMKilled", "finished": 3},
            Rules(oom_is_retryable=False),
            "failed_permanent",
        ),
        ({"phase": "Failed", "reason": "Evicted", "finished": 3}, Rules(), "failed_retryable"),
        ({"gone": True, "finished": 3}, Rules(), "deleted"),
    ],
)
def test_each_bar_is_coloured_by_how_its_pod_ended(
    fields: dict[str, Any], rules: Rules, expected: str
) -> None:
    assert outcome_of(_instance(**fields), rules) == expected


def test_rows_and_events_are_capped_and_the_rest_counted() -> None:
    instances = tuple(_instance(replica_index=index, name=f"w-{index}") for index in range(30))
    events = tuple(
        [rfc3339(NOW), "Normal", "Started", f"pod/w-{n}", "<script>alert(1)</script>", 1] for n in range(12)
    )
    data = JobData(namespace=NAMESPACE, name=JOB_NAME, instances=instances, events=events, events_more=5)
    shown = view(data, status="record", message=None, running=False, max_rows=10, max_events=4)
    assert [len(group["rows"]) for group in shown["replicas"]["groups"]] == [10]
    assert (shown["replicas"]["groups"][0]["count"], shown["replicas"]["more"]) == (30, 20)
    assert len(shown["events"]["items"]) == 4 and shown["events"]["more"] == 5 + 8
    assert shown["events"]["items"][0]["message"] == "<script>alert(1)</script>"  # data, escaped by the page
    assert len(shown["timeline"]["lanes"]) == 30


def test_a_malformed_record_is_read_as_far_as_it_goes() -> None:
    data = from_record(
        {"name": JOB_NAME, "namespace": NAMESPACE, "pods": [["Worker"], "junk", None], "logs": 5}
    )
    shown = view(data, status="record", message=None, running=False)
    assert shown["replicas"]["groups"] == [] and shown["logs"]["kept"] == {}
    assert empty_view("no_tfjob", "none")["tfjob"] is None


def _row(shown: dict[str, Any], replica_type: str, index: int) -> dict[str, Any]:
    (row,) = [
        row
        for group in shown["replicas"]["groups"]
        for row in group["rows"]
        if (row["type"], row["index"]) == (replica_type, index)
    ]
    return row


def test_a_pod_deleted_when_the_job_ended_shows_as_deleted_in_its_row_live_and_from_the_record() -> None:
    tfjob = make_tfjob({"Chief": 1, "Worker": 2}, conditions=[condition("Created"), condition("Succeeded")])
    tfjob["status"]["completionTime"] = rfc3339(NOW)
    pods = [
        make_pod("Chief", 0, phase="Succeeded"),
        make_pod("Worker", 0, phase="Running"),
        make_pod("Worker", 1, phase="Succeeded"),
    ]
    # Worker 0 was still running when the chief succeeded; the training operator deleted it.
    after = [pod for pod in pods if pod["metadata"]["name"] != WORKER0]
    observed = refreshed(observe(tfjob, pods, decided_at=rfc3339(NOW)), tfjob, after, now=epoch(NOW) + 1)
    verdict = decide(tfjob, pods).to_dict()
    record = build_record(
        name=JOB_NAME,
        namespace=NAMESPACE,
        uid=JOB_UID,
        status="success",
        message="done",
        verdict=verdict,
        observed=observed,
    )
    from_the_record = view(from_record(record), status="record", message=None, running=False)
    live = view(
        with_live(from_record(record), tfjob=tfjob, pods=after, events=[]),
        status="live",
        message=None,
        running=False,
    )
    for shown in (from_the_record, live):
        worker0 = _row(shown, "Worker", 0)
        assert (worker0["phase"], worker0["phase_note"]) == ("Deleted", "after the job ended")
        assert [bar["outcome"] for bar in _lane(shown, "Worker", 0)] == ["deleted"]
        assert (_row(shown, "Worker", 1)["phase"], _row(shown, "Worker", 1)["phase_note"]) == (
            "Succeeded",
            None,
        )
    assert live["replicas"] == from_the_record["replicas"]


def test_a_row_says_deleted_without_a_note_for_a_pod_gone_before_the_job_ended() -> None:
    before = _instance(gone=True, finished=epoch(NOW) - 60)
    still = _instance(name="w-1", replica_index=1, finished=None)
    data = JobData(
        namespace=NAMESPACE,
        name=JOB_NAME,
        instances=(before, still),
        decided_at=rfc3339(NOW),
    )
    shown = view(data, status="record", message=None, running=False)
    assert (_row(shown, "Worker", 0)["phase"], _row(shown, "Worker", 0)["phase_note"]) == ("Deleted", None)
    assert (_row(shown, "Worker", 1)["phase"], _row(shown, "Worker", 1)["phase_note"]) == ("Running", None)
    # Without the TFJob's end, the moment of the verdict says when the job ended.
    at_the_end = dataclasses.replace(data, instances=(before._replace(finished=epoch(NOW)),))
    shown = view(at_the_end, status="record", message=None, running=False)
    assert _row(shown, "Worker", 0)["phase_note"] == "after the job ended"


def epoch(moment: Any) -> int:
    seconds = epoch_seconds(rfc3339(moment))
    assert seconds is not None
    return seconds


def test_a_succeeded_record_keeps_the_deciding_replicas_printed_lines_for_its_log_panel() -> None:
    pods, gone = _recovered_pods()
    printed = "\n".join(f"chief step {step} " + "x" * 400 for step in range(100)) + "\nchief done\n"
    record = _record(pods, gone, logs={CHIEF: printed})
    assert size_of(record) <= MAX_RECORD_BYTES
    shown = view(from_record(record), status="record", message=None, running=False)
    kept = shown["logs"]["kept"][CHIEF]
    assert len(kept) == MAX_RECORD_LOG_LINES and kept[-1] == "chief done"
    assert kept[0].startswith("chief step 61 ") and "… (" in kept[0]
    assert len(kept[0]) < MAX_RECORD_LINE_CHARS + 40  # each line cut to the record's length
    assert list(shown["logs"]["kept"]) == [CHIEF] and shown["verdict"]["deciding"] == [CHIEF]


def test_a_pod_still_running_when_the_record_was_written_is_gone_once_the_cluster_lost_it() -> None:
    tfjob = make_tfjob({"Chief": 1, "Worker": 2}, conditions=[condition("Created"), condition("Succeeded")])
    tfjob["status"]["completionTime"] = rfc3339(NOW)
    pods = [
        make_pod("Chief", 0, phase="Succeeded"),
        make_pod("Worker", 0, phase="Running"),
        make_pod("Worker", 1, phase="Succeeded"),
    ]
    # The task's last read came before the training operator deleted worker 0.
    record = build_record(
        name=JOB_NAME,
        namespace=NAMESPACE,
        uid=JOB_UID,
        status="success",
        message="done",
        verdict=decide(tfjob, pods).to_dict(),
        observed=observe(tfjob, pods, decided_at=rfc3339(NOW)),
        written_at=rfc3339(NOW + timedelta(seconds=2)),
    )
    as_written = view(from_record(record), status="record", message=None, running=False)
    assert _row(as_written, "Worker", 0)["phase"] == "Running"  # all the record knows, unread
    after = [pod for pod in pods if pod["metadata"]["name"] != WORKER0]
    live = view(
        with_live(from_record(record), tfjob=tfjob, pods=after, events=[]),
        status="live",
        message=None,
        running=False,
    )
    deleted = view(without_its_tfjob(from_record(record)), status="record", message=None, running=False)
    for shown in (live, deleted):
        worker0 = _row(shown, "Worker", 0)
        assert (worker0["phase"], worker0["phase_note"]) == ("Deleted", "after the job ended")
        assert worker0["end"] == rfc3339(NOW + timedelta(seconds=2))  # last seen when the record was written
        assert [bar["outcome"] for bar in _lane(shown, "Worker", 0)] == ["deleted"]
    assert live["replicas"] == deleted["replicas"] and live["timeline"] == deleted["timeline"]
