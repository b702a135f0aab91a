"""Resuming from a trigger event that cannot be read fails the try with retries and says why."""

from __future__ import annotations

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


def tasks() -> list[Any]:
    return [
        TFJobOperator(task_id="train", image="trainer:1", deferrable=True),
        TFJobSensor(task_id="watch", job_name="mnist", deferrable=True),
    ]


@pytest.mark.parametrize(("event", "problem"), BAD_EVENTS)
@pytest.mark.parametrize("task_index", [0, 1], ids=["operator", "sensor"])
def test_an_unreadable_event_fails_the_try_naming_the_task_and_the_problem(
    event: Any, problem: str, task_index: int
) -> None:
    task = tasks()[task_index]
    with pytest.raises(AirflowException) as raised:
        task.execute_complete({}, event)
    assert not isinstance(raised.value, AirflowFailException), "a retry may read a good event"
    assert str(raised.value).startswith(f"{task.task_id}: unreadable TFJob trigger event")
    assert problem in str(raised.value)
