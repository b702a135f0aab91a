"""The example DAGs import cleanly — no import errors, no warnings — as Airflow's DAG processor sees them.

``BundleDagBag`` is what the dag-processor and ``airflow dags test`` use: it puts the bundle root
(``example_dags/``) on ``sys.path``, which is how the DAGs find ``tfjob_example_settings``.  The
checks on each DAG pin what its docstring promises, so an edit that quietly changes a scenario
(e.g. drops ``deferrable``) fails here rather than in the demo.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from tests.dagbag import parse_dag_folder
from tests.examples.conftest import EXAMPLE_DAGS

EXPECTED_DAGS = {
    "deploy_model",
    "tfjob_model_training",
    "tfjob_distributed_training",
    "tfjob_from_yaml",
    "tfjob_on_jobset",
    "tfjob_retry_policies",
    "tfjob_sensor",
    "tfjob_taskflow",
}


@pytest.fixture(scope="module")
def dagbag() -> Any:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bag = parse_dag_folder(EXAMPLE_DAGS, bundle_name="dags-folder")
    bag.test_warnings = [f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})" for w in caught]
    return bag


def test_every_example_imports_without_errors_or_warnings(dagbag: Any) -> None:
    assert dagbag.import_errors == {}
    assert dagbag.captured_warnings == {}
    assert dagbag.test_warnings == []
    assert set(dagbag.dag_ids) == EXPECTED_DAGS


def test_distributed_training_is_chief_two_workers_one_ps_deferred_and_feeds_a_task(dagbag: Any) -> None:
    dag = dagbag.dags["tfjob_distributed_training"]
    train = dag.get_task("train")
    assert (train.chief, train.worker, train.ps, train.restart_policy) == (1, 2, 1, "ExitCode")
    assert train.deferrable and train.get_logs
    assert train.retries == 2
    assert dag.get_task("register_model").upstream_task_ids == {"train"}
    assert train.multiple_outputs, 'train.output["outputs"] needs one XCom per result key'


def test_taskflow_runs_a_function_as_chief_two_workers_one_ps_and_feeds_a_task(dagbag: Any) -> None:
    dag = dagbag.dags["tfjob_taskflow"]
    train = dag.get_task("train")
    assert type(train).__name__ == "_TFJobDecoratedOperator" and train.function_name == "train"
    assert (train.chief, train.worker, train.ps, train.restart_policy) == (1, 2, 1, "ExitCode")
    assert train.deferrable and train.retries == 2
    assert train.upstream_task_ids == {"pick_data"}
    assert dag.get_task("show_metrics").upstream_task_ids == {"train"}
    assert train.op_kwargs == {"steps": "{{ params.steps }}"}


def test_model_asset_pair_trains_into_an_asset_that_schedules_deploy_model(dagbag: Any) -> None:
    train = dagbag.dags["tfjob_model_training"].get_task("train")
    assert [type(outlet).__name__ for outlet in train.outlets] == ["Asset", "AssetAlias"]
    assert train.output_asset_keys == ("model_uri",)
    deploy = dagbag.dags["deploy_model"]
    assert [asset.name for asset in deploy.timetable.asset_condition.objects] == [train.outlets[0].name]
    assert deploy.task_ids == ["show_model"]


def test_from_yaml_uses_a_templated_yaml_file(dagbag: Any) -> None:
    task = dagbag.dags["tfjob_from_yaml"].get_task("train_from_yaml")
    assert ".yaml" in task.template_ext
    # Airflow reads a template file when the DAG is parsed (resolve_template_files) and renders it per run.
    text = (EXAMPLE_DAGS / "tfjobs" / "nightly_training.yaml").read_text()
    assert task.tfjob == text
    assert "{{ ds }}" in text and "{{ params.workers }}" in text


def test_sensor_dag_submits_without_waiting_then_defers(dagbag: Any) -> None:
    dag = dagbag.dags["tfjob_sensor"]
    submit, wait = dag.get_task("submit"), dag.get_task("wait_for_training")
    assert submit.wait_for_completion is False
    assert wait.deferrable is True
    assert wait.upstream_task_ids == {"submit"}


def test_retry_policies_cover_the_three_failure_kinds(dagbag: Any) -> None:
    dag = dagbag.dags["tfjob_retry_policies"]
    recover = dag.get_task("crash_recovers_inside_tfjob")
    permanent = dag.get_task("permanent_error_fails_fast")
    transient = dag.get_task("transient_failure_retried_by_airflow")
    assert all(task.retries == 2 and task.deferrable for task in (recover, permanent, transient))
    assert (recover.restart_policy, permanent.restart_policy, transient.restart_policy) == (
        "ExitCode",
        "ExitCode",
        "Never",
    )
    assert "--fail-once" in recover.args and "137" in recover.args
    assert "3" in permanent.args[permanent.args.index("--exit-code") + 1 :][:1]
    assert transient.env == {"AIRFLOW_TRY_NUMBER": "{{ ti.try_number }}"}
    assert "AIRFLOW_TRY_NUMBER=1" in transient.args


def test_every_typed_example_passes_the_framework_variable_to_the_trainer(dagbag: Any) -> None:
    """One Variable (``tfjob_example_framework``) switches every example to real TensorFlow."""
    framework = "{{ var.value.get('tfjob_example_framework', 'python') }}"
    typed = [
        task
        for dag in dagbag.dags.values()
        for task in dag.tasks
        if getattr(task, "args", None) and "--checkpoint-dir" in task.args
    ]
    assert len(typed) >= 4
    for task in typed:
        assert task.args[task.args.index("--framework") + 1] == framework, task.task_id
    yaml = (EXAMPLE_DAGS / "tfjobs" / "nightly_training.yaml").read_text()
    assert f'- --framework\n                - "{framework}"' in yaml
