"""Deciding whether this replica crashes on purpose at this step.

Why a pure function: the examples rely on exact crash behaviour — *only* worker 1, *only* the
first time (so the recreated pod recovers), *only* on Airflow try 1 (so the retry succeeds) — and
a mistake here would make a demo scenario pass or fail for the wrong reason.  The decision reads
the plan, the replica, the environment and the markers, and nothing else, so it is unit-tested
exhaustively.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import NoReturn

from trainer.checkpoints import CheckpointStore, failure_marker
from trainer.options import FailurePlan
from trainer.tf_config import ClusterRole

Log = Callable[[str], None]


def should_fail(
    plan: FailurePlan | None,
    *,
    step: int,
    role: ClusterRole,
    environ: Mapping[str, str],
    store: CheckpointStore,
) -> bool:
    """True when ``plan`` says this replica crashes now, at ``step``.

    A replica that does not train (a parameter server, or a worker serving a ParameterServer
    strategy's coordinator) fails only when the plan names it; its ``step`` is the chief's.
    """
    if plan is None or step != plan.at_step:
        return False
    if plan.replica is None:
        if not role.trains:
            return False
    elif (plan.replica.type, plan.replica.index) != (role.type, role.index):
        return False
    if plan.only_if_env is not None:
        name, value = plan.only_if_env
        if environ.get(name) != value:
            return False
    return not (plan.once and store.has_marker(failure_marker(role.tag, step)))


def remember_failure(plan: FailurePlan, *, step: int, role: ClusterRole, store: CheckpointStore) -> None:
    """Leave the marker that lets a ``once`` plan through next time (before exiting)."""
    if plan.once:
        store.set_marker(failure_marker(role.tag, step))


def crash(
    plan: FailurePlan, *, step: int, steps: int, role: ClusterRole, store: CheckpointStore, log: Log
) -> NoReturn:
    """Crash now, as planned: leave the ``once`` marker, say so, and exit at once.

    ``os._exit``, not ``sys.exit``: TensorFlow's RPC and collective threads can keep a normal
    interpreter shutdown waiting, and a crash must look like one (no clean-up, no checkpoint).
    """
    remember_failure(plan, step=step, role=role, store=store)
    log(f"simulated crash at step {step}/{steps}: exiting with status {plan.exit_code}")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(plan.exit_code)
