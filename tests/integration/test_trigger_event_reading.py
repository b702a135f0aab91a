"""Resuming from a trigger event that cannot be read fails the try with retries and says why."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException

from tfjob_provider.operators.tfjob import TFJobOperator
from tfjob_provider.sensors.tfjob import TFJobSensor

BAD_EVENTS: list[tuple[Any, str]] = [
    ({"status": "exploded", "name": "a", "namespace": "ml", "message": "m"}, "status 'exploded'"),
    ({"status": "success", "name": 7, "namespace": "ml", "message": "m"}, "field 'name'"),
    (["success"], "must be a dict"),
]


TASKS: dict[str, Callable[[], Any]] = {
    "operator": lambda: TFJobOperator(task_id="train", image="trainer:1", deferrable=True),
    "sensor": lambda: TFJobSensor(task_id="watch", job_name="mnist", deferrable=True),
}


@pytest.mark.parametrize(("event", "problem"), BAD_EVENTS)
@pytest.mark.parametrize("kind", list(TASKS))
def test_an_unreadable_event_fails_the_try_naming_the_task_and_the_problem(
    event: Any, problem: str, kind: str
) -> None:
    task = TASKS[kind]()
    with pytest.raises(AirflowException) as raised:
        task.execute_complete({}, event)
    assert not isinstance(raised.value, AirflowFailException), "a retry may read a good event"
    assert str(raised.value).startswith(f"{task.task_id}: unreadable TFJob trigger event")
    assert problem in str(raised.value)
