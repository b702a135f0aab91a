"""Request builders: paths, query parameters, bodies and the RBAC rule each request exercises."""

from __future__ import annotations

import pytest

from tfjob_provider.kube import requests as rq


def test_create_always_asks_for_strict_field_validation() -> None:
    request = rq.create_tfjob({"kind": "TFJob"}, namespace="team-a")
    assert request.method == "POST"
    assert request.path == "/apis/kubeflow.org/v1/namespaces/team-a/tfjobs"
    assert dict(request.query) == {"fieldValidation": "Strict"}
    assert request.body == {"kind": "TFJob"}
    assert request.rbac == rq.RbacRule("create", "kubeflow.org", "tfjobs", "team-a")


def test_dry_run_create_adds_dry_run_all() -> None:
    request = rq.create_tfjob({}, namespace="ns", dry_run=True)
    assert request.query == (("fieldValidation", "Strict"), ("dryRun", "All"))


def test_delete_sends_propagation_and_grace_period_in_delete_options() -> None:
    request = rq.delete_tfjob("mnist", namespace="ns", grace_period_seconds=0)
    assert request.method == "DELETE"
    assert request.path.endswith("/namespaces/ns/tfjobs/mnist")
    assert request.body == {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "propagationPolicy": "Foreground",
        "gracePeriodSeconds": 0,
    }


def test_delete_rejects_unknown_propagation() -> None:
    with pytest.raises(ValueError, match="propagation"):
        rq.delete_tfjob("x", namespace="ns", propagation="Sideways")


def test_names_are_percent_encoded_in_paths() -> None:
    assert rq.get_tfjob("a/b", namespace="n s").path == "/apis/kubeflow.org/v1/namespaces/n%20s/tfjobs/a%2Fb"


def test_watch_resumes_from_resource_version_with_bookmarks_and_server_timeout() -> None:
    request = rq.watch_pods(
        namespace="ns", resource_version="42", timeout_seconds=377, read_timeout=70.0, label_selector="a=b"
    )
    assert request.stream and ("watch", "true") in request.query
    assert dict(request.query) == {
        "watch": "true",
        "resourceVersion": "42",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "377",
        "labelSelector": "a=b",
    }
    assert request.read_timeout == 70.0
    assert request.rbac is not None and request.rbac.verb == "watch" and request.rbac.api_group == ""


def test_job_pods_are_selected_by_the_operators_job_name_label() -> None:
    request = rq.list_pods(namespace="ns", label_selector=rq.job_pods_selector("mnist"))
    assert request.path == "/api/v1/namespaces/ns/pods"
    assert dict(request.query) == {"labelSelector": "training.kubeflow.org/job-name=mnist"}


def test_log_tail_is_bounded_by_lines_and_bytes_and_not_streamed() -> None:
    request = rq.read_log(
        "mnist-worker-0", namespace="ns", container="tensorflow", tail_lines=50, limit_bytes=4096
    )
    assert request.path == "/api/v1/namespaces/ns/pods/mnist-worker-0/log"
    assert dict(request.query) == {"container": "tensorflow", "tailLines": "50", "limitBytes": "4096"}
    assert not request.stream
    assert request.rbac == rq.RbacRule("get", "", "pods/log", "ns")


def test_followed_log_is_a_stream() -> None:
    request = rq.read_log("p", namespace="ns", container="tensorflow", follow=True, since_seconds=30)
    assert request.stream and ("watch", "true") not in request.query
    assert dict(request.query)["follow"] == "true" and dict(request.query)["sinceSeconds"] == "30"


def test_events_are_selected_by_involved_object_name() -> None:
    request = rq.list_events(namespace="ns", involved_name="mnist-chief-0")
    assert dict(request.query) == {"fieldSelector": "involvedObject.name=mnist-chief-0"}
    assert request.rbac == rq.RbacRule("list", "", "events", "ns")


def test_discovery_asks_for_the_kubeflow_group_version() -> None:
    assert rq.discover_tfjob_api().path == "/apis/kubeflow.org/v1"
