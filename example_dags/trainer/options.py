"""The trainer's command line, parsed into one frozen value.

Why a module of its own: the example DAGs, the demo and the tests all drive the trainer through
these options, so their names, defaults and checks are one contract, tested without running a
training loop.  Invalid combinations are refused here, with exit status 2 (argparse's usage
error), which the TFJob verdict engine classifies as a permanent failure: a typo in a DAG must
not burn retries.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: What trains: the pure-Python stand-in, or real TensorFlow.
FRAMEWORKS = ("python", "tensorflow")
#: Replica types as TF_CONFIG spells them (lower case).
REPLICA_TYPES = ("chief", "master", "worker", "ps", "evaluator")


@dataclass(frozen=True)
class ReplicaRef:
    """One replica: ``worker:1`` on the command line."""

    type: str
    index: int

    def __str__(self) -> str:
        return f"{self.type}-{self.index}"


@dataclass(frozen=True)
class FailurePlan:
    """When the program should crash on purpose, and how.

    :param at_step: the step at which to exit (before that step is trained; steps count from 1).
    :param exit_code: the exit status (137 looks like a SIGKILL/OOM kill to Kubernetes).
    :param replica: only this replica fails; None: every training replica reaching the step.
    :param once: fail only if this replica has not already failed at this step (a marker in the
        checkpoint directory remembers it), so a recreated pod or a retry gets through.
    :param only_if_env: ``(NAME, VALUE)``: fail only when the environment variable has this value
        (e.g. the Airflow try number is 1).
    """

    at_step: int
    exit_code: int
    replica: ReplicaRef | None = None
    once: bool = False
    only_if_env: tuple[str, str] | None = None


@dataclass(frozen=True)
class TrainerOptions:
    """Everything the command line says."""

    steps: int = 10
    step_seconds: float = 0.2
    checkpoint_dir: Path | None = None
    stop_file: Path | None = None
    data_date: str | None = None
    failure: FailurePlan | None = None
    sync_replicas: bool = False
    sync_timeout: float = 600.0
    tensorflow: bool = False


def _replica(text: str) -> ReplicaRef:
    kind, separator, index = text.partition(":")
    kind = kind.strip().lower()
    if not separator or kind not in REPLICA_TYPES or not index.strip().isdigit():
        raise argparse.ArgumentTypeError(
            f"expected TYPE:INDEX with TYPE one of {', '.join(REPLICA_TYPES)} (e.g. worker:1), got {text!r}"
        )
    return ReplicaRef(kind, int(index))


def _env_condition(text: str) -> tuple[str, str]:
    name, separator, value = text.partition("=")
    if not separator or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:  # also refuses NaN
        raise argparse.ArgumentTypeError(f"must be a non-negative number, got {text!r}")
    return value


def _exit_code(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 255:
        raise argparse.ArgumentTypeError(f"an exit code for a failure is 1-255, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trainer",
        description="Example distributed training program for TFJobs (pure Python; --tensorflow: real TF).",
    )
    parser.add_argument("--steps", type=_positive_int, default=10, help="training steps (default 10)")
    parser.add_argument(
        "--step-seconds",
        type=_non_negative_float,
        default=0.2,
        help="seconds of 'work' per step (default 0.2)",
    )
    parser.add_argument(
        "--checkpoint-dir",
        type=Path,
        help="shared directory for checkpoints and markers; a restarted replica resumes from it",
    )
    parser.add_argument(
        "--stop-file", type=Path, help="end training early (checkpointed, exit 0) once this file exists"
    )
    parser.add_argument("--data-date", help="the data partition to train on (logged; e.g. {{ ds }})")
    parser.add_argument("--fail-at-step", type=_positive_int, help="crash when this step is reached")
    parser.add_argument(
        "--exit-code", type=_exit_code, default=1, help="exit status of the crash (default 1; 137 = killed)"
    )
    parser.add_argument(
        "--fail-replica", type=_replica, help="only this replica crashes, as TYPE:INDEX (e.g. worker:1)"
    )
    parser.add_argument(
        "--fail-once",
        action="store_true",
        help="crash only the first time this replica reaches the step (needs --checkpoint-dir)",
    )
    parser.add_argument(
        "--fail-if-env",
        type=_env_condition,
        metavar="NAME=VALUE",
        help="crash only when this environment variable has this value (e.g. AIRFLOW_TRY_NUMBER=1)",
    )
    parser.add_argument(
        "--sync-replicas",
        action="store_true",
        help="wait at each step until every training replica finished the previous one, as synchronous "
        "all-reduce training does (a crashed worker stalls the chief until it is back); "
        "needs --checkpoint-dir",
    )
    parser.add_argument(
        "--sync-timeout",
        type=_non_negative_float,
        default=600.0,
        help="seconds to wait for a peer before giving up with exit status 1, like a collective op timeout",
    )
    parser.add_argument(
        "--tensorflow",
        action="store_true",
        help="train with real TensorFlow: ParameterServerStrategy when the cluster has PS, "
        "MultiWorkerMirroredStrategy otherwise (needs TensorFlow; same as --framework tensorflow)",
    )
    parser.add_argument(
        "--framework",
        choices=FRAMEWORKS,
        default="python",
        help="python: the pure-Python stand-in (default); tensorflow: as --tensorflow.  The example "
        "DAGs pass the Airflow Variable tfjob_example_framework here",
    )
    return parser


def parse_options(argv: Sequence[str] | None = None) -> TrainerOptions:
    """Parse and check the command line; exits with status 2 and a usage message when it is wrong."""
    parser = build_parser()
    args = parser.parse_args(argv)
    failure_flags = [
        flag
        for flag, given in (
            ("--fail-replica", args.fail_replica is not None),
            ("--fail-once", args.fail_once),
            ("--fail-if-env", args.fail_if_env is not None),
        )
        if given
    ]
    if args.fail_at_step is None and failure_flags:
        parser.error(f"{', '.join(failure_flags)}: only meaningful with --fail-at-step")
    if args.fail_once and args.checkpoint_dir is None:
        parser.error("--fail-once remembers the failure in the checkpoint directory: give --checkpoint-dir")
    if args.sync_replicas and args.checkpoint_dir is None:
        parser.error("--sync-replicas follows the peers' checkpoints: give --checkpoint-dir")
    if args.fail_at_step is not None and args.fail_at_step > args.steps:
        parser.error(f"--fail-at-step {args.fail_at_step} is after the last step ({args.steps})")
    failure = None
    if args.fail_at_step is not None:
        failure = FailurePlan(
            at_step=args.fail_at_step,
            exit_code=args.exit_code,
            replica=args.fail_replica,
            once=args.fail_once,
            only_if_env=args.fail_if_env,
        )
    return TrainerOptions(
        steps=args.steps,
        step_seconds=args.step_seconds,
        checkpoint_dir=args.checkpoint_dir,
        stop_file=args.stop_file,
        data_date=args.data_date,
        failure=failure,
        sync_replicas=args.sync_replicas,
        sync_timeout=args.sync_timeout,
        tensorflow=args.tensorflow or args.framework == "tensorflow",
    )
