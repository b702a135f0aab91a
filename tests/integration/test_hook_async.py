"""The async client and the triggerer's shared watch against the sandbox."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tfjob_sandbox import Sandbox
from tfjob_sandbox.testing import tfjob_manifest, unique_name

from tests.integration.async_clients import close_async_clients
from tfjob_provider.hooks.tfjob import TFJobHook
from tfjob_provider.kube import operations as ops
from tfjob_provider.kube.ratelimit import RateLimit
from tfjob_provider.kube.retry import RetryPolicy
from tfjob_provider.kube.shared_watch import SharedJobWatch
from tfjob_provider.kube.tracking import JobSnapshot

pytest_plugins = ["tests.integration.hook_fixtures"]
pytestmark = pytest.mark.timeout(120)


def async_hook(sandbox: Sandbox, **kwargs: Any) -> TFJobHook:
    return TFJobHook(
        None,
        config_file=str(sandbox.kubeconfig_path),
        retry_policy=RetryPolicy(budget=2.0, wait_min=0.05, wait_max=0.2),
        rate_limit=RateLimit(rate=1000, burst=1000),
        **kwargs,
    )


def phases(snapshot: JobSnapshot) -> set[str]:
    return {str(pod.get("status", {}).get("phase")) for pod in snapshot.pods}


def fired(sandbox: Sandbox, fault_id: int) -> int:
    return int(next(rule["fired"] for rule in sandbox.faults.rules() if rule["id"] == fault_id))


def test_one_async_client_per_connection_and_loop(hook_sandbox: Sandbox, default_connection: str) -> None:
    async def scenario() -> None:
        first = await TFJobHook().get_async_client()
        second = await TFJobHook().get_async_client()
        assert first is second
        await first.run(ops.check_tfjob_served(first.session))
        # No connection limit: each namespace's two watch streams hold a connection for minutes,
        # and aiohttp's pool of 100 would stall triggers waiting in more than ~50 namespaces.
        assert first.api_client.rest_client.pool_manager.connector.limit == 0
        await close_async_clients()

    asyncio.run(scenario())


def test_leases_share_one_client_and_the_last_lease_closes_it(
    hook_sandbox: Sandbox, default_connection: str
) -> None:
    async def scenario() -> None:
        hook = TFJobHook()
        async with hook.async_client_lease() as first:
            async with TFJobHook().async_client_lease() as second:
                assert first is second
            assert not first.api_client.rest_client.pool_manager.closed  # one lease still holds it
            await first.run(ops.check_tfjob_served(first.session))
        assert first.api_client.rest_client.pool_manager.closed
        async with hook.async_client_lease() as fresh:
            assert fresh is not first
            await fresh.run(ops.check_tfjob_served(fresh.session))

    asyncio.run(scenario())


def test_a_lease_from_before_close_async_clients_leaves_the_new_client_alone(
    hook_sandbox: Sandbox, default_connection: str
) -> None:
    """close_async_clients() (a test helper) closes the clients under open leases; such
    a lease ending later must not close the client a newer lease now uses."""

    async def scenario() -> None:
        old_lease, new_lease = TFJobHook().async_client_lease(), TFJobHook().async_client_lease()
        old_client = await old_lease.__aenter__()
        await close_async_clients()
        assert old_client.api_client.rest_client.pool_manager.closed
        new_client = await new_lease.__aenter__()
        await old_lease.__aexit__(None, None, None)  # the stale lease ends while the new one holds
        assert not new_client.api_client.rest_client.pool_manager.closed
        await new_client.run(ops.check_tfjob_served(new_client.session))
        await new_lease.__aexit__(None, None, None)
        assert new_client.api_client.rest_client.pool_manager.closed
        assert old_client is not new_client

    asyncio.run(scenario())


def test_rate_limit_comes_from_the_airflow_config(monkeypatch: pytest.MonkeyPatch) -> None:
    from tfjob_provider.hooks.tfjob import default_rate_limit

    monkeypatch.setenv("AIRFLOW__TFJOB_PROVIDER__API_QPS", "7.5")
    monkeypatch.setenv("AIRFLOW__TFJOB_PROVIDER__API_BURST", "3")
    assert default_rate_limit() == RateLimit(rate=7.5, burst=3)


def test_shared_watch_sees_the_job_succeed_and_relists_after_410(
    hook_sandbox: Sandbox, namespace: str
) -> None:
    async def scenario() -> list[set[str]]:
        client = await async_hook(hook_sandbox).get_async_client()
        name = unique_name("async")
        await client.run(
            ops.create_tfjob(
                client.session, tfjob_manifest(name, command=["sleep", "2"]), namespace=namespace
            )
        )
        seen: list[set[str]] = []
        async with SharedJobWatch.subscribe(client, name=name, namespace=namespace) as snapshots:
            async for snapshot in snapshots:
                seen.append(phases(snapshot))
                if len(seen) == 1:
                    hook_sandbox.expire_watch_history()
                    hook_sandbox.drop_watches()
                if "Succeeded" in seen[-1]:
                    break
        assert (await client.get_tfjob(name, namespace=namespace))["metadata"]["name"] == name
        tail = await client.run(ops.read_log_tail(client.session, f"{name}-worker-0", namespace=namespace))
        assert isinstance(tail, str)
        await close_async_clients()
        return seen

    seen = asyncio.run(scenario())
    assert any("Running" in p for p in seen) and "Succeeded" in seen[-1]


def test_fifty_subscribers_share_two_streams(hook_sandbox: Sandbox, namespace: str) -> None:
    watch_counter = hook_sandbox.add_latency(0.0, verbs=["watch"], resources=["tfjobs", "pods"])
    list_counter = hook_sandbox.add_latency(0.0, verbs=["list"], resources=["tfjobs", "pods"])

    async def scenario() -> list[JobSnapshot]:
        client = await async_hook(hook_sandbox).get_async_client()
        names = [unique_name("shared") for _ in range(50)]
        for name in names[:3]:
            await client.run(
                ops.create_tfjob(
                    client.session, tfjob_manifest(name, command=["sleep", "1"]), namespace=namespace
                )
            )

        async def follow(name: str) -> JobSnapshot:
            async with SharedJobWatch.subscribe(client, name=name, namespace=namespace) as subscription:
                async for snapshot in subscription:
                    if name not in names[:3] or "Succeeded" in phases(snapshot):
                        return snapshot
            raise AssertionError("subscription ended")

        results = await asyncio.gather(*(follow(name) for name in names))
        assert SharedJobWatch.active(client, namespace) is None, "streams stop with the last subscriber"
        await close_async_clients()
        return results

    try:
        results = asyncio.run(scenario())
        watches, lists = fired(hook_sandbox, watch_counter), fired(hook_sandbox, list_counter)
    finally:
        hook_sandbox.remove_api_fault(watch_counter)
        hook_sandbox.remove_api_fault(list_counter)
    assert all("Succeeded" in phases(snapshot) for snapshot in results[:3])
    assert all(snapshot.tfjob is None and not snapshot.deleted for snapshot in results[3:])
    assert watches == 2, f"expected one TFJob and one pod stream, saw {watches} watch requests"
    assert lists == 2
