"""TFJobTrigger against the sandbox: exactly one event on every path, and no false ending.

Triggers are driven the way the triggerer drives them — ``await anext(trigger.run())`` in an
event loop, instances rebuilt from ``serialize()`` — with the real hook, shared watch and cluster.
"""

from __future__ import annotations

import asyncio
import datetime
import importlib
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tfjob_sandbox.testing import unique_name

from tests.integration.async_clients import close_async_clients
from tests.integration.trigger_helpers import delete_tfjob, submit_tfjob, tfjob_exists
from tfjob_provider.policy import NOT_RECONCILED_MESSAGE
from tfjob_provider.triggers.tfjob import TFJobTrigger

NEVER_ENDS = ["python", "-c", "import time; time.sleep(600)"]


def release_script(release: Path) -> list[str]:
    """Train until the test creates ``release``, then succeed."""
    return ["python", "-c", f"import os, time\nwhile not os.path.exists({str(release)!r}): time.sleep(0.05)"]


def first_event(
    trigger: TFJobTrigger, *, meanwhile: Callable[[], Awaitable[None]] | None = None
) -> dict[str, Any]:
    """Run ``trigger`` to its event (``meanwhile`` runs alongside), within 60 s; the event's payload."""

    async def run() -> dict[str, Any]:
        try:
            waiting = asyncio.ensure_future(anext(trigger.run()))
            if meanwhile is not None:
                await meanwhile()
            event = await asyncio.wait_for(waiting, timeout=60)
            payload: dict[str, Any] = event.payload
            return payload
        finally:
            await close_async_clients()

    payload = asyncio.run(run())
    json.dumps(payload)  # JSON primitives only
    return payload


def test_a_triggerer_restart_resumes_from_the_serialized_kwargs_and_deletes_nothing(
    cluster: Any, tmp_path: Path
) -> None:
    name, release = unique_name("restart"), tmp_path / "release"
    uid = submit_tfjob(name, command=release_script(release))
    first = TFJobTrigger(name=name, namespace="default", uid=uid, poll_interval=1, startup_timeout=120)
    classpath, kwargs = first.serialize()

    async def shut_down_first_triggerer() -> None:
        running = asyncio.ensure_future(anext(first.run()))
        await asyncio.sleep(1.0)
        running.cancel()  # a triggerer stopping: no message, no on_kill
        await asyncio.gather(running, return_exceptions=True)
        await close_async_clients()

    asyncio.run(shut_down_first_triggerer())
    assert tfjob_exists(name)

    module_name, _, class_name = classpath.rpartition(".")  # what the triggerer does with it
    second = getattr(importlib.import_module(module_name), class_name)(**json.loads(json.dumps(kwargs)))

    async def finish_training() -> None:
        await asyncio.sleep(0.5)
        release.touch()

    payload = first_event(second, meanwhile=finish_training)
    assert (payload["status"], payload["uid"], payload["verdict"]["state"]) == ("success", uid, "Succeeded")
    assert tfjob_exists(name)  # the trigger never deletes on its own
    delete_tfjob(name)


def test_an_externally_deleted_tfjob_is_a_retryable_failure(cluster: Any) -> None:
    name = unique_name("gone")
    uid = submit_tfjob(name, command=NEVER_ENDS)

    async def delete_it() -> None:
        await asyncio.sleep(1.0)
        await asyncio.to_thread(delete_tfjob, name)

    payload = first_event(
        TFJobTrigger(name=name, namespace="default", uid=uid, poll_interval=1), meanwhile=delete_it
    )
    assert payload["status"] == "failed"
    assert (payload["verdict"]["reason"], payload["verdict"]["retryable"]) == ("TFJobDeleted", True)


def test_a_tfjob_replaced_under_the_same_name_is_not_mistaken_for_ours(cluster: Any) -> None:
    name = unique_name("swap")
    old_uid = submit_tfjob(name, command=NEVER_ENDS)
    delete_tfjob(name)
    for _ in range(100):  # Foreground deletion: wait until the name is free again
        if not tfjob_exists(name):
            break
        asyncio.run(asyncio.sleep(0.1))
    new_uid = submit_tfjob(name, command=["python", "-c", "pass"])
    try:
        payload = first_event(TFJobTrigger(name=name, namespace="default", uid=old_uid, poll_interval=1))
    finally:
        delete_tfjob(name)
    assert payload["status"] == "failed" and payload["verdict"]["reason"] == "TFJobDeleted"
    assert f"replaced by another TFJob (uid {new_uid})" in payload["message"]


def test_the_deadline_ends_a_running_job_as_a_timeout_with_its_last_state(cluster: Any) -> None:
    name = unique_name("late")
    uid = submit_tfjob(name, command=NEVER_ENDS)
    deadline = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=2)
    trigger = TFJobTrigger(
        name=name,
        namespace="default",
        uid=uid,
        deadline=deadline.isoformat(),
        deadline_name="execution_timeout",
    )
    try:
        payload = first_event(trigger)
    finally:
        delete_tfjob(name)
    assert payload["status"] == "timeout"
    assert payload["message"].startswith("execution_timeout reached at ")
    assert payload["verdict"]["state"] in ("Running", "Pending")


def test_a_job_finished_before_a_late_triggerer_started_is_a_success_not_a_timeout(cluster: Any) -> None:
    """apache/airflow#40018: the deadline passed while no triggerer ran, but the job had finished."""
    name = unique_name("done")
    uid = submit_tfjob(name, command=["python", "-c", "pass"])
    first_event(TFJobTrigger(name=name, namespace="default", uid=uid, poll_interval=1))  # let it finish
    past = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)).isoformat()
    try:
        payload = first_event(TFJobTrigger(name=name, namespace="default", uid=uid, deadline=past))
    finally:
        delete_tfjob(name)
    assert (payload["status"], payload["verdict"]["state"]) == ("success", "Succeeded")


def test_invalid_kwargs_still_end_in_exactly_one_error_event(cluster: Any) -> None:
    trigger = TFJobTrigger(name="x", namespace="default", rules={"fail_on_worker_failure": "sometimes"})
    payload = first_event(trigger)
    assert payload["status"] == "error" and payload["verdict"] is None
    assert "Rules.fail_on_worker_failure must be true or false" in payload["message"]


def test_no_training_operator_fails_after_startup_timeout_with_a_clear_message(own_cluster: Any) -> None:
    own_cluster.stop_operator()
    name = unique_name("orphan")
    uid = submit_tfjob(name, command=NEVER_ENDS)
    payload = first_event(
        TFJobTrigger(name=name, namespace="default", uid=uid, startup_timeout=1.5, poll_interval=1)
    )
    assert payload["status"] == "failed"
    assert payload["message"].startswith(NOT_RECONCILED_MESSAGE)
    assert (payload["verdict"]["reason"], payload["verdict"]["operator_finished"]) == (
        "StartupTimeout",
        False,
    )
