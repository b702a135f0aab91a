"""Deciding whether this replica crashes on purpose at this step.

Why a pure function: the examples rely on exact crash behaviour — *only* worker 1, *only* the
first time (so the recreated pod recovers), *only* on Airflow try 1 (so the retry succeeds) — and
a mistake here would make a demo scenario pass or fail for the wrong reason.  The decision reads
the plan, the replica, the environment and the markers, and nothing else, so it is unit-tested
exhaustively.
"""

from __future__ import annotations

from collections.abc import Mapping

from trainer.checkpoints import CheckpointStore, failure_marker
from trainer.options import FailurePlan
from trainer.tf_config import ClusterRole


def should_fail(
    plan: FailurePlan | None,
    *,
    step: int,
    role: ClusterRole,
    environ: Mapping[str, str],
    store: CheckpointStore,
) -> bool:
    """True when ``plan`` says this replica crashes now, at ``step``."""
    if plan is None or step != plan.at_step or not role.trains:
        return False
    if plan.replica is not None and (plan.replica.type, plan.replica.index) != (role.type, role.index):
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
