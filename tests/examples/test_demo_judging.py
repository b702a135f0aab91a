"""How the demo judges a scenario and words it: verdicts from the log, evaluation, the summary."""

from __future__ import annotations

from demo.observer import ReplicaRow, TFJobRecord
from demo.outcomes import LoggedVerdict, RunRecord, TaskRecord, logged_failures
from demo.scenarios import SCENARIOS, Attempt, Evidence, evaluate
from demo.summary import ScenarioResult, render_summary

TRANSIENT = next(s for s in SCENARIOS if s.key == "transient")
PERMANENT = next(s for s in SCENARIOS if s.key == "permanent")


def rows(*specs: tuple[str, int, str, tuple[int | None, ...]]) -> list[ReplicaRow]:
    return [
        ReplicaRow(
            replica_type=t, index=i, phase=p, exit_codes=codes, restarts=len(codes) - 1, instances=len(codes)
        )
        for t, i, p, codes in specs
    ]


def job(uid: str) -> TFJobRecord:
    return TFJobRecord(name="tfjob-retry-po-transient-fail-abc", uid=uid, created=uid, namespace="default")


def transient_evidence(*, try_number: int = 2, first_exit: int = 137) -> Evidence:
    task = TaskRecord(task_id=TRANSIENT.task_id, state="success", try_number=try_number, max_tries=2)
    return Evidence(
        scenario=TRANSIENT,
        run=RunRecord(dag_id=TRANSIENT.dag_id, run_id="r", state="failed", tasks={task.task_id: task}),
        task=task,
        attempts=[
            Attempt(
                job=job("uid-1"),
                try_number=1,
                rows=rows(("Chief", 0, "Failed", (143,)), ("Worker", 1, "Failed", (first_exit,))),
                state="Failed",
                reason="RetryableExitCode",
                kind="retryable",
                message=f"TFJob default/{job('x').name} failed: Worker replica 1 exited with 137.",
            ),
            Attempt(
                job=job("uid-2"),
                try_number=2,
                rows=rows(("Chief", 0, "Succeeded", (0,)), ("Worker", 1, "Succeeded", (0,))),
                state="Succeeded",
                reason="ChiefSucceeded",
                message="TFJob default/tfjob-retry-po-transient-fail-abc succeeded: Chief completed.",
            ),
        ],
        result={"uid": "uid-2", "state": "Succeeded", "reason": "ChiefSucceeded"},
    )


def test_failure_verdicts_are_read_from_the_exception_lines() -> None:
    log = "\n".join(
        [
            "2026-01-01T00:00:00Z [info] something else",
            "airflow.sdk.exceptions.AirflowFailException: TFJob default/job-a failed: Worker replica 0 "
            "(pod job-a-worker-0) exited with code 3. [PermanentExitCode, permanent]",
            "airflow.sdk.exceptions.AirflowException: TFJob team/job-b failed: Worker replica 1 exited with "
            "code 137 (SIGKILL). [RetryableExitCode, retryable]",
        ]
    )
    assert logged_failures(log) == [
        LoggedVerdict(
            job="job-a",
            namespace="default",
            reason="PermanentExitCode",
            kind="permanent",
            message="TFJob default/job-a failed: Worker replica 0 (pod job-a-worker-0) exited with code 3.",
            exception="AirflowFailException",
        ),
        LoggedVerdict(
            job="job-b",
            namespace="team",
            reason="RetryableExitCode",
            kind="retryable",
            message="TFJob team/job-b failed: Worker replica 1 exited with code 137 (SIGKILL).",
            exception="AirflowException",
        ),
    ]


def test_a_scenario_that_ended_as_expected_has_no_problems() -> None:
    assert evaluate(transient_evidence()) == []


def test_every_difference_is_named() -> None:
    evidence = transient_evidence(try_number=3, first_exit=1)
    assert evaluate(evidence) == [
        "task ended success on try 3, expected success on try 2",
        "Worker 1 exited 1, expected 137",
    ]


def test_missing_tfjobs_and_wrong_verdicts_are_named() -> None:
    task = TaskRecord(task_id=PERMANENT.task_id, state="up_for_retry", try_number=1, max_tries=2)
    evidence = Evidence(
        scenario=PERMANENT,
        run=None,
        task=task,
        attempts=[
            Attempt(
                job=job("u"),
                try_number=1,
                rows=[],
                state="Failed",
                reason="RetryableExitCode",
                kind="retryable",
            )
        ],
        result=None,
    )
    assert evaluate(evidence) == [
        "task ended up_for_retry on try 1, expected failed on try 1",
        "TFJob 1: verdict Failed RetryableExitCode retryable, expected Failed PermanentExitCode permanent",
        "Worker 0 was never seen",
    ]


def test_summary_shows_airflow_tries_the_tfjobs_their_verdicts_and_replicas() -> None:
    passed = ScenarioResult(evidence=transient_evidence(), problems=[])
    failed = ScenarioResult(
        evidence=transient_evidence(try_number=3), problems=["task ended success on try 3"]
    )
    text = render_summary([passed, failed], title="demo", notes=["No process left behind."])
    lines = text.splitlines()
    assert f"PASS  {TRANSIENT.title}" in lines
    assert f"FAIL  {TRANSIENT.title}" in lines
    assert any("success on try 2 (1 of 2 retries used)" in line for line in lines)
    assert any(
        line.strip().startswith("TFJob 1/2 default/tfjob-retry-po-transient-fail-abc  uid uid-1")
        for line in lines
    )
    assert any(
        line.strip() == "verdict   Failed (RetryableExitCode, retryable): Worker replica 1 exited with 137."
        for line in lines
    )
    assert any(line.split() == ["Worker", "1", "Failed", "137", "0"] for line in lines)
    assert "      !! task ended success on try 3" in lines
    assert lines[-2] == f"1 of 2 scenarios did NOT end as expected: {TRANSIENT.key}"


def test_the_demo_reads_the_xcom_keys_the_provider_pushes() -> None:
    from demo.outcomes import XCOM_TFJOB_FAILURE, XCOM_TFJOB_NAME
    from tfjob_provider._outcome.task_ending import XCOM_FAILURE
    from tfjob_provider.links import XCOM_NAME

    assert (XCOM_TFJOB_NAME, XCOM_TFJOB_FAILURE) == (XCOM_NAME, XCOM_FAILURE)


def test_the_demo_process_does_not_import_airflow() -> None:
    import subprocess
    import sys

    probe = "import sys, demo.__main__; print(sorted(m for m in sys.modules if m == 'airflow'))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


ASSET = next(s for s in SCENARIOS if s.key == "asset")


def asset_evidence(*, source_run_id: str = "train-run", run_type: str = "asset_triggered") -> Evidence:
    from demo.outcomes import ConsumedEvent, TriggeredRun

    task = TaskRecord(task_id=ASSET.task_id, state="success", try_number=1, max_tries=1)
    outputs = {"model_uri": "file:///m/model", "loss": 0.19}
    return Evidence(
        scenario=ASSET,
        run=RunRecord(dag_id=ASSET.dag_id, run_id="train-run", state="success", tasks={task.task_id: task}),
        task=task,
        attempts=[
            Attempt(
                job=job("uid-7"),
                try_number=1,
                rows=rows(("Chief", 0, "Succeeded", (0,))),
                state="Succeeded",
                reason="ChiefSucceeded",
            )
        ],
        result={"uid": "uid-7", "outputs": outputs},
        triggered=TriggeredRun(
            dag_id="deploy_model",
            run_id="asset_triggered__x",
            run_type=run_type,
            task_state="success",
            consumed=[ConsumedEvent(ASSET.dag_id, source_run_id, ASSET.task_id, {"outputs": outputs})],
            result={**outputs, "tfjob_uid": "uid-7"},
        ),
    )


def test_the_asset_scenario_passes_only_for_a_deploy_run_triggered_by_this_training() -> None:
    assert evaluate(asset_evidence()) == []
    assert evaluate(asset_evidence(source_run_id="another-run")) == [
        "deploy_model consumed events of [\"('tfjob_model_training', 'another-run', 'train')\"], "
        "not of this training"
    ]
    assert evaluate(asset_evidence(run_type="manual")) == [
        "deploy_model run asset_triggered__x is manual, not asset_triggered"
    ]
    summary = render_summary([ScenarioResult(asset_evidence(), [])], title="t")
    assert (
        "Asset     deploy_model run asset_triggered__x (asset_triggered), triggered by the asset event "
        "of tfjob_model_training run train-run task train"
    ) in summary
    assert "model file:///m/model, loss 0.19, TFJob uid uid-7" in summary
