"""Label selectors, field selectors and paged lists, as the provider uses them to find pods and events."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from tfjob_sandbox.testing import pod_manifest, wait_for

LABELLED_PODS = {
    "a-1": {"app": "train", "tier": "worker"},
    "a-2": {"app": "train", "tier": "ps"},
    "a-3": {"app": "serve"},
    "a-4": {},
}


@pytest.fixture
def labelled(core_v1: client.CoreV1Api, namespace: str) -> str:
    for name, labels in LABELLED_PODS.items():
        core_v1.create_namespaced_pod(namespace, pod_manifest(name, labels=labels, command=["sleep", "60"]))
    return namespace


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=train", {"a-1", "a-2"}),
        ("app==train", {"a-1", "a-2"}),
        ("app!=train", {"a-3", "a-4"}),
        ("tier in (worker, ps)", {"a-1", "a-2"}),
        ("tier notin (ps)", {"a-1", "a-3", "a-4"}),
        ("tier", {"a-1", "a-2"}),
        ("!tier", {"a-3", "a-4"}),
        ("app=train,tier=ps", {"a-2"}),
        ("", {"a-1", "a-2", "a-3", "a-4"}),
    ],
)
def test_label_selector_operators(
    core_v1: client.CoreV1Api, labelled: str, selector: str, expected: set[str]
) -> None:
    names = {
        pod.metadata.name for pod in core_v1.list_namespaced_pod(labelled, label_selector=selector).items
    }
    assert names == expected


def test_malformed_label_selector_is_400(core_v1: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as error:
        core_v1.list_namespaced_pod(namespace, label_selector="app in (a")
    assert error.value.status == 400
    assert json.loads(error.value.body)["message"].startswith("unable to parse requirement")


def test_field_selectors_on_name_namespace_and_phase(core_v1: client.CoreV1Api, labelled: str) -> None:
    by_name = core_v1.list_namespaced_pod(labelled, field_selector="metadata.name=a-3").items
    assert [pod.metadata.name for pod in by_name] == ["a-3"]
    not_named = core_v1.list_pod_for_all_namespaces(
        field_selector=f"metadata.namespace={labelled},metadata.name!=a-3"
    ).items
    assert {pod.metadata.name for pod in not_named} == {"a-1", "a-2", "a-4"}
    running = wait_for(
        lambda: (
            (items := core_v1.list_namespaced_pod(labelled, field_selector="status.phase=Running").items)
            and len(items) == 4
            and items
        ),
        what="all four pods Running",
    )
    assert {pod.spec.node_name for pod in running} == {"sandbox-node"}
    assert core_v1.list_namespaced_pod(labelled, field_selector="spec.nodeName=elsewhere").items == []


def test_unsupported_field_label_is_400(core_v1: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as error:
        core_v1.list_namespaced_pod(namespace, field_selector="spec.containers=x")
    assert error.value.status == 400
    assert json.loads(error.value.body)["message"] == "field label not supported: spec.containers"


def test_event_field_selectors_in_both_event_apis(
    module_api_client: object, core_v1: client.CoreV1Api, namespace: str
) -> None:
    core_v1.create_namespaced_pod(namespace, pod_manifest("evented"))
    core_events = wait_for(
        lambda: (
            core_v1.list_namespaced_event(
                namespace,
                field_selector="involvedObject.kind=Pod,involvedObject.name=evented,reason=Scheduled",
            ).items
        ),
        what="a Scheduled event",
    )
    assert core_events[0].involved_object.name == "evented"
    assert core_events[0].source.component == "default-scheduler"
    events_v1 = client.EventsV1Api(module_api_client)
    # Read raw: events from the classic recorder have "eventTime": null, which the official client's
    # EventsV1Event model rejects (the same happens against a real cluster).
    raw = events_v1.list_namespaced_event(
        namespace, field_selector="regarding.name=evented", _preload_content=False
    )
    new_shape = json.loads(raw.data)["items"]
    assert {event["reason"] for event in new_shape} >= {"Scheduled"}
    assert all(event["regarding"]["name"] == "evented" and "note" in event for event in new_shape)
    assert all(event["eventTime"] is None and event["deprecatedCount"] >= 1 for event in new_shape)
    same_storage = json.loads(
        events_v1.list_namespaced_event(
            namespace, field_selector="involvedObject.name=evented", _preload_content=False
        ).data
    )["items"]
    assert {e["metadata"]["name"] for e in same_storage} == {e["metadata"]["name"] for e in new_shape}


def test_limit_and_continue_page_through_a_list(core_v1: client.CoreV1Api, namespace: str) -> None:
    for index in range(7):
        core_v1.create_namespaced_service(
            namespace, {"metadata": {"name": f"svc-{index}"}, "spec": {"ports": [{"port": 80}]}}
        )
    seen: list[str] = []
    first = core_v1.list_namespaced_service(namespace, limit=3)
    assert first.metadata.remaining_item_count == 4
    page, token = first, first.metadata._continue
    seen.extend(s.metadata.name for s in page.items)
    while token:
        page = core_v1.list_namespaced_service(namespace, limit=3, _continue=token)
        assert page.metadata.resource_version == first.metadata.resource_version
        seen.extend(s.metadata.name for s in page.items)
        token = page.metadata._continue
    assert seen == [f"svc-{index}" for index in range(7)]


def test_expired_continue_token_is_410(sandbox: object, api_client: object) -> None:
    core_v1 = client.CoreV1Api(api_client)
    for index in range(3):
        core_v1.create_namespaced_service(
            "default", {"metadata": {"name": f"page-{index}"}, "spec": {"ports": [{"port": 80}]}}
        )
    token = core_v1.list_namespaced_service("default", limit=1).metadata._continue
    core_v1.create_namespaced_service(
        "default", {"metadata": {"name": "later"}, "spec": {"ports": [{"port": 1}]}}
    )
    sandbox.expire_watch_history()  # type: ignore[attr-defined]  # like etcd compaction
    with pytest.raises(ApiException) as error:
        core_v1.list_namespaced_service("default", limit=1, _continue=token)
    assert error.value.status == 410
    assert json.loads(error.value.body)["reason"] == "Expired"
