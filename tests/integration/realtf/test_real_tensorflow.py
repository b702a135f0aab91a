"""The three failure situations of distributed training, with real TensorFlow, through TFJobOperator.

Each test runs one DAG with ``dag.test()`` (real Airflow) against the sandbox started with
loopback TF_CONFIG, its replicas running ``example_dags/trainer --tensorflow`` with ``.venv-tf``'s
TensorFlow (tensorflow-cpu 2.21, Keras 3).  The layout is the flagship one — Chief + Workers + a
parameter server, ParameterServerStrategy — with the restart policy each replica type calls for:

* Worker ``ExitCode``: workers are stateless; a killed worker is recreated by the training
  operator and the chief's coordinator uses it again;
* PS and Chief ``Never``: a lost PS takes the variables with it and a lost chief the training
  loop, so the TFJob fails — retryably when the cause was a signal or a lost peer — and Airflow's
  next try resumes every replica from the last checkpoint.

Plus the MultiWorkerMirroredStrategy variant of the lost worker, under ``ExitCode`` everywhere:
there the survivors' collectives fail too, and they must exit with the retryable peer-lost
status (138) for the training operator to restart them instead of failing the job.

The three situations of the seed (a lost worker recovered, a lost PS retried, a chief's program
error failing for good) also run with ``backend="jobset"``: the same DAG, on the JobSet and Job
controllers, with the same Airflow endings.

Replicas are killed both from outside (the sandbox's ``kill_process`` fault: SIGKILL of the pod's
process, exit 137) and by the trainer itself (``--fail-at-step``).  Steps are tiny; most of the
time goes to importing TensorFlow in every replica process (seconds of CPU each).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.realtf.scenario import replica, resumed_step, run_scenario

STEPS = 6
#: Seconds per step: long enough for a kill from outside to land mid-training.
PACE = ["--steps", str(STEPS), "--step-seconds", "1"]
PS_LAYOUT = {"chief": replica(1, "Never"), "worker": replica(2, "ExitCode"), "ps": replica(1, "Never")}
SMALL_PS_LAYOUT = {"chief": replica(1, "Never"), "worker": replica(1, "ExitCode"), "ps": replica(1, "Never")}
FINISHED = f"training finished: {STEPS}/{STEPS} steps"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
BACKENDS = pytest.mark.parametrize("backend", ["tfjob", "jobset"])


@BACKENDS
def test_a_killed_worker_is_recreated_and_training_goes_on_within_the_first_try(
    tf_cluster: Any, dags_folder: Path, tmp_path: Path, tf_python: Path, backend: str
) -> None:
    run = run_scenario(
        tf_cluster,
        dags_folder,
        tmp_path,
        tf_python,
        name="rtf-worker-lost",
        replicas=PS_LAYOUT,
        trainer_args=PACE,
        kill=("worker-1", 2),
        backend=backend,
    )
    assert run.killed == "worker-1", "the worker was never killed"
    assert (run.task.state, run.task.try_number) == ("success", 1), run.failures
    assert run.condition("succeeded"), (run.job or {}).get("status")
    result = run.result()
    assert result is not None and result["state"] == "Succeeded"
    assert result["recreations"].get("Worker", 0) >= 1, result  # the killed worker came back
    assert FINISHED in run.chief_log, run.chief_log
    assert resumed_step(run.chief_log) is None, "the chief itself never restarted"
    print(f"worker lost ({backend}): {run.seconds:.0f}s")


@BACKENDS
def test_a_killed_ps_fails_the_job_retryably_and_the_retry_resumes_from_the_checkpoint(
    tf_cluster: Any, dags_folder: Path, tmp_path: Path, tf_python: Path, backend: str
) -> None:
    run = run_scenario(
        tf_cluster,
        dags_folder,
        tmp_path,
        tf_python,
        name="rtf-ps-lost",
        replicas=PS_LAYOUT,
        trainer_args=PACE,
        kill=("ps-0", 2),
        backend=backend,
    )
    assert run.killed == "ps-0", "the PS was never killed"
    assert (run.task.state, run.task.try_number) == ("success", 2), run.failures
    [first] = run.failures
    failure = first["failure"]
    assert (first["try_number"], failure["reason"], failure["retryable"]) == (1, "RetryableExitCode", True)
    assert any("-ps-0" in culprit for culprit in failure["culprits"]), failure
    assert run.condition("succeeded"), (run.job or {}).get("status")
    resumed = resumed_step(run.chief_log)
    assert resumed is not None and resumed >= 2, run.chief_log
    assert FINISHED in run.chief_log, run.chief_log
    print(f"PS lost ({backend}): {run.seconds:.0f}s, resumed at step {resumed}")


def test_a_chief_killed_by_a_signal_is_retried_and_resumes(
    tf_cluster: Any, dags_folder: Path, tmp_path: Path, tf_python: Path
) -> None:
    crash = ["--fail-at-step", "3", "--exit-code", "137", "--fail-replica", "chief:0"]
    crash += ["--fail-if-env", "AIRFLOW_TRY_NUMBER=1"]
    run = run_scenario(
        tf_cluster,
        dags_folder,
        tmp_path,
        tf_python,
        name="rtf-chief-killed",
        replicas=SMALL_PS_LAYOUT,
        trainer_args=[*PACE, *crash],
    )
    assert (run.task.state, run.task.try_number) == ("success", 2), run.failures
    [first] = run.failures
    failure = first["failure"]
    assert (first["try_number"], failure["reason"], failure["retryable"]) == (1, "RetryableExitCode", True)
    assert failure["culprits"][0].endswith("-chief-0"), failure
    assert run.condition("succeeded"), (run.job or {}).get("status")
    assert resumed_step(run.chief_log) == 2, run.chief_log  # steps 1-2 done before the crash at 3
    assert FINISHED in run.chief_log, run.chief_log
    print(f"chief killed: {run.seconds:.0f}s")


@BACKENDS
def test_a_chief_program_error_fails_for_good_without_using_the_retries(
    tf_cluster: Any, dags_folder: Path, tmp_path: Path, tf_python: Path, backend: str
) -> None:
    crash = ["--fail-at-step", "2", "--exit-code", "1", "--fail-replica", "chief:0"]
    run = run_scenario(
        tf_cluster,
        dags_folder,
        tmp_path,
        tf_python,
        name="rtf-chief-error",
        replicas=SMALL_PS_LAYOUT,
        trainer_args=[*PACE, *crash],
        backend=backend,
    )
    assert (run.task.state, run.task.try_number, run.task.max_tries) == ("failed", 1, 1), run.failures
    [only] = run.failures
    failure = only["failure"]
    assert (failure["reason"], failure["retryable"]) == ("PermanentExitCode", False), failure
    assert "-chief-0" in failure["culprits"][0], failure
    # The failure report carries the chief's last log lines.  The job is kept Failed, unless
    # its PS and worker were still running when the task judged it; then the task deleted it.
    assert "simulated crash at step 2/6: exiting with status 1" in failure["report"], failure["report"]
    assert run.job is None or run.condition("failed"), run.job
    print(f"chief program error ({backend}): {run.seconds:.0f}s")


def test_multi_worker_mirrored_survives_a_lost_worker_under_exit_code(
    tf_cluster: Any, dags_folder: Path, tmp_path: Path, tf_python: Path
) -> None:
    crash = ["--fail-at-step", "3", "--exit-code", "137", "--fail-replica", "worker:0", "--fail-once"]
    run = run_scenario(
        tf_cluster,
        dags_folder,
        tmp_path,
        tf_python,
        name="rtf-mirrored",
        replicas={"chief": replica(1, "ExitCode"), "worker": replica(1, "ExitCode")},
        trainer_args=[*PACE, *crash],
    )
    assert (run.task.state, run.task.try_number) == ("success", 1), run.failures
    assert run.condition("succeeded"), (run.job or {}).get("status")
    result = run.result()
    assert result is not None
    # The worker was killed (137) and the chief lost its peer (138): both were recreated.
    assert result["recreations"].get("Worker", 0) >= 1 and result["recreations"].get("Chief", 0) >= 1, result
    resumed = resumed_step(run.chief_log)
    assert resumed is not None and resumed >= 2, run.chief_log
    assert FINISHED in run.chief_log, run.chief_log
    print(f"MultiWorkerMirrored worker lost: {run.seconds:.0f}s, resumed at step {resumed}")
