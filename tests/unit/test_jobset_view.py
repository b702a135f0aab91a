"""read_jobset: how a JobSet's replicated Jobs and pods become replica types and slots."""

from __future__ import annotations

from typing import Any

from tests.unit.jobset_states import child_job, jobset_pod, make_jobset
from tfjob_provider._jobset.view import read_jobset
from tfjob_provider.constants import LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE


def _slots(view_pods: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return sorted(
        (
            pod["metadata"]["labels"][LABEL_REPLICA_TYPE],
            pod["metadata"]["labels"][LABEL_REPLICA_INDEX],
            pod["metadata"]["name"],
        )
        for pod in view_pods
    )


def test_several_jobs_of_one_replicated_job_make_one_replica_type() -> None:
    """A JobSet written elsewhere: 2 worker Jobs of 2 pods each are workers 0-3."""
    jobset = make_jobset(worker=2)
    jobset["spec"]["replicatedJobs"][0]["replicas"] = 2
    jobs = [child_job(jobset, "worker", 0), child_job(jobset, "worker", 1)]
    pods = [jobset_pod("worker", index, job_index=job, phase="Running") for job in (0, 1) for index in (0, 1)]
    view = read_jobset(jobset, jobs, pods)
    assert view.tfjob["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 4
    assert [(kind, index) for kind, index, _ in _slots(view.pods)] == [
        ("worker", "0"),
        ("worker", "1"),
        ("worker", "2"),
        ("worker", "3"),
    ]


def test_an_index_written_unusually_is_read_as_its_number() -> None:
    jobset = make_jobset(worker=8)
    pod = jobset_pod("worker", 7, phase="Running")
    pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] = "07"
    del pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
    assert _slots(read_jobset(jobset, [child_job(jobset, "worker")], [pod]).pods)[0][:2] == ("worker", "7")


def test_the_completion_index_annotation_serves_before_kubernetes_1_28() -> None:
    jobset = make_jobset(worker=2)
    pod = jobset_pod("worker", 1, phase="Running")
    del pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]
    assert _slots(read_jobset(jobset, [child_job(jobset, "worker")], [pod]).pods)[0][:2] == ("worker", "1")


def test_pods_of_other_jobsets_and_without_an_index_are_left_out() -> None:
    jobset = make_jobset(worker=2)
    other = jobset_pod("worker", 0, jobset_name="other", phase="Running")
    unindexed = jobset_pod("worker", 1, phase="Running")
    del unindexed["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]
    del unindexed["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
    assert read_jobset(jobset, [child_job(jobset, "worker")], [other, unindexed]).pods == []


def test_an_unknown_replicated_job_is_a_replica_type_of_its_own() -> None:
    jobset = make_jobset(worker=2)
    extra = dict(jobset["spec"]["replicatedJobs"][0], name="sidecar-loader")
    jobset["spec"]["replicatedJobs"].append(extra)
    view = read_jobset(jobset, [], [])
    assert set(view.tfjob["spec"]["tfReplicaSpecs"]) == {"Worker", "sidecar-loader"}
