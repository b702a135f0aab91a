"""The trainer end to end: exit statuses, log lines, resume from checkpoints, PS and evaluator life cycle."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import trainer.tensorflow_training
from trainer.checkpoints import DONE_MARKER, Checkpoint, CheckpointStore, finished_marker
from trainer.options import TrainerOptions, parse_options
from trainer.program import main
from trainer.tf_config import ClusterRole
from trainer.training import (
    HEARTBEAT_SECONDS,
    SYNC_TIMEOUT_EXIT,
    ReplicaLog,
    loss_at,
    serve,
    train,
    training_peers,
)

from tests.examples.conftest import EXAMPLE_DAGS

CLUSTER = {"chief": ["c:1"], "worker": ["w0:1", "w1:1"], "ps": ["p0:1"], "evaluator": ["e0:1"]}


def tf_config(task_type: str, index: int) -> dict[str, str]:
    return {"TF_CONFIG": json.dumps({"cluster": CLUSTER, "task": {"type": task_type, "index": index}})}


def run(argv: list[str], environ: dict[str, str]) -> tuple[int, list[str]]:
    out = io.StringIO()
    status = main(argv, environ, out)
    return status, out.getvalue().splitlines()


def test_one_process_job_trains_every_step_and_exits_0() -> None:
    status, lines = run(["--steps", "3", "--step-seconds", "0", "--data-date", "2024-05-01"], {})
    assert status == 0
    assert lines == [
        "[worker-0] started (cluster: one process (no TF_CONFIG); chief; data date 2024-05-01)",
        f"[worker-0] step 1/3 loss={loss_at(1):.4f}",
        f"[worker-0] step 2/3 loss={loss_at(2):.4f}",
        f"[worker-0] step 3/3 loss={loss_at(3):.4f}",
        f"[worker-0] training finished: 3/3 steps, final loss={loss_at(3):.4f}",
    ]


def test_crash_once_then_the_recreated_replica_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    argv = ["--steps", "4", "--step-seconds", "0", "--checkpoint-dir", str(tmp_path)]
    argv += ["--fail-at-step", "3", "--exit-code", "137", "--fail-replica", "worker:1", "--fail-once"]
    status, lines = run(argv, tf_config("worker", 1))
    assert status == 137
    assert lines[-1] == "[worker-1] simulated crash at step 3/4: exiting with status 137"
    assert CheckpointStore(tmp_path).load("worker-1") == Checkpoint(step=2, loss=loss_at(2, replica_index=1))

    status, lines = run(argv, tf_config("worker", 1))
    assert status == 0
    assert (
        lines[1]
        == f"[worker-1] resuming from checkpoint: 2 steps done, loss={loss_at(2, replica_index=1):.4f}"
    )
    assert [line.split()[2] for line in lines if " step " in line and "loss=" in line] == ["3/4", "4/4"]
    assert not (tmp_path / DONE_MARKER).exists(), "only the chief declares training done"


def test_other_replicas_do_not_crash_and_the_chief_marks_done(tmp_path: Path) -> None:
    argv = ["--steps", "2", "--step-seconds", "0", "--checkpoint-dir", str(tmp_path)]
    argv += ["--fail-at-step", "1", "--exit-code", "137", "--fail-replica", "worker:1"]
    assert run(argv, tf_config("worker", 0))[0] == 0
    assert not (tmp_path / DONE_MARKER).exists()
    assert run(argv, tf_config("chief", 0))[0] == 0
    assert (tmp_path / DONE_MARKER).exists()


def test_transient_failure_on_airflow_try_1_only(tmp_path: Path) -> None:
    argv = ["--steps", "3", "--step-seconds", "0", "--checkpoint-dir", str(tmp_path)]
    argv += ["--fail-at-step", "2", "--exit-code", "137", "--fail-if-env", "AIRFLOW_TRY_NUMBER=1"]
    assert run(argv, {"AIRFLOW_TRY_NUMBER": "1"})[0] == 137
    status, lines = run(argv, {"AIRFLOW_TRY_NUMBER": "2"})
    assert status == 0
    assert "resuming from checkpoint: 1 steps done" in lines[1]


def test_permanent_failure_fails_every_time(tmp_path: Path) -> None:
    argv = ["--steps", "3", "--step-seconds", "0", "--checkpoint-dir", str(tmp_path), "--fail-at-step", "2"]
    argv += ["--exit-code", "3"]
    assert [run(argv, {})[0] for _ in range(2)] == [3, 3]


def test_stop_file_ends_training_early_with_exit_0(tmp_path: Path) -> None:
    stop = tmp_path / "stop"
    stop.touch()
    status, lines = run(
        ["--steps", "100", "--step-seconds", "0", "--stop-file", str(stop)], tf_config("chief", 0)
    )
    assert status == 0
    assert lines[-1] == f"[chief-0] training stopped early: 1/100 steps, final loss={loss_at(1):.4f}"


def test_resuming_a_finished_replica_does_no_more_steps(tmp_path: Path) -> None:
    CheckpointStore(tmp_path).save("chief-0", Checkpoint(step=5, loss=0.5))
    status, lines = run(["--steps", "5", "--checkpoint-dir", str(tmp_path)], tf_config("chief", 0))
    assert status == 0
    assert lines[-1] == "[chief-0] training finished: 5/5 steps, final loss=0.5000"


def test_parameter_server_serves_until_the_chief_is_done(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    out = io.StringIO()
    ticks: list[float] = []

    def sleep(seconds: float) -> None:
        ticks.append(seconds)
        if len(ticks) == 3:
            store.set_marker(DONE_MARKER)

    clock = iter([0.0, 1.0, HEARTBEAT_SECONDS + 1, HEARTBEAT_SECONDS + 2]).__next__
    status = serve(
        TrainerOptions(step_seconds=0.2),
        ClusterRole("ps", 0, {"ps": {0: "p"}}),
        store=store,
        log=ReplicaLog("ps-0", out),
        sleep=sleep,
        clock=clock,
    )
    assert status == 0
    assert ticks == [0.2, 0.2, 0.2]
    assert out.getvalue().splitlines() == [
        "[ps-0] serving variables until the chief finishes",
        f"[ps-0] still serving variables after {HEARTBEAT_SECONDS + 1:.0f}s",
        "[ps-0] the chief finished training: stopping",
    ]


def test_evaluator_follows_the_chief_checkpoint_and_stops_when_done(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    store.save("chief-0", Checkpoint(step=2, loss=1.0))
    store.set_marker(DONE_MARKER)
    status, lines = run(["--checkpoint-dir", str(tmp_path)], tf_config("evaluator", 0))
    assert status == 0
    assert lines[1:] == [
        "[evaluator-0] evaluating the chief's checkpoints until the chief finishes",
        "[evaluator-0] evaluated checkpoint of step 2: eval_loss=1.1000",
        "[evaluator-0] the chief finished training: stopping",
    ]


def test_a_named_parameter_server_crashes_when_the_chief_reaches_the_step(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    store.save("chief-0", Checkpoint(step=1, loss=1.0))  # step 2 was being trained when the PS started
    argv = ["--steps", "5", "--checkpoint-dir", str(tmp_path), "--fail-at-step", "3", "--exit-code", "137"]
    options = parse_options([*argv, "--fail-replica", "ps:0"])
    out = io.StringIO()
    chief_steps = iter([2, 3])

    def chief_trains(seconds: float) -> None:
        store.save("chief-0", Checkpoint(step=next(chief_steps), loss=0.5))

    role = ClusterRole("ps", 0, {"chief": {0: "c:1"}, "ps": {0: "p:1"}})
    status = serve(options, role, store=store, log=ReplicaLog("ps-0", out), environ={}, sleep=chief_trains)
    assert status == 137
    assert out.getvalue().splitlines()[-1] == "[ps-0] simulated crash at step 3/5: exiting with status 137"


def test_parameter_server_stops_on_the_stop_file(tmp_path: Path) -> None:
    stop = tmp_path / "stop"
    stop.touch()
    status, lines = run(["--stop-file", str(stop)], tf_config("ps", 0))
    assert status == 0
    assert lines[-1] == f"[ps-0] stop file {stop} found: stopping"


def test_broken_tf_config_exits_2_with_the_reason() -> None:
    status, lines = run([], {"TF_CONFIG": "{oops"})
    assert status == 2
    assert lines[0].startswith("[trainer] TF_CONFIG is not valid JSON")


def test_tensorflow_path_without_tensorflow_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trainer.tensorflow_training, "tensorflow_available", lambda: False)
    status, lines = run(["--tensorflow"], tf_config("worker", 1))
    assert status == 2
    assert "--tensorflow needs TensorFlow, which is not installed here" in lines[-1]


def test_tensorflow_path_refuses_evaluators(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trainer.tensorflow_training, "tensorflow_available", lambda: True)
    status, lines = run(["--tensorflow"], tf_config("evaluator", 0))
    assert status == 2
    assert "--tensorflow has no evaluator" in lines[-1]


def test_tensorflow_parameter_servers_need_a_chief_to_coordinate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trainer.tensorflow_training, "tensorflow_available", lambda: True)
    cluster = {"worker": ["w0:1"], "ps": ["p0:1"]}
    config = {"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 0}})}
    status, lines = run(["--tensorflow"], config)
    assert status == 2
    assert "needs a Chief replica" in lines[-1]


def test_runs_as_a_directory_like_a_container_does(tmp_path: Path) -> None:
    """``python /opt/trainer`` in the image; here ``python example_dags/trainer`` from elsewhere."""
    argv = [sys.executable, str(EXAMPLE_DAGS / "trainer"), "--steps", "2", "--step-seconds", "0"]
    ok = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60, env={})
    assert (ok.returncode, ok.stdout.splitlines()[-1]) == (
        0,
        f"[worker-0] training finished: 2/2 steps, final loss={loss_at(2):.4f}",
    )
    crash = subprocess.run(
        [*argv, "--fail-at-step", "1", "--exit-code", "137"],
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
        env={},
    )
    assert crash.returncode == 137


def test_training_peers_are_the_other_chief_and_workers() -> None:
    role = ClusterRole("worker", 1, {"chief": {0: "c"}, "worker": {0: "a", 1: "b"}, "ps": {0: "p"}})
    assert training_peers(role) == ["chief-0", "worker-0"]
    assert training_peers(ClusterRole("worker", 0)) == []


def test_synchronous_training_waits_for_a_restarted_peer(tmp_path: Path) -> None:
    """The chief may not start step 3 until worker 1, recreated after a crash, has finished step 2."""
    store = CheckpointStore(tmp_path)
    store.save("worker-0", Checkpoint(step=4, loss=0.1))
    store.set_marker(finished_marker("worker-0"))
    store.save("worker-1", Checkpoint(step=1, loss=1.0))
    out = io.StringIO()
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 5:  # worker 1 catches up while the chief waits, and finishes
            store.save("worker-1", Checkpoint(step=4, loss=0.2))
            store.set_marker(finished_marker("worker-1"))

    options = TrainerOptions(steps=4, step_seconds=0.0, checkpoint_dir=tmp_path, sync_replicas=True)
    cluster = {"chief": {0: "c"}, "worker": {0: "a", 1: "b"}}
    status = train(
        options,
        ClusterRole("chief", 0, cluster),
        store=store,
        environ={},
        log=ReplicaLog("chief-0", out),
        sleep=sleep,
        clock=lambda: 0.5 * len(waits),  # the clock advances with every sleep
    )
    assert status == 0
    lines = out.getvalue().splitlines()
    assert lines[:3] == [
        f"[chief-0] step 1/4 loss={loss_at(1):.4f}",
        f"[chief-0] step 2/4 loss={loss_at(2):.4f}",
        "[chief-0] waiting for worker-1 to finish step 2 (synchronous training)",
    ]
    assert lines[3] == f"[chief-0] step 3/4 loss={loss_at(3):.4f}"
    assert waits == [0.0, 0.0, 0.1, 0.1, 0.1, 0.0, 0.0], "steps sleep step_seconds; the wait polls every 0.1s"


def test_synchronous_training_gives_up_after_the_timeout(tmp_path: Path) -> None:
    out = io.StringIO()
    times = iter([0.0, 0.0, 0.5, 5.0, 11.0])
    options = TrainerOptions(
        steps=3, step_seconds=0.0, checkpoint_dir=tmp_path, sync_replicas=True, sync_timeout=10
    )
    status = train(
        options,
        ClusterRole("worker", 0, {"worker": {0: "a", 1: "b"}}),
        store=CheckpointStore(tmp_path),
        environ={},
        log=ReplicaLog("worker-0", out),
        sleep=lambda _: None,
        clock=times.__next__,
    )
    assert status == SYNC_TIMEOUT_EXIT
    assert (
        out.getvalue().splitlines()[-1] == "[worker-0] worker-1 did not finish step 1 within 10s: giving up"
    )


def test_synchronous_training_ends_with_a_barrier_on_the_last_step(tmp_path: Path) -> None:
    """The chief does not exit (and end the TFJob) while a worker is still in the last step."""
    store = CheckpointStore(tmp_path)
    store.save("worker-0", Checkpoint(step=1, loss=1.0))
    out = io.StringIO()
    polls: list[float] = []

    def sleep(seconds: float) -> None:
        polls.append(seconds)
        if len(polls) == 3:
            store.save("worker-0", Checkpoint(step=2, loss=0.5))
        if len(polls) == 5:
            store.set_marker(finished_marker("worker-0"))

    options = TrainerOptions(steps=2, step_seconds=0.0, checkpoint_dir=tmp_path, sync_replicas=True)
    status = train(
        options,
        ClusterRole("chief", 0, {"chief": {0: "c"}, "worker": {0: "a"}}),
        store=store,
        environ={},
        log=ReplicaLog("chief-0", out),
        sleep=sleep,
        clock=lambda: 0.0,
    )
    assert status == 0
    assert polls == [0.0, 0.0, 0.1, 0.1, 0.1], "two steps; worker 0 finishes step 2, then exits"
    assert (tmp_path / DONE_MARKER).exists()


def test_a_synchronous_worker_leaves_its_finished_marker_and_never_waits_for_the_chief_to_exit(
    tmp_path: Path,
) -> None:
    store = CheckpointStore(tmp_path)
    store.save("chief-0", Checkpoint(step=2, loss=0.5))
    options = TrainerOptions(steps=2, step_seconds=0.0, checkpoint_dir=tmp_path, sync_replicas=True)
    status = train(
        options,
        ClusterRole("worker", 0, {"chief": {0: "c"}, "worker": {0: "a"}}),
        store=store,
        environ={},
        log=ReplicaLog("worker-0", io.StringIO()),
        sleep=lambda _: None,
        clock=lambda: 0.0,
    )
    assert status == 0
    assert store.has_marker(finished_marker("worker-0"))
    assert not store.has_marker(DONE_MARKER)
