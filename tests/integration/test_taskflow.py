"""``@task.tfjob`` end to end with real Airflow and the sandbox: the function runs in every replica,
the chief's return value is the task's XCom, and each way it can end maps onto the verdict rules.

The "image" is the test's own interpreter (``interpreter=sys.executable``): the sandbox runs pods as
local processes, so a local Python stands in for the image's.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.airflow_harness import load_dag, run_dag, write_dag_file, xcom_value
from tests.integration.trigger_helpers import tfjob_exists

PIPELINE_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import dag, task


@dag(dag_id="{dag_id}", schedule=None, start_date=datetime.datetime(2024, 1, 1))
def pipeline():
    @task
    def prepare() -> str:
        return "file:///data/shard-7"

    @task.tfjob(
        image="python:3.11",
        interpreter={python!r},
        chief=1,
        worker=2,
        ps=1,
        restart_policy="ExitCode",
        deferrable={deferrable},
        poll_interval=1,
        retries=2,
    )
    def train(data_uri: str, steps: int = 1000) -> dict:
        import json
        import os

        role = json.loads(os.environ["TF_CONFIG"])["task"]
        return {{"data_uri": data_uri, "steps": steps, "role": role["type"], "loss": 0.12}}

    @task
    def report(metrics: dict) -> str:
        return f"{{metrics['role']}} trained {{metrics['steps']}} steps on {{metrics['data_uri']}}"

    report(train(prepare(), steps=25))


the_dag = pipeline()
"""


@pytest.mark.parametrize("deferrable", [False, True], ids=["sync", "deferred"])
def test_the_chiefs_return_value_reaches_the_downstream_task(
    cluster: Any, dags_folder: Path, deferrable: bool
) -> None:
    dag_id = f"taskflow_{'deferred' if deferrable else 'sync'}"
    source = PIPELINE_DAG.format(dag_id=dag_id, python=sys.executable, deferrable=deferrable)
    outcome = run_dag(load_dag(write_dag_file(dags_folder, dag_id, source), dag_id))
    assert outcome.task("train").state == "success"
    returned = {"data_uri": "file:///data/shard-7", "steps": 25, "role": "chief", "loss": 0.12}
    assert xcom_value(outcome, "train") == returned
    assert xcom_value(outcome, "report") == "chief trained 25 steps on file:///data/shard-7"
    result = xcom_value(outcome, "train", "tfjob_result")
    assert result["state"] == "Succeeded" and result["outputs"] == returned
    # The chief decides as soon as it returns; workers still running then are stopped by the operator.
    assert set(result["replicas"]) == {"Chief", "Worker", "PS"} and result["recreation_count"] == 0


ENDINGS_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import dag, task


@dag(dag_id="taskflow_endings", schedule=None, start_date=datetime.datetime(2024, 1, 1))
def endings():
    @task.tfjob(image="python:3.11", interpreter={python!r}, worker=2, retries=2, poll_interval=1)
    def crashes() -> dict:
        raise ValueError("learning rate must be positive")

    @task.tfjob(image="python:3.11", interpreter={python!r}, worker=1, retries=2, poll_interval=1)
    def flaky(marker_dir: str) -> dict:
        import os

        from tfjob_provider.training import RetryableTrainingError

        marker = os.path.join(marker_dir, "first-try")
        if not os.path.exists(marker):
            open(marker, "w").close()
            raise RetryableTrainingError("the data source timed out")
        return {{"attempts": 2}}

    @task.tfjob(image="python:3.11", interpreter={python!r}, worker=1, retries=2, poll_interval=1)
    def unreturnable() -> object:
        return {{"model": object()}}

    crashes()
    flaky({marker_dir!r})
    unreturnable()


the_dag = endings()
"""


def test_exceptions_and_unreturnable_values_end_the_task_as_the_verdict_rules_say(
    cluster: Any, dags_folder: Path, tmp_path: Path
) -> None:
    source = ENDINGS_DAG.format(python=sys.executable, marker_dir=str(tmp_path))
    outcome = run_dag(load_dag(write_dag_file(dags_folder, "taskflow_endings", source), "taskflow_endings"))
    # An uncaught exception: exit code 1, permanent under Never — retries unused.
    assert (outcome.task("crashes").state, outcome.task("crashes").try_number) == ("failed", 1)
    summary = xcom_value(outcome, "crashes", "tfjob_failure")
    assert summary["retryable"] is False and "exited with code 1" in summary["message"]
    assert "ValueError: learning rate must be positive" in summary["report"]
    # RetryableTrainingError: exit code 200, retryable — the second try succeeds.
    assert (outcome.task("flaky").state, outcome.task("flaky").try_number) == ("success", 2)
    assert xcom_value(outcome, "flaky") == {"attempts": 2}
    # A return value that cannot be an XCom fails the deciding replica, telling to return a URI.
    assert (outcome.task("unreturnable").state, outcome.task("unreturnable").try_number) == ("failed", 1)
    report = xcom_value(outcome, "unreturnable", "tfjob_failure")["report"]
    assert "not JSON-serialisable" in report and "return their URI instead" in report


BAD_ARGUMENT_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import dag, task


@dag(dag_id="taskflow_bad_argument", schedule=None, start_date=datetime.datetime(2024, 1, 1))
def bad_argument():
    @task
    def when() -> datetime.date:
        return datetime.date(2024, 1, 1)  # an XCom Airflow can store, but not JSON

    @task.tfjob(image="python:3.11", interpreter={python!r}, worker=1, retries=2, job_name="never-submitted")
    def train(day: str, weights: float) -> None:
        return None

    train(when(), weights=0.5)


the_dag = bad_argument()
"""


def test_a_non_json_argument_fails_before_any_tfjob_is_submitted(
    cluster: Any, dags_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = BAD_ARGUMENT_DAG.format(python=sys.executable)
    path = write_dag_file(dags_folder, "taskflow_bad_argument", source)
    outcome = run_dag(load_dag(path, "taskflow_bad_argument"))
    assert (outcome.task("train").state, outcome.task("train").try_number) == ("failed", 1)
    assert xcom_value(outcome, "train", "tfjob_name") is None
    assert not tfjob_exists("never-submitted")
    expected = "got argument 'day' datetime.date(2024, 1, 1) of type date, which is not JSON"
    assert expected in capsys.readouterr().out


def _closure_factory() -> Any:
    scale = 2

    def scaled() -> int:
        return scale

    return scaled


def top_level_without_imports() -> str:
    return json.dumps({})  # type: ignore[name-defined]  # noqa: F821 - the point of the test


@pytest.mark.parametrize(
    ("function", "message"),
    [
        (lambda: 1, "is a lambda"),
        (_closure_factory(), "is a closure: it reads scale"),
        (top_level_without_imports, "uses json without importing or defining it"),
    ],
)
def test_functions_that_cannot_run_in_a_pod_fail_when_the_dag_is_parsed(
    airflow_db: None, function: Any, message: str
) -> None:
    import datetime

    from airflow.sdk import DAG, task

    start = datetime.datetime(2024, 1, 1)
    with pytest.raises(ValueError, match=message), DAG("taskflow_refused", schedule=None, start_date=start):
        task.tfjob(image="python:3.11", worker=1, task_id="refused")(function)()


def test_own_program_parameters_are_refused(airflow_db: None) -> None:
    import datetime

    from airflow.sdk import DAG, task

    def train() -> None:
        return None

    start = datetime.datetime(2024, 1, 1)
    with (
        pytest.raises(ValueError, match="command cannot be given"),
        DAG("t1", schedule=None, start_date=start),
    ):
        task.tfjob(image="python:3.11", command=["python"])(train)()
    with pytest.raises(ValueError, match="needs image="), DAG("t2", schedule=None, start_date=start):
        task.tfjob(worker=1)(train)()
