"""The TFJob tab's data on real DAG runs: the ``tfjob_record`` both wait paths leave, and a view
that looks the same read live and, once the TFJob is deleted, from the record."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from tfjob_sandbox.testing import unique_name

from tests.integration.airflow_harness import RunOutcome, load_dag, run_dag, write_dag_file, xcom_value
from tests.integration.trigger_helpers import delete_tfjob, submit_tfjob, tfjob_exists
from tfjob_provider.ui.data import NO_TFJOB, UnknownPod, build_view, read_log
from tfjob_provider.ui.record import MAX_RECORD_BYTES, POD_FIELDS, size_of

#: Chief + 2 Workers + PS. Worker 1's first run dies as if OOM-killed (137) after a few seconds
#: (inside the wait: a deferred task's trigger must see the pod replaced); the chief finishes
#: once worker 1 has come back; the PS runs until the training operator removes it.
RECOVERING = """
import json, os, sys, time
role = json.loads(os.environ["TF_CONFIG"])["task"]
kind, index = role["type"], role["index"]
marker = os.path.join(sys.argv[1], "crashed")
print(f"{kind}-{index} <b>starts</b>", flush=True)
if kind == "ps":
    time.sleep(600)
if kind == "worker" and index == 1 and not os.path.exists(marker):
    time.sleep(4)
    open(marker, "w").close()
    sys.exit(137)
if kind == "chief":
    while not os.path.exists(marker):
        time.sleep(0.2)
    time.sleep(6)
print(f"{kind}-{index} done", flush=True)
"""

#: The chief fails with the program's own exit code (permanent); the worker succeeds.
FAILING = """
import json, os, sys, time
role = json.loads(os.environ["TF_CONFIG"])["task"]
for step in range(60):
    print(f"{role['type']} step {step}", flush=True)
if role["type"] == "chief":
    time.sleep(1)
    print("chief: loss is NaN, giving up", flush=True)
    sys.exit(3)
"""

DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG, task
from tfjob_provider.operators.tfjob import TFJobOperator

with DAG("{dag_id}", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobOperator(
        task_id="train",
        image="python:3.11",
        command=["python", "-c", {program!r}, {workdir!r}],
        env={{"SECRET_TOKEN": "s3cr3t-value"}},
        chief=1,
        worker=2,
        ps={ps},
        restart_policy="ExitCode",
        on_finish_action="keep",
        deferrable={deferrable},
        poll_interval=1,
    )

    TFJobOperator(task_id="invalid", image="python:3.11", rules={{"no_such_rule": 1}})

    @task
    def plain() -> int:
        return 1

    plain()
"""


def _run(
    dags_folder: Path, tmp_path: Path, dag_id: str, program: str, *, deferrable: bool, ps: int
) -> RunOutcome:
    source = DAG.format(dag_id=dag_id, program=program, workdir=str(tmp_path), deferrable=deferrable, ps=ps)
    return run_dag(load_dag(write_dag_file(dags_folder, dag_id, source), dag_id))


def _view(outcome: RunOutcome, task_id: str = "train", **kwargs: Any) -> dict[str, Any]:
    return build_view(dag_id=outcome.dag_id, run_id=outcome.run_id, task_id=task_id, map_index=-1, **kwargs)


def _picture(view: dict[str, Any]) -> dict[str, Any]:
    """What must not depend on where the view was read from."""
    return {key: view[key] for key in ("verdict", "replicas", "timeline")}


def _delete(name: str) -> None:
    delete_tfjob(name)
    deadline = time.monotonic() + 30
    while tfjob_exists(name):
        assert time.monotonic() < deadline, f"TFJob {name} was not deleted"
        time.sleep(0.2)


def _lane(view: dict[str, Any], replica_type: str, index: int) -> list[dict[str, Any]]:
    lanes = [
        lane for lane in view["timeline"]["lanes"] if (lane["type"], lane["index"]) == (replica_type, index)
    ]
    assert len(lanes) == 1, view["timeline"]["lanes"]
    bars: list[dict[str, Any]] = lanes[0]["bars"]
    return bars


@pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])
def test_a_recovered_tfjob_looks_the_same_live_and_from_its_record(
    cluster: Any, dags_folder: Path, tmp_path: Path, deferrable: bool
) -> None:
    dag_id = f"ui_recovered_{'deferred' if deferrable else 'worker'}"
    outcome = _run(dags_folder, tmp_path, dag_id, RECOVERING, deferrable=deferrable, ps=1)
    assert outcome.task("train").state == "success"
    assert xcom_value(outcome, "train", "tfjob_conn_id") == "kubernetes_default"

    record = xcom_value(outcome, "train", "tfjob_record")
    assert record["status"] == "success" and record["try_number"] == 1
    assert record["verdict"]["state"] == "Succeeded" and record["decided_at"]
    assert size_of(record) <= MAX_RECORD_BYTES
    # The chief decided the verdict: the lines of its log the task printed are kept (both paths).
    chief_pod = f"{record['name']}-chief-0"
    assert list(record["logs"]) == [chief_pod] and record["logs"][chief_pod][-1] == "chief-0 done"
    text = json.dumps(record)
    for secret in ("s3cr3t-value", "SECRET_TOKEN", "TF_CONFIG", "sys.exit"):
        assert secret not in text  # no spec, no environment
    rows = [dict(zip(POD_FIELDS, row, strict=True)) for row in record["pods"]]
    worker1 = sorted(
        (row for row in rows if (row["replica_type"], row["replica_index"]) == ("Worker", 1)),
        key=lambda row: row["created"],
    )
    assert [(row["exit_code"], row["gone"]) for row in worker1] == [(137, True), (0, False)]
    assert {(row["replica_type"], row["replica_index"]) for row in rows} == {
        ("Chief", 0),
        ("Worker", 0),
        ("Worker", 1),
        ("PS", 0),
    }

    live = _view(outcome)
    assert live["status"] == "live", live["message"]
    assert live["running"] is False
    assert live["verdict"]["state"] == "Succeeded"
    assert [(group["type"], group["count"]) for group in live["replicas"]["groups"]] == [
        ("Chief", 1),
        ("PS", 1),
        ("Worker", 2),
    ]
    bars = _lane(live, "Worker", 1)
    assert [(bar["outcome"], bar["exit_code"]) for bar in bars] == [
        ("failed_retryable", 137),
        ("succeeded", 0),
    ]
    assert _lane(live, "Chief", 0)[0]["outcome"] == "succeeded"
    chief_row = live["replicas"]["groups"][0]["rows"][0]
    assert chief_row["deciding"] is True and chief_row["culprit"] is False
    worker1_row = live["replicas"]["groups"][2]["rows"][1]
    assert (worker1_row["index"], worker1_row["recreations"]) == (1, 1)
    assert live["timeline"]["verdict_at"] == record["decided_at"]

    log = read_log(
        dag_id=outcome.dag_id,
        run_id=outcome.run_id,
        task_id="train",
        map_index=-1,
        pod=chief_row["pod"],
        lines=10,
    )
    assert log.source == "live" and "chief-0 <b>starts</b>" in log.text
    with pytest.raises(UnknownPod):
        read_log(
            dag_id=outcome.dag_id,
            run_id=outcome.run_id,
            task_id="train",
            map_index=-1,
            pod="kube-apiserver",
            lines=5,
        )

    _delete(live["tfjob"]["name"])
    recorded = _view(outcome)
    assert recorded["status"] == "record"
    assert "no longer exists" in recorded["message"]
    assert _picture(recorded) == _picture(live)
    kept = read_log(
        dag_id=outcome.dag_id, run_id=outcome.run_id, task_id="train", map_index=-1, pod=chief_pod, lines=1
    )
    assert (kept.source, kept.text, kept.truncated) == ("record", "chief-0 done\n", True)
    whole = read_log(
        dag_id=outcome.dag_id, run_id=outcome.run_id, task_id="train", map_index=-1, pod=chief_pod, lines=200
    )
    assert (whole.text.splitlines(), whole.truncated) == (["chief-0 <b>starts</b>", "chief-0 done"], False)


def test_a_failed_tfjob_keeps_its_culprit_and_its_last_lines(
    cluster: Any, dags_folder: Path, tmp_path: Path
) -> None:
    outcome = _run(dags_folder, tmp_path, "ui_failed", FAILING, deferrable=True, ps=0)
    assert outcome.task("train").state == "failed"
    # The provider deletes a failed TFJob whose failure the training operator had not written yet,
    # so the view may come from the record already; after deleting it, it must.
    first = _view(outcome)
    name = first["tfjob"]["name"]
    if tfjob_exists(name):
        _delete(name)
    recorded = _view(outcome)
    assert recorded["status"] == "record"
    assert _picture(recorded) == _picture(first)
    assert (recorded["verdict"]["state"], recorded["verdict"]["retryable"]) == ("Failed", False)
    chief = recorded["replicas"]["groups"][0]["rows"][0]
    assert (chief["type"], chief["exit_code"], chief["culprit"]) == ("Chief", 3, True)
    assert _lane(recorded, "Chief", 0)[0]["outcome"] == "failed_permanent"
    kept = recorded["logs"]["kept"][chief["pod"]]
    assert kept[-1] == "chief: loss is NaN, giving up" and len(kept) == 40
    log = read_log(
        dag_id=outcome.dag_id, run_id=outcome.run_id, task_id="train", map_index=-1, pod=chief["pod"], lines=3
    )
    assert log.source == "record"
    assert log.text.splitlines() == ["chief step 58", "chief step 59", "chief: loss is NaN, giving up"]

    # A cluster that does not answer: the record, and why, within a few seconds.
    fault = cluster.add_latency(30.0, resources=["tfjobs"])
    try:
        started = time.monotonic()
        slow = _view(outcome)
        waited = time.monotonic() - started
    finally:
        cluster.remove_api_fault(fault)
    assert waited < 6, waited
    assert (
        slow["status"] == "record"
        and "could not be read through connection 'kubernetes_default'" in slow["message"]
    )
    assert _picture(slow) == _picture(recorded)

    invalid = _view(outcome, task_id="invalid")
    assert (invalid["status"], invalid["message"]) == (
        "not_submitted",
        "This try of the task ended before it submitted a TFJob.",
    )
    plain = _view(outcome, task_id="plain")
    assert (plain["status"], plain["message"], plain["tfjob"]) == ("no_tfjob", NO_TFJOB, None)
    earlier = _view(outcome, try_number=7)
    assert earlier["message"].startswith("Try 7 is not kept")


SENSOR_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.sensors.tfjob import TFJobSensor

with DAG("ui_sensor", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobSensor(task_id="watch", job_name={name!r}, deferrable=True, poke_interval=1, timeout=120)
"""


#: Long enough for the sensor to see it run; the worker ends first (so no cleanPodPolicy deletes it).
SENSED = (
    "import json, os, time; kind = json.loads(os.environ['TF_CONFIG'])['task']['type'];"
    "time.sleep(30 if kind == 'chief' else 25)"
)


def test_a_sensor_leaves_a_record_of_the_tfjob_it_watched(cluster: Any, dags_folder: Path) -> None:
    name = unique_name("ui-sensor")
    uid = submit_tfjob(name, command=["python", "-c", SENSED], worker=1)
    outcome = run_dag(
        load_dag(write_dag_file(dags_folder, "ui_sensor", SENSOR_DAG.format(name=name)), "ui_sensor")
    )
    assert outcome.task("watch").state == "success"
    assert xcom_value(outcome, "watch", "tfjob_conn_id") == "kubernetes_default"
    record = xcom_value(outcome, "watch", "tfjob_record")
    assert (record["uid"], record["status"], record["verdict"]["state"]) == (uid, "success", "Succeeded")
    shown = _view(outcome, task_id="watch")
    assert shown["status"] == "live" and shown["tfjob"]["uid"] == uid
    assert [(group["type"], group["count"]) for group in shown["replicas"]["groups"]] == [
        ("Chief", 1),
        ("Worker", 1),
    ]
