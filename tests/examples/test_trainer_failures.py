"""When the trainer crashes on purpose: step, replica, environment condition, once-only."""

from __future__ import annotations

from pathlib import Path

import pytest
from trainer.checkpoints import CheckpointStore
from trainer.failures import remember_failure, should_fail
from trainer.options import FailurePlan, ReplicaRef
from trainer.tf_config import ClusterRole

CLUSTER = {"chief": {0: "c"}, "worker": {0: "w0", 1: "w1"}, "ps": {0: "p"}}
WORKER_1 = ClusterRole("worker", 1, CLUSTER)
WORKER_0 = ClusterRole("worker", 0, CLUSTER)
PS_0 = ClusterRole("ps", 0, CLUSTER)


def decide(
    plan: FailurePlan | None, role: ClusterRole, step: int, store: CheckpointStore, **env: str
) -> bool:
    return should_fail(plan, step=step, role=role, environ=env, store=store)


def test_no_plan_never_fails(tmp_path: Path) -> None:
    assert not decide(None, WORKER_1, 1, CheckpointStore(tmp_path))


def test_fails_exactly_at_the_step_on_every_training_replica(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    plan = FailurePlan(at_step=3, exit_code=3)
    assert [decide(plan, WORKER_1, step, store) for step in (1, 2, 3, 4)] == [False, False, True, False]
    assert decide(plan, WORKER_0, 3, store)
    assert not decide(plan, PS_0, 3, store), "parameter servers do not train, so they never reach a step"


def test_only_the_named_replica_fails(tmp_path: Path) -> None:
    plan = FailurePlan(at_step=2, exit_code=137, replica=ReplicaRef("worker", 1))
    store = CheckpointStore(tmp_path)
    assert decide(plan, WORKER_1, 2, store)
    assert not decide(plan, WORKER_0, 2, store)
    assert not decide(plan, ClusterRole("chief", 0, CLUSTER), 2, store)


def test_a_named_server_fails_at_the_chiefs_step(tmp_path: Path) -> None:
    """A PS (or a worker serving a coordinator) does not train; named, it fails at the chief's step."""
    plan = FailurePlan(at_step=3, exit_code=137, replica=ReplicaRef("ps", 0))
    store = CheckpointStore(tmp_path)
    assert [decide(plan, PS_0, step, store) for step in (2, 3, 4)] == [False, True, False]
    assert not decide(plan, WORKER_0, 3, store)


@pytest.mark.parametrize(("value", "fails"), [("1", True), ("2", False), (None, False)])
def test_environment_condition(tmp_path: Path, value: str | None, fails: bool) -> None:
    plan = FailurePlan(at_step=1, exit_code=137, only_if_env=("AIRFLOW_TRY_NUMBER", "1"))
    env = {} if value is None else {"AIRFLOW_TRY_NUMBER": value}
    assert decide(plan, WORKER_0, 1, CheckpointStore(tmp_path), **env) is fails


def test_once_fails_the_first_time_only_and_per_replica(tmp_path: Path) -> None:
    plan = FailurePlan(at_step=2, exit_code=137, once=True)
    store = CheckpointStore(tmp_path)
    assert decide(plan, WORKER_1, 2, store)
    remember_failure(plan, step=2, role=WORKER_1, store=store)
    assert not decide(plan, WORKER_1, 2, store)
    assert decide(plan, WORKER_0, 2, store), "another replica has not failed yet"


def test_without_once_no_marker_is_left(tmp_path: Path) -> None:
    plan = FailurePlan(at_step=2, exit_code=3)
    store = CheckpointStore(tmp_path)
    remember_failure(plan, step=2, role=WORKER_1, store=store)
    assert list(tmp_path.iterdir()) == []
    assert decide(plan, WORKER_1, 2, store)
