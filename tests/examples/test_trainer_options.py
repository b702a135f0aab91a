"""The trainer's command line: defaults, every option, and the combinations it refuses (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from trainer.options import FailurePlan, ReplicaRef, TrainerOptions, parse_options


def test_defaults() -> None:
    assert parse_options([]) == TrainerOptions(
        steps=10,
        step_seconds=0.2,
        checkpoint_dir=None,
        stop_file=None,
        data_date=None,
        failure=None,
        sync_replicas=False,
        sync_timeout=600.0,
        tensorflow=False,
    )


def test_every_option_is_read() -> None:
    options = parse_options(
        [
            "--steps", "7",
            "--step-seconds", "0.5",
            "--checkpoint-dir", "/ckpt",
            "--stop-file", "/tmp/stop",
            "--data-date", "2024-01-31",
            "--fail-at-step", "3",
            "--exit-code", "137",
            "--fail-replica", "Worker:1",
            "--fail-once",
            "--fail-if-env", "AIRFLOW_TRY_NUMBER=1",
            "--sync-replicas",
            "--sync-timeout", "30",
            "--tensorflow",
        ]
    )  # fmt: skip
    assert options == TrainerOptions(
        steps=7,
        step_seconds=0.5,
        checkpoint_dir=Path("/ckpt"),
        stop_file=Path("/tmp/stop"),
        data_date="2024-01-31",
        failure=FailurePlan(
            at_step=3,
            exit_code=137,
            replica=ReplicaRef("worker", 1),
            once=True,
            only_if_env=("AIRFLOW_TRY_NUMBER", "1"),
        ),
        sync_replicas=True,
        sync_timeout=30.0,
        tensorflow=True,
    )


@pytest.mark.parametrize(
    ("argv", "tensorflow"),
    [
        ([], False),
        (["--framework", "python"], False),
        (["--framework", "tensorflow"], True),
        (["--tensorflow"], True),
    ],
)
def test_the_framework_option_selects_real_tensorflow(argv: list[str], tensorflow: bool) -> None:
    """The example DAGs pass ``--framework {{ var.value... }}`` so one Variable switches them."""
    assert parse_options(argv).tensorflow is tensorflow


def test_an_unknown_framework_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_options(["--framework", "jax"])
    assert exited.value.code == 2
    assert "invalid choice: 'jax'" in capsys.readouterr().err


def test_exit_code_defaults_to_one() -> None:
    failure = parse_options(["--fail-at-step", "2"]).failure
    assert failure == FailurePlan(at_step=2, exit_code=1)


def test_env_condition_keeps_everything_after_the_first_equals_sign() -> None:
    failure = parse_options(["--fail-at-step", "1", "--fail-if-env", "A=b=c"]).failure
    assert failure is not None and failure.only_if_env == ("A", "b=c")


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["--steps", "0"], "must be at least 1"),
        (["--step-seconds", "-1"], "non-negative"),
        (["--step-seconds", "nan"], "non-negative"),
        (["--fail-at-step", "2", "--exit-code", "0"], "1-255"),
        (["--fail-at-step", "2", "--exit-code", "256"], "1-255"),
        (["--fail-at-step", "2", "--fail-replica", "gpu:0"], "TYPE:INDEX"),
        (["--fail-at-step", "2", "--fail-replica", "worker"], "TYPE:INDEX"),
        (["--fail-at-step", "2", "--fail-replica", "worker:x"], "TYPE:INDEX"),
        (["--fail-at-step", "2", "--fail-if-env", "novalue"], "NAME=VALUE"),
        (["--fail-replica", "worker:1"], "only meaningful with --fail-at-step"),
        (["--fail-once", "--checkpoint-dir", "/c"], "only meaningful with --fail-at-step"),
        (["--fail-at-step", "2", "--fail-once"], "give --checkpoint-dir"),
        (["--steps", "3", "--fail-at-step", "4"], "after the last step"),
        (["--sync-replicas"], "give --checkpoint-dir"),
        (["--sync-timeout", "-5"], "non-negative"),
    ],
)
def test_refused_with_usage_error(
    argv: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_options(argv)
    assert exited.value.code == 2
    assert complaint in capsys.readouterr().err
