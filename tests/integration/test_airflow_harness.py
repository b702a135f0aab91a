"""The harness itself: dag.test() on the temporary AIRFLOW_HOME runs real tasks and reports states."""

from __future__ import annotations

from pathlib import Path

from tests.integration.airflow_harness import load_dag, run_dag, write_dag_file


def test_dag_test_runs_a_task_and_reports_failure_without_retry(dags_folder: Path) -> None:
    path = write_dag_file(
        dags_folder,
        "harness_probe",
        """
        from __future__ import annotations
        import datetime
        from airflow.providers.common.compat.sdk import AirflowFailException
        from airflow.sdk import DAG, task

        with DAG("harness_probe", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
            @task
            def ok() -> int:
                return 7

            @task(retries=2)
            def fail_for_good() -> None:
                raise AirflowFailException("permanent")

            ok()
            fail_for_good()
        """,
    )
    outcome = run_dag(load_dag(path, "harness_probe"))
    assert outcome.task("ok").state == "success"
    assert outcome.task("fail_for_good").state == "failed"
    assert outcome.task("fail_for_good").try_number == 1
    assert outcome.state == "failed"
