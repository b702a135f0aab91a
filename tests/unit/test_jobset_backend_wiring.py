"""The JobSet backend's wiring without a cluster: the backend parameter, the trigger's serialized
form, the tracker that folds a JobSet's three streams into TFJob-view snapshots, the engine."""

from __future__ import annotations

import pytest

from tests.unit.jobset_states import NOW, child_job, jobset_condition, jobset_pod, make_jobset
from tfjob_provider._jobset import decide_jobset
from tfjob_provider._jobset.judging import JOBSET_ENGINE, as_tfjob, decide_jobset_with_next_change
from tfjob_provider._outcome.wait import WaitTarget
from tfjob_provider.kube.jobsets import JobSetTracker
from tfjob_provider.kube.kinds import JOBSET, TFJOB, kind_for, kind_of_engine
from tfjob_provider.policy import Rules, VerdictState
from tfjob_provider.triggers.tfjob import CLASSPATH, TFJobTrigger


def test_backend_names_the_parameter_and_the_allowed_values() -> None:
    assert kind_for("tfjob") is TFJOB and kind_for("jobset") is JOBSET
    with pytest.raises(ValueError, match=r"backend is 'JobSet'; use one of \['tfjob', 'jobset'\]"):
        kind_for("JobSet")


def test_the_operator_and_the_sensor_refuse_an_unknown_backend_at_definition() -> None:
    from tfjob_provider.operators.tfjob import TFJobOperator
    from tfjob_provider.sensors.tfjob import TFJobSensor

    with pytest.raises(ValueError, match=r"train: backend is 'trainjob'; use one of"):
        TFJobOperator(task_id="train", image="python:3.11", backend="trainjob")
    with pytest.raises(ValueError, match=r"wait: backend is 'kubeflow'; use one of"):
        TFJobSensor(task_id="wait", job_name="x", backend="kubeflow")


def test_a_tfjob_trigger_serializes_as_before_and_a_jobset_one_adds_its_backend() -> None:
    tfjob = TFJobTrigger(name="a", namespace="ns")
    classpath, kwargs = tfjob.serialize()
    assert classpath == CLASSPATH == "tfjob_provider.triggers.tfjob.TFJobTrigger"
    assert "backend" not in kwargs  # byte-for-byte the previous version's kwargs
    assert TFJobTrigger(**kwargs).target().engine is TFJOB.engine  # and they still load
    jobset = TFJobTrigger(name="a", namespace="ns", backend="jobset")
    _, kwargs = jobset.serialize()
    assert kwargs["backend"] == "jobset"
    assert TFJobTrigger(**kwargs).target().engine is JOBSET_ENGINE


def test_an_unknown_trigger_backend_ends_in_an_error_event_not_a_crash() -> None:
    with pytest.raises(ValueError, match="backend"):
        TFJobTrigger(name="a", namespace="ns", backend="nope").target()


def test_the_tracker_folds_jobset_jobs_and_pods_into_the_view_and_counts_recreations() -> None:
    jobset = make_jobset(chief=1, worker=2)
    key = ("ml", jobset["metadata"]["name"])
    jobset["metadata"]["namespace"] = "ml"
    tracker = JobSetTracker(namespace="ml", only=[key])
    assert tracker.apply_jobset_event("ADDED", jobset) == {key}
    for rjob in ("chief", "worker"):
        tracker.apply_job_event("ADDED", child_job(jobset, rjob))
    first = jobset_pod("worker", 1, phase="Running", suffix="aaaaa")
    tracker.apply_pod_event("ADDED", {**first, "metadata": {**first["metadata"], "namespace": "ml"}})
    snapshot = tracker.snapshot(key)
    assert snapshot.tfjob is not None
    assert snapshot.tfjob["metadata"]["uid"] == jobset["metadata"]["uid"]
    assert [pod["metadata"]["labels"]["training.kubeflow.org/replica-type"] for pod in snapshot.pods] == [
        "worker"
    ]
    assert snapshot.recreations == {}
    tracker.apply_pod_event("DELETED", {**first, "metadata": {**first["metadata"], "namespace": "ml"}})
    second = jobset_pod("worker", 1, phase="Running", suffix="bbbbb")
    tracker.apply_pod_event("ADDED", {**second, "metadata": {**second["metadata"], "namespace": "ml"}})
    snapshot = tracker.snapshot(key)
    assert snapshot.recreations == {"Worker": 1}
    assert [instance.name for instance in snapshot.earlier] == [first["metadata"]["name"]]
    tracker.apply_jobset_event("DELETED", jobset)
    gone = tracker.snapshot(key)
    assert gone.tfjob is None and gone.deleted


def test_the_engine_judges_the_view_as_decide_jobset_judges_the_jobset() -> None:
    jobset = make_jobset(chief=1, worker=1, conditions=[jobset_condition("Completed")])
    jobs = [child_job(jobset, "chief", finished="Complete"), child_job(jobset, "worker")]
    pods = [jobset_pod("chief", phase="Succeeded", exit_code=0), jobset_pod("worker", phase="Running")]
    expected = decide_jobset(jobset, jobs, pods, now=NOW)
    tfjob, view_pods = as_tfjob(jobset, jobs, pods)
    verdict, _ = JOBSET_ENGINE.decide(tfjob, view_pods, now=NOW, rules=Rules())
    assert verdict == expected and verdict.state is VerdictState.SUCCEEDED
    assert decide_jobset_with_next_change(jobset, jobs, pods, now=NOW)[0] == expected
    target = WaitTarget(name="mnist", namespace="ml", engine=JOBSET_ENGINE)
    assert kind_of_engine(target.engine) is JOBSET
    outcome = target.judge(tfjob, view_pods, now=NOW)
    assert outcome is not None and outcome.status == "success"


def test_a_jobset_never_reconciled_times_out_worded_for_the_jobset_controller() -> None:
    jobset = make_jobset(chief=1)
    jobset.pop("status")
    tfjob, pods = as_tfjob(jobset, [], [])
    target = WaitTarget(name="mnist", namespace="ml", startup_timeout=1, engine=JOBSET_ENGINE)
    outcome = target.judge(tfjob, pods, now=NOW)
    assert outcome is not None and outcome.status == "failed"
    assert "JobSet ml/mnist has no status" in outcome.message
    assert "JobSet controller" in outcome.message and "training operator" not in outcome.message


@pytest.mark.parametrize("worker_phase", ["Running", "Failed", "Succeeded"])
def test_the_slim_tracker_judges_as_the_full_one_and_keeps_less(worker_phase: str) -> None:
    import json

    jobset = make_jobset(chief=1, worker=2)
    jobset["metadata"]["namespace"] = "ml"
    key = ("ml", jobset["metadata"]["name"])
    pods = [
        jobset_pod("chief", phase="Running"),
        jobset_pod("worker", 0, phase=worker_phase, exit_code=None if worker_phase == "Running" else 137),
        jobset_pod("worker", 1, phase="Running"),
    ]
    snapshots = []
    for slim in (False, True):
        tracker = JobSetTracker(namespace="ml", only=[key], slim=slim)
        tracker.apply_jobset_event("ADDED", jobset)
        for rjob in ("chief", "worker"):
            tracker.apply_job_event("ADDED", child_job(jobset, rjob))
        for pod in pods:
            tracker.apply_pod_event("ADDED", {**pod, "metadata": {**pod["metadata"], "namespace": "ml"}})
        snapshots.append(tracker.snapshot(key))
    full, slim_snapshot = snapshots
    assert full.tfjob is not None and slim_snapshot.tfjob is not None
    judged = [JOBSET_ENGINE.decide(s.tfjob, list(s.pods), now=NOW, rules=Rules())[0] for s in snapshots]
    assert judged[0] == judged[1]
    assert [p["metadata"]["name"] for p in full.pods] == [p["metadata"]["name"] for p in slim_snapshot.pods]
    assert len(json.dumps(slim_snapshot.pods)) < len(json.dumps(full.pods))
