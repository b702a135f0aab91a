"""The failure report and result dict: culprit first, bounded, and built from API-shaped dicts only."""

from __future__ import annotations

from datetime import timedelta

from tests.unit.factories import JOB_NAME, NAMESPACE, NOW, condition, make_pod, make_tfjob, rfc3339
from tfjob_provider._outcome.report import (
    MAX_CULPRIT_LOGS,
    MAX_REPORT_EVENTS,
    describe_pod,
    failure_report,
    job_times,
    log_pod_for,
    logs_to_fetch,
    relevant_events,
    result_dict,
)
from tfjob_provider.policy import ReplicaSummary, Verdict, VerdictState, decide


def _event(reason: str, *, kind: str = "Warning", name: str = "mnist-worker-1", minute: int = 0) -> dict:
    return {
        "type": kind,
        "reason": reason,
        "message": f"{reason} happened",
        "involvedObject": {"kind": "Pod", "name": name},
        "lastTimestamp": rfc3339(NOW + timedelta(minutes=minute)),
        "count": 1,
    }


def test_describe_pod_reads_exit_code_reason_and_termination_message() -> None:
    pod = make_pod("Worker", 1, phase="Failed", exit_code=3, terminated_message="CUDA out of memory")
    facts = describe_pod(pod)
    assert (facts.pod, facts.replica, facts.exit_code) == ("mnist-worker-1", "Worker 1", 3)
    assert (facts.reason, facts.message, facts.restarted_in_place) == ("Error", "CUDA out of memory", False)


def test_describe_pod_uses_the_last_termination_after_an_in_place_restart() -> None:
    pod = make_pod("Worker", 0, phase="Running", restarts=2, last_exit_code=137, last_reason="OOMKilled")
    facts = describe_pod(pod)
    assert (facts.exit_code, facts.reason, facts.restarts, facts.restarted_in_place) == (
        137,
        "OOMKilled",
        2,
        True,
    )


def test_describe_pod_falls_back_to_waiting_and_pod_reasons() -> None:
    assert (
        describe_pod(make_pod("Chief", phase="Pending", waiting="ImagePullBackOff")).reason
        == "ImagePullBackOff"
    )
    evicted = make_pod(
        "PS", phase="Failed", exit_code=None, pod_reason="Evicted", pod_message="low on memory"
    )
    facts = describe_pod(evicted)
    assert (facts.exit_code, facts.reason, facts.message) == (None, "Evicted", "low on memory")


def test_describe_pod_never_raises_on_odd_shapes() -> None:
    facts = describe_pod({"metadata": None, "status": {"containerStatuses": "nope"}})
    assert (facts.pod, facts.replica, facts.exit_code, facts.reason) == ("?", "?", None, None)


def test_failure_report_leads_with_the_culprit_and_its_log_tail() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 2}, restart_policy="ExitCode")
    pods = [
        make_pod("Chief"),
        make_pod("Worker", 0),
        make_pod("Worker", 1, phase="Failed", exit_code=3, terminated_message="bad input file"),
    ]
    verdict = decide(job, pods, now=NOW)
    assert verdict.state is VerdictState.FAILED and verdict.culprits == ("mnist-worker-1",)
    events = [
        _event("BackOff"),
        _event("Scheduled", kind="Normal"),
        _event("Killing", kind="Normal", minute=1),
    ]
    report = failure_report(
        name=JOB_NAME,
        namespace=NAMESPACE,
        verdict=verdict,
        pods=pods,
        events=events,
        logs={"mnist-worker-1": "loading data\nTraceback: FileNotFoundError\n"},
    )
    lines = report.splitlines()
    assert lines[0].startswith(f"TFJob {NAMESPACE}/{JOB_NAME} failed: ")
    assert "permanent — not retried" in lines[1]
    assert lines[2] == "Culprit 1: Worker 1 — pod mnist-worker-1"
    assert "  exit code: 3" in lines and "  Kubernetes reason: Error" in lines
    assert "  termination message: bad input file" in lines
    assert lines.index("    | Traceback: FileNotFoundError") > lines.index("  exit code: 3")
    assert any(line.startswith("  Worker: active 1") for line in lines)
    shown_events = [line for line in lines if "pod/mnist-worker-1" in line]
    assert [line.split()[2] for line in shown_events] == [
        "BackOff:",
        "Killing:",
    ]  # Normal "Scheduled" dropped


def test_failure_report_names_culprits_whose_pod_is_gone() -> None:
    verdict = Verdict(
        state=VerdictState.FAILED, retryable=True, reason="Evicted", message="evicted", culprits=("gone-pod",)
    )
    report = failure_report(name="j", namespace="ns", verdict=verdict, pods=[])
    assert "Culprit 1: pod gone-pod (no longer exists)" in report
    assert "retryable — Airflow may retry the task" in report


def test_logs_to_fetch_is_bounded_skips_missing_pods_and_asks_for_the_previous_container() -> None:
    pods = [make_pod("Worker", i, phase="Running", restarts=1, last_exit_code=1) for i in range(6)]
    culprits = ("missing", *(f"mnist-worker-{i}" for i in range(6)))
    verdict = Verdict(state=VerdictState.FAILED, retryable=False, reason="x", message="x", culprits=culprits)
    wanted = logs_to_fetch(verdict, pods)
    assert [item.pod for item in wanted] == [f"mnist-worker-{i}" for i in range(MAX_CULPRIT_LOGS)]
    assert all(item.previous for item in wanted)


def test_log_pod_is_the_chief_else_worker_zero() -> None:
    assert log_pod_for([make_pod("Worker", 0), make_pod("Chief")])["metadata"]["name"] == "mnist-chief-0"
    assert log_pod_for([make_pod("PS"), make_pod("Worker", 1), make_pod("Worker", 0)])["metadata"][
        "name"
    ] == ("mnist-worker-0")
    assert log_pod_for([make_pod("PS")]) is None


def test_relevant_events_keep_warnings_and_telling_normals_most_recent_last() -> None:
    events = [_event("FailedScheduling", minute=i) for i in range(MAX_REPORT_EVENTS + 5)]
    events.append(_event("Pulled", kind="Normal", minute=99))
    kept = relevant_events(events)
    assert len(kept) == MAX_REPORT_EVENTS
    assert kept[-1]["lastTimestamp"] == rfc3339(NOW + timedelta(minutes=MAX_REPORT_EVENTS + 4))


def test_result_dict_sums_restarts_and_lists_the_deciding_pods() -> None:
    verdict = Verdict(
        state=VerdictState.SUCCEEDED,
        retryable=False,
        reason="ChiefSucceeded",
        message="chief done",
        culprits=("mnist-chief-0",),
        replicas={
            "Chief": ReplicaSummary(succeeded=1, restarts=1),
            "Worker": ReplicaSummary(active=2, restarts=3),
        },
    )
    result = result_dict(
        name="mnist",
        namespace="ml",
        uid="u-1",
        verdict=verdict,
        start_time="s",
        completion_time="c",
        outputs={"loss": 0.5},
        recreations={"Worker": 2},
    )
    assert result == {
        "name": "mnist",
        "namespace": "ml",
        "uid": "u-1",
        "state": "Succeeded",
        "reason": "ChiefSucceeded",
        "message": "chief done",
        "start_time": "s",
        "completion_time": "c",
        "replicas": {
            "Chief": {"active": 0, "succeeded": 1, "failed": 0, "pending": 0, "restarts": 1},
            "Worker": {"active": 2, "succeeded": 0, "failed": 0, "pending": 0, "restarts": 3},
        },
        "restart_count": 4,
        "recreations": {"Chief": 0, "Worker": 2},
        "recreation_count": 2,
        "deciding_pods": ["mnist-chief-0"],
        "outputs": {"loss": 0.5},
    }
    assert any(summary.active or summary.pending for summary in verdict.replicas.values())


def test_job_times_prefer_the_operator_and_fall_back_to_the_deciding_pod() -> None:
    chief_done = NOW - timedelta(seconds=30)
    pods = [make_pod("Chief", phase="Succeeded", finished_at=chief_done), make_pod("Worker", 0)]
    job = make_tfjob({"Chief": 1, "Worker": 1})
    verdict = decide(job, pods, now=NOW)
    assert job_times(job, verdict=verdict, pods=pods) == (
        rfc3339(NOW - timedelta(minutes=10)),
        rfc3339(chief_done),
    )
    job["status"]["completionTime"] = "2025-03-01T12:00:00Z"
    job["status"]["conditions"].append(condition("Succeeded"))
    assert job_times(job, verdict=verdict, pods=pods)[1] == "2025-03-01T12:00:00Z"
