"""Killing a task stops its training: ``on_kill`` in the worker, the trigger's ``on_kill`` when deferred."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from pathlib import Path
from typing import Any

from tfjob_sandbox.testing import unique_name, wait_for

from tests.integration.airflow_harness import load_dag, run_dag, write_dag_file
from tests.integration.async_clients import close_async_clients
from tests.integration.cluster_queries import running_pods_of_dag, tfjobs_of_dag
from tests.integration.trigger_helpers import delete_tfjob, submit_tfjob, tfjob_exists
from tfjob_provider.triggers.tfjob import TFJobTrigger

NEVER_ENDS = ["python", "-c", "import time; time.sleep(600)"]

DAG_SOURCE = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

with DAG("kill_in_worker", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobOperator(
        task_id="train", image="python:3.11", command={command!r}, chief=1, worker=1, poll_interval=1
    )
"""


def test_sigterm_to_the_worker_runs_on_kill_and_deletes_the_tfjob(cluster: Any, dags_folder: Path) -> None:
    path = write_dag_file(dags_folder, "kill_in_worker", DAG_SOURCE.format(command=NEVER_ENDS))
    before = signal.getsignal(signal.SIGTERM)

    failures: list[BaseException] = []

    def terminate_once_training() -> None:
        try:
            wait_for(
                lambda: running_pods_of_dag(cluster, "kill_in_worker"), timeout=90, what="training running"
            )
        except BaseException as error:  # still end the task, then fail the test with the reason
            failures.append(error)
        os.kill(os.getpid(), signal.SIGTERM)  # what the supervisor sends a task it kills

    killer = threading.Thread(target=terminate_once_training, daemon=True)
    killer.start()
    try:
        outcome = run_dag(load_dag(path, "kill_in_worker"))
    finally:
        killer.join(5)
        signal.signal(signal.SIGTERM, before)  # the task runner's handler must not outlive the task
    assert failures == []
    assert outcome.task("train").state == "failed"
    wait_for(lambda: not tfjobs_of_dag(cluster, "kill_in_worker"), timeout=30, what="TFJob deleted")


def test_the_triggers_on_kill_deletes_the_tfjob_when_a_user_kills_the_deferred_task(cluster: Any) -> None:
    from airflow.jobs.triggerer_job_runner import _USER_ACTION_CANCEL_MSG

    name = unique_name("killed")
    uid = submit_tfjob(name, command=NEVER_ENDS)
    trigger = TFJobTrigger(name=name, namespace="default", uid=uid, poll_interval=1)

    async def kill_like_the_triggerer() -> None:
        running = asyncio.ensure_future(anext(trigger.run()))
        await asyncio.sleep(1.5)
        assert not running.done()  # still waiting: the training never ends by itself
        running.cancel(_USER_ACTION_CANCEL_MSG)  # mark failed / clear / mark success in the UI
        try:
            await running
        except asyncio.CancelledError:
            await trigger.on_kill()  # what TriggerRunner does for a user's kill (Airflow >= 3.3)
        await close_async_clients()

    asyncio.run(kill_like_the_triggerer())
    wait_for(lambda: not tfjob_exists(name), timeout=30, what="TFJob deleted")


def test_the_trigger_keeps_the_tfjob_when_cancel_on_kill_is_off(cluster: Any) -> None:
    name = unique_name("kept")
    uid = submit_tfjob(name, command=NEVER_ENDS)
    trigger = TFJobTrigger(name=name, namespace="default", uid=uid, poll_interval=1, cancel_on_kill=False)

    async def kill() -> None:
        await trigger.on_kill()
        await close_async_clients()

    try:
        asyncio.run(kill())
        assert tfjob_exists(name)
    finally:
        delete_tfjob(name)


def test_the_triggers_on_kill_never_deletes_a_succeeded_or_an_unreadable_tfjob(
    cluster: Any, monkeypatch: Any
) -> None:
    import json

    from tfjob_provider._outcome.wait import has_succeeded
    from tfjob_provider.hooks.tfjob import TFJobHook

    done, unread = unique_name("done"), unique_name("unread")
    done_uid = submit_tfjob(done, command=["python", "-c", "pass"])
    unread_uid = submit_tfjob(unread, command=NEVER_ENDS)

    def succeeded() -> bool:
        hook = TFJobHook()
        try:
            return has_succeeded(hook.client.get_tfjob(done, namespace="default"))
        finally:
            hook.client.close()

    wait_for(succeeded, timeout=60, what="the TFJob succeeded")
    connection = json.loads(cluster.airflow_conn_uri)
    connection["extra"]["api_outage_budget"] = 1
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps(connection))

    async def kill_both() -> None:
        await TFJobTrigger(name=done, namespace="default", uid=done_uid).on_kill()
        outage = cluster.api_outage(60, kind="503")
        try:
            await TFJobTrigger(name=unread, namespace="default", uid=unread_uid).on_kill()
        finally:
            cluster.remove_api_fault(outage)
        await close_async_clients()

    try:
        asyncio.run(kill_both())
        assert tfjob_exists(done), "a Succeeded TFJob was deleted by a kill"
        assert tfjob_exists(unread), "a TFJob whose state could not be read was deleted"
    finally:
        delete_tfjob(done)
        delete_tfjob(unread)
