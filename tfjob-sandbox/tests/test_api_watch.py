"""Watch semantics the provider's list-then-watch loop needs: resume, bookmarks, 410, timeouts, selectors."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, watch
from tfjob_sandbox import Sandbox
from tfjob_sandbox.testing import async_api_client, running_sandbox, sync_api_client

BOOKMARK_INTERVAL = 0.3


def _service(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "spec": {"ports": [{"port": 80}]}}


def _raw_events(response: Any) -> Iterator[dict[str, Any]]:
    """Newline-delimited watch events from an unparsed (``_preload_content=False``) response."""
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=False):
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                yield json.loads(line)


@pytest.fixture
def quick_bookmarks(tmp_path: Any) -> Iterator[Sandbox]:
    with running_sandbox(workdir=tmp_path / "pods", bookmark_interval=BOOKMARK_INTERVAL) as sb:
        yield sb


def test_watch_from_list_version_sees_every_change_in_order(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    listed = core_v1.list_namespaced_service(namespace)
    core_v1.create_namespaced_service(namespace, _service("w1"))
    core_v1.patch_namespaced_service("w1", namespace, {"metadata": {"labels": {"step": "two"}}})
    core_v1.delete_namespaced_service("w1", namespace)
    seen = []
    stream = watch.Watch().stream(
        core_v1.list_namespaced_service,
        namespace,
        resource_version=listed.metadata.resource_version,
        timeout_seconds=1,
    )
    for event in stream:
        seen.append((event["type"], event["object"].metadata.name, event["object"].metadata.labels))
    assert seen == [
        ("ADDED", "w1", {}),
        ("MODIFIED", "w1", {"step": "two"}),
        ("DELETED", "w1", {"step": "two"}),
    ]


def test_watch_without_version_starts_with_synthetic_added_events(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    for name in ("s-b", "s-a"):
        core_v1.create_namespaced_service(namespace, _service(name))
    events = list(watch.Watch().stream(core_v1.list_namespaced_service, namespace, timeout_seconds=1))
    assert [(e["type"], e["object"].metadata.name) for e in events] == [("ADDED", "s-a"), ("ADDED", "s-b")]


def test_resume_from_an_event_version_replays_only_later_changes(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    first = core_v1.create_namespaced_service(namespace, _service("r1"))
    core_v1.create_namespaced_service(namespace, _service("r2"))
    core_v1.delete_namespaced_service("r1", namespace)
    events = list(
        watch.Watch().stream(
            core_v1.list_namespaced_service,
            namespace,
            resource_version=first.metadata.resource_version,
            timeout_seconds=1,
        )
    )
    assert [(e["type"], e["object"].metadata.name) for e in events] == [("ADDED", "r2"), ("DELETED", "r1")]
    assert int(events[-1]["object"].metadata.resource_version) > int(
        events[0]["object"].metadata.resource_version
    )


def test_selector_transitions_become_added_and_deleted(core_v1: client.CoreV1Api, namespace: str) -> None:
    start = core_v1.list_namespaced_service(namespace).metadata.resource_version
    core_v1.create_namespaced_service(namespace, _service("sel", role="a"))
    core_v1.patch_namespaced_service("sel", namespace, {"metadata": {"labels": {"role": "b"}}})
    core_v1.patch_namespaced_service("sel", namespace, {"metadata": {"labels": {"role": "a"}}})
    events = list(
        watch.Watch().stream(
            core_v1.list_namespaced_service,
            namespace,
            label_selector="role=a",
            resource_version=start,
            timeout_seconds=1,
        )
    )
    assert [e["type"] for e in events] == ["ADDED", "DELETED", "ADDED"]
    assert events[1]["object"].metadata.labels == {"role": "a"}  # the last state the watcher could see


def test_resume_from_forgotten_history_gets_410_error_event(sandbox: Sandbox, api_client: Any) -> None:
    core_v1 = client.CoreV1Api(api_client)
    old = core_v1.create_namespaced_service("default", _service("old")).metadata.resource_version
    core_v1.create_namespaced_service("default", _service("newer"))
    sandbox.expire_watch_history()
    response = core_v1.list_namespaced_service(
        "default", watch=True, resource_version=old, timeout_seconds=2, _preload_content=False
    )
    assert response.status == 200  # the 410 arrives inside the stream, as from kube-apiserver
    events = list(_raw_events(response))
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert (status["code"], status["reason"]) == (410, "Expired")
    assert status["message"].startswith(f"too old resource version: {old} (")


def test_small_history_limit_expires_old_versions(tmp_path: Any) -> None:
    with running_sandbox(workdir=tmp_path / "pods", history_limit=3) as sb:
        api = sync_api_client(sb)
        core_v1 = client.CoreV1Api(api)
        first = core_v1.create_namespaced_service("default", _service("h0")).metadata.resource_version
        for index in range(1, 6):
            core_v1.create_namespaced_service("default", _service(f"h{index}"))
        response = core_v1.list_namespaced_service(
            "default", watch=True, resource_version=first, timeout_seconds=1, _preload_content=False
        )
        events = list(_raw_events(response))
        api.close()
    assert [e["type"] for e in events] == ["ERROR"]
    assert events[0]["object"]["code"] == 410


def test_bookmarks_carry_the_current_version_and_precede_the_timeout(
    quick_bookmarks: Sandbox,
) -> None:
    api = sync_api_client(quick_bookmarks)
    core_v1 = client.CoreV1Api(api)
    created = core_v1.create_namespaced_service("default", _service("bm"))
    started = time.monotonic()
    response = core_v1.list_namespaced_service(
        "default",
        watch=True,
        allow_watch_bookmarks=True,
        resource_version=created.metadata.resource_version,
        timeout_seconds=1,
        _preload_content=False,
    )
    events = list(_raw_events(response))
    elapsed = time.monotonic() - started
    api.close()
    assert 0.9 <= elapsed < 3.0
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert len(bookmarks) >= 2  # periodic ones plus the one just before the deadline
    assert events[-1]["type"] == "BOOKMARK"
    assert bookmarks[0]["object"] == {
        "kind": "Service",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": bookmarks[0]["object"]["metadata"]["resourceVersion"]},
    }
    assert int(bookmarks[-1]["object"]["metadata"]["resourceVersion"]) >= int(
        created.metadata.resource_version
    )


def test_no_bookmarks_unless_requested(quick_bookmarks: Sandbox) -> None:
    api = sync_api_client(quick_bookmarks)
    response = client.CoreV1Api(api).list_namespaced_service(
        "default", watch=True, resource_version="1", timeout_seconds=1, _preload_content=False
    )
    events = list(_raw_events(response))
    api.close()
    assert all(e["type"] != "BOOKMARK" for e in events)


def test_watch_one_object_by_field_selector(core_v1: client.CoreV1Api, namespace: str) -> None:
    start = core_v1.list_namespaced_service(namespace).metadata.resource_version
    core_v1.create_namespaced_service(namespace, _service("mine"))
    core_v1.create_namespaced_service(namespace, _service("other"))
    events = list(
        watch.Watch().stream(
            core_v1.list_namespaced_service,
            namespace,
            field_selector="metadata.name=mine",
            resource_version=start,
            timeout_seconds=1,
        )
    )
    assert [e["object"].metadata.name for e in events] == ["mine"]


def test_async_client_watch_receives_live_changes(module_sandbox: Sandbox, namespace: str) -> None:
    from kubernetes_asyncio import client as aclient
    from kubernetes_asyncio import watch as awatch

    async def scenario() -> list[tuple[str, str]]:
        api = await async_api_client(module_sandbox)
        try:
            core = aclient.CoreV1Api(api)
            listed = await core.list_namespaced_service(namespace)
            seen: list[tuple[str, str]] = []

            async def consume() -> None:
                stream = awatch.Watch().stream(
                    core.list_namespaced_service,
                    namespace,
                    resource_version=listed.metadata.resource_version,
                    timeout_seconds=5,
                )
                async for event in stream:
                    seen.append((event["type"], event["object"].metadata.name))
                    if event["type"] == "DELETED":
                        break

            consumer = asyncio.create_task(consume())
            await asyncio.sleep(0.1)
            await core.create_namespaced_service(namespace, _service("live"))
            await core.delete_namespaced_service("live", namespace)
            await asyncio.wait_for(consumer, 10)
            return seen
        finally:
            await api.close()

    assert asyncio.run(scenario()) == [("ADDED", "live"), ("DELETED", "live")]


def test_watch_latency_is_small_with_many_watchers(module_sandbox: Sandbox, namespace: str) -> None:
    """Smoke check of the fan-out path: 20 concurrent watchers all see a change promptly."""
    from kubernetes_asyncio import client as aclient

    async def scenario() -> float:
        api = await async_api_client(module_sandbox)
        try:
            core = aclient.CoreV1Api(api)
            start_rv = (await core.list_namespaced_service(namespace)).metadata.resource_version
            arrived: list[float] = []

            async def one_watcher() -> None:
                response = await core.list_namespaced_service(
                    namespace,
                    watch=True,
                    resource_version=start_rv,
                    timeout_seconds=5,
                    _preload_content=False,
                )
                async for _line in response.content:
                    arrived.append(time.perf_counter())
                    response.release()
                    return

            watchers = [asyncio.create_task(one_watcher()) for _ in range(20)]
            await asyncio.sleep(0.3)
            sent = time.perf_counter()
            await core.create_namespaced_service(namespace, _service("fanout"))
            await asyncio.wait_for(asyncio.gather(*watchers), 10)
            return max(arrived) - sent
        finally:
            await api.close()

    assert asyncio.run(scenario()) < 1.0
