"""The store's rules where an HTTP round trip adds nothing: selectors, patches, schemas, listeners, GC.

These run against the pure modules and an in-memory :class:`Store` (no loop thread, no sockets),
so they pin down edge cases cheaply; the HTTP-level behaviour is covered by the other
``test_api_*`` modules through the official clients.
"""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tfjob_sandbox.admission.structural_schema import StructuralSchema
from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.api.resource_types import EVENTS, PODS, SERVICES, TFJOBS
from tfjob_sandbox.store.event_recorder import record_event
from tfjob_sandbox.store.patching import JSON_PATCH, MERGE_PATCH, apply_patch, merge_patch
from tfjob_sandbox.store.selectors import FieldSelector, LabelSelector
from tfjob_sandbox.store.store import Store

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=10,
)
json_objects = st.dictionaries(st.text(max_size=3), json_values, max_size=4)


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


# --- selectors ---------------------------------------------------------------------------------------


def test_notin_and_not_equal_match_objects_without_the_label() -> None:
    assert LabelSelector.parse("tier notin (ps)").matches({})
    assert LabelSelector.parse("tier!=ps").matches({"app": "x"})
    assert not LabelSelector.parse("tier in (ps)").matches({})


def test_numeric_comparisons() -> None:
    assert LabelSelector.parse("replicas>2").matches({"replicas": "3"})
    assert not LabelSelector.parse("replicas<2").matches({"replicas": "3"})
    with pytest.raises(ApiError):
        LabelSelector.parse("replicas>two")


@pytest.mark.parametrize("bad", ["a b", "a=(", "=x", "a in x", "key/with/too/many=x", "a=b c"])
def test_malformed_label_selectors_are_400(bad: str) -> None:
    with pytest.raises(ApiError) as error:
        LabelSelector.parse(bad)
    assert error.value.code == 400


def test_field_selector_escapes_and_pins() -> None:
    selector = FieldSelector.parse(r"metadata.name=a\,b,status.phase!=Failed", PODS)
    assert selector.exact("metadata.name") == "a,b"
    assert selector.matches({"metadata": {"name": "a,b"}, "status": {"phase": "Running"}})
    assert not selector.matches({"metadata": {"name": "a,b"}, "status": {"phase": "Failed"}})


# --- patches ----------------------------------------------------------------------------------------


@given(target=json_objects, patch=json_objects)
def test_merge_patch_is_idempotent_and_leaves_the_target_alone(
    target: dict[str, Any], patch: dict[str, Any]
) -> None:
    original = copy.deepcopy(target)
    once = merge_patch(target, patch)
    assert merge_patch(once, patch) == once
    assert target == original


@given(target=json_objects)
def test_empty_merge_patch_changes_nothing(target: dict[str, Any]) -> None:
    assert merge_patch(target, {}) == target


def test_json_patch_operations() -> None:
    target = {"a": {"b": [1, 2]}, "c": "x"}
    result = apply_patch(
        target,
        [
            {"op": "add", "path": "/a/b/1", "value": 9},
            {"op": "add", "path": "/a/b/-", "value": 3},
            {"op": "move", "from": "/c", "path": "/d"},
            {"op": "copy", "from": "/d", "path": "/e"},
            {"op": "test", "path": "/e", "value": "x"},
            {"op": "replace", "path": "/a/b/0", "value": 0},
            {"op": "remove", "path": "/e"},
        ],
        patch_type=JSON_PATCH,
    )
    assert result == {"a": {"b": [0, 9, 2, 3]}, "d": "x"}
    assert target == {"a": {"b": [1, 2]}, "c": "x"}


def test_failed_json_patch_is_422_and_changes_nothing() -> None:
    target = {"a": 1}
    with pytest.raises(ApiError) as error:
        apply_patch(target, [{"op": "replace", "path": "/missing", "value": 1}], patch_type=JSON_PATCH)
    assert error.value.code == 422
    assert target == {"a": 1}


def test_merge_patch_null_deletes() -> None:
    assert apply_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None}}, patch_type=MERGE_PATCH) == {"a": {"c": 2}}


# --- schemas ----------------------------------------------------------------------------------------

SCHEMA = StructuralSchema(
    {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["size"],
                "properties": {
                    "size": {"type": "integer", "default": 1},
                    "free": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                        "properties": {"known": {"type": "string"}},
                    },
                    "maybe": {"type": "string", "nullable": True},
                    "gone": {"type": "string"},
                    "byName": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "object",
                            "properties": {"mode": {"type": "string", "default": "fast"}},
                        },
                    },
                },
            },
        },
    }
)


def test_pruning_keeps_preserved_subtrees_and_nullable_nulls() -> None:
    obj = {
        "metadata": {"name": "x", "bogus": 1},
        "spec": {"size": 2, "free": {"anything": [1]}, "maybe": None, "gone": None, "extra": True},
    }
    pruned, unknown = SCHEMA.prune(obj)
    assert unknown == ["metadata.bogus", "spec.extra"]
    assert pruned["spec"] == {"size": 2, "free": {"anything": [1]}, "maybe": None}
    assert obj["spec"]["extra"] is True  # the input is not modified


def test_defaults_fill_maps_and_validation_reports_paths() -> None:
    obj: dict[str, Any] = {"spec": {"byName": {"a": {}, "b": {"mode": "slow"}}}}
    SCHEMA.apply_defaults(obj)
    assert obj["spec"] == {"size": 1, "byName": {"a": {"mode": "fast"}, "b": {"mode": "slow"}}}
    causes = SCHEMA.validate({"spec": {"free": {"known": 5}}})
    assert {(c["field"], c["reason"]) for c in causes} == {
        ("spec.size", "FieldValueRequired"),
        ("spec.free.known", "FieldValueTypeInvalid"),
    }


# --- store ------------------------------------------------------------------------------------------


def test_listeners_see_reentrant_writes_in_commit_order() -> None:
    store = Store()
    seen: list[tuple[str, str]] = []

    def first(event_type: str, rt: Any, obj: dict[str, Any], old: Any) -> None:
        seen.append(("first", obj["metadata"]["name"]))
        if obj["metadata"]["name"] == "trigger":
            store.create(SERVICES, {"metadata": {"name": "caused"}, "spec": {"ports": [{"port": 1}]}})

    store.add_listener(first)
    store.add_listener(lambda event_type, rt, obj, old: seen.append(("second", obj["metadata"]["name"])))
    store.create(SERVICES, {"metadata": {"name": "trigger"}, "spec": {"ports": [{"port": 1}]}})
    assert seen == [("first", "trigger"), ("second", "trigger"), ("first", "caused"), ("second", "caused")]


def test_listener_arguments_are_private_copies() -> None:
    store = Store()
    store.add_listener(lambda event_type, rt, obj, old: obj["metadata"].update(name="vandalised"))
    store.create(SERVICES, {"metadata": {"name": "safe"}, "spec": {"ports": [{"port": 1}]}})
    assert store.get(SERVICES, "safe")["metadata"]["name"] == "safe"


def test_mutate_takes_everything_but_status_subresource_takes_only_status() -> None:
    store = Store()
    store.create(TFJOBS, {"metadata": {"name": "j"}, "spec": {"a": 1}})

    def edit(job: dict[str, Any]) -> None:
        job["spec"]["a"] = 2
        job["status"] = {"phase": "x"}

    only_status = store.mutate(TFJOBS, "j", edit, subresource="status")
    assert only_status["spec"] == {"a": 1} and only_status["status"] == {"phase": "x"}
    assert only_status["metadata"]["generation"] == 1
    everything = store.mutate(TFJOBS, "j", edit)
    assert everything["spec"] == {"a": 2} and everything["metadata"]["generation"] == 2
    unchanged_rv = everything["metadata"]["resourceVersion"]
    assert store.mutate(TFJOBS, "j", lambda job: None)["metadata"]["resourceVersion"] == unchanged_rv


def test_graceful_pod_deletion_contract() -> None:
    store = Store()
    store.create(PODS, _pod("p", nodeName="node", terminationGracePeriodSeconds=5))
    store.mutate(PODS, "p", lambda pod: pod["status"].update(phase="Running"), subresource="status")
    marked = store.delete(PODS, "p")
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 5
    store.mutate(PODS, "p", lambda pod: pod["status"].update(phase="Succeeded"), subresource="status")
    assert store.peek(PODS, "p") is not None  # a terminal status alone does not remove it
    store.delete(PODS, "p", grace_period_seconds=0)
    assert store.peek(PODS, "p") is None


def test_second_owner_keeps_a_dependent_alive() -> None:
    store = Store()
    owners = [store.create(TFJOBS, {"metadata": {"name": n}, "spec": {}}) for n in ("o1", "o2")]
    refs = [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "name": o["metadata"]["name"],
            "uid": o["metadata"]["uid"],
        }
        for o in owners
    ]
    store.create(
        SERVICES, {"metadata": {"name": "shared", "ownerReferences": refs}, "spec": {"ports": [{"port": 1}]}}
    )
    store.delete(TFJOBS, "o1")
    survivor = store.get(SERVICES, "shared")
    assert [ref["name"] for ref in survivor["metadata"]["ownerReferences"]] == ["o2"]
    store.delete(TFJOBS, "o2")
    assert store.peek(SERVICES, "shared") is None


def test_snapshot_restore_keeps_objects_and_counter() -> None:
    store = Store()
    store.create(TFJOBS, {"metadata": {"name": "kept"}, "spec": {"x": 1}})
    state = json.loads(json.dumps(store.snapshot()))
    restored = Store()
    restored.restore(state, resolve=lambda key: restored.registry.lookup(*key.split("/", 2)))
    assert restored.get(TFJOBS, "kept")["spec"] == {"x": 1}
    assert restored.resource_version == store.resource_version
    later = restored.create(SERVICES, {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 1}]}})
    assert int(later["metadata"]["resourceVersion"]) > int(store.resource_version)

    async def resume_from_before() -> str:
        subscription = restored.watch(TFJOBS, resource_version="1")
        event_type, _ = await subscription.__anext__()
        return event_type

    assert asyncio.run(resume_from_before()) == "ERROR"


def test_record_event_aggregates_repeats() -> None:
    store = Store()
    pod = store.create(PODS, _pod("ev"))
    first = record_event(
        store, involved=pod, reason="BackOff", message="Back-off", type="Warning", component="kubelet"
    )
    again = record_event(
        store, involved=pod, reason="BackOff", message="Back-off", type="Warning", component="kubelet"
    )
    other = record_event(store, involved=pod, reason="Pulled", message="ok", component="kubelet", host="node")
    assert first["metadata"]["name"] == again["metadata"]["name"]
    assert (first["count"], again["count"]) == (1, 2)
    assert again["lastTimestamp"] >= first["firstTimestamp"]
    assert other["metadata"]["name"] != first["metadata"]["name"] and other["source"]["host"] == "node"
    assert first["involvedObject"]["uid"] == pod["metadata"]["uid"]
    assert store.count(EVENTS) == 2


def test_record_event_in_a_missing_namespace_is_dropped_not_raised() -> None:
    store = Store()
    ghost = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "g", "namespace": "nowhere", "uid": "u"}}
    event = record_event(store, involved=ghost, reason="R", message="m", component="c")
    assert event["reason"] == "R" and store.count(EVENTS) == 0


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-5, "<invalid>"),
        (0, "0s"),
        (119, "119s"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600 + 60, "3h1m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 3600, "3d1h"),
        (20 * 86400, "20d"),
        (800 * 86400, "2y70d"),
    ],
)
def test_ages_are_printed_like_kubernetes(seconds: float, shown: str) -> None:
    from tfjob_sandbox.apiserver.tables import human_duration

    assert human_duration(seconds) == shown
