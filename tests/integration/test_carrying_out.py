"""Carrying out an ending against the sandbox: the re-read after an error, the guarded deletion.

The decision itself is pure and table-tested (``tests/unit/test_task_ending.py``); these tests check
the Airflow-side evidence it relies on with a real API server: a TFJob that succeeded while the
wait was broken is found and concluded as a success, a TFJob that cannot be read is reported as
unread (so it is kept), and no deletion after an error touches a TFJob that has Succeeded.
"""

from __future__ import annotations

import logging
from typing import Any

from tfjob_sandbox.testing import unique_name, wait_for

from tests.integration.trigger_helpers import delete_tfjob, submit_tfjob, tfjob_exists
from tfjob_provider._airflow.carrying_out import delete_if_ours, settle
from tfjob_provider._outcome.wait import WaitTarget, has_succeeded, utc_now
from tfjob_provider.hooks.tfjob import TFJobHook
from tfjob_provider.kube.ratelimit import RateLimit
from tfjob_provider.kube.retry import RetryPolicy

log = logging.getLogger(__name__)


def finished_job(cluster: Any) -> tuple[str, str]:
    """A TFJob of this test that has Succeeded: (name, uid)."""
    name = unique_name("concluded")
    uid = submit_tfjob(name, command=["python", "-c", "pass"])
    hook = TFJobHook()
    try:
        wait_for(
            lambda: has_succeeded(hook.client.get_tfjob(name, namespace="default")),
            timeout=60,
            what="the TFJob succeeded",
        )
    finally:
        hook.client.close()
    return name, uid


def test_a_broken_wait_on_a_succeeded_tfjob_ends_as_its_success(cluster: Any) -> None:
    name, uid = finished_job(cluster)
    target = WaitTarget(name=name, namespace="default", uid=uid)
    hook = TFJobHook()
    try:
        for broken in (target.error("watching failed: 503"), target.timed_out(None, [], now=utc_now())):
            outcome, unread = settle(hook.client, target, broken)
            assert (outcome.status, outcome.uid, unread) == ("success", uid, None)
    finally:
        hook.client.close()
        delete_tfjob(name)


def test_an_unreadable_tfjob_is_reported_unread(cluster: Any) -> None:
    name, uid = finished_job(cluster)
    target = WaitTarget(name=name, namespace="default", uid=uid)
    hook = TFJobHook(
        retry_policy=RetryPolicy(budget=0.5, wait_min=0.1, wait_max=0.2),
        rate_limit=RateLimit(rate=1000, burst=1000),
    )
    outage = cluster.api_outage(30, kind="503", retry_after=0)
    try:
        broken = target.error("watching failed: 503")
        outcome, unread = settle(hook.client, target, broken)
        assert outcome is broken
        assert unread is not None and "503" in unread
        assert (
            delete_if_ours(
                hook.client, name=name, namespace="default", uid=uid, log=log, why="the wait failed"
            )
            is False
        )
    finally:
        cluster.remove_api_fault(outage)
        hook.client.close()
    assert tfjob_exists(name)
    delete_tfjob(name)


def test_no_deletion_after_an_error_touches_a_succeeded_tfjob(cluster: Any) -> None:
    name, uid = finished_job(cluster)
    hook = TFJobHook()
    try:
        kept = delete_if_ours(
            hook.client, name=name, namespace="default", uid=uid, log=log, why="task killed"
        )
        assert kept is False and tfjob_exists(name)
        deleted = delete_if_ours(
            hook.client,
            name=name,
            namespace="default",
            uid=uid,
            log=log,
            why="on_finish_action",
            keep_succeeded=False,
        )
        assert deleted is True  # on_finish_action deletes a success on purpose
    finally:
        hook.client.close()
    wait_for(lambda: not tfjob_exists(name), timeout=30, what="TFJob deleted")
