"""Discovery documents as clients read them, and raw-HTTP checks of malformed requests (400/405/415)."""

from __future__ import annotations

import http.client
import json
import ssl
from typing import Any

from kubernetes import client, dynamic
from tfjob_sandbox import Sandbox


def test_version_and_core_discovery(module_api_client: Any) -> None:
    assert client.VersionApi(module_api_client).get_code().git_version.startswith("v1.31")
    core = client.CoreV1Api(module_api_client).get_api_resources()
    by_name = {resource.name: resource for resource in core.resources}
    assert by_name["pods"].namespaced and by_name["pods"].kind == "Pod"
    assert by_name["pods/log"].verbs == ["get"]
    assert by_name["namespaces"].namespaced is False
    assert {"pods", "pods/log", "pods/status", "services", "events", "namespaces"} <= set(by_name)
    assert client.CoreApi(module_api_client).get_api_versions().versions == ["v1"]


def test_group_discovery_lists_tfjobs_and_events_api(module_api_client: Any) -> None:
    groups = {g.name: g for g in client.ApisApi(module_api_client).get_api_versions().groups}
    assert groups["kubeflow.org"].preferred_version.group_version == "kubeflow.org/v1"
    assert {"events.k8s.io", "apiextensions.k8s.io"} <= set(groups)


def test_dynamic_client_resolves_tfjobs(module_api_client: Any) -> None:
    dyn = dynamic.DynamicClient(module_api_client)
    tfjobs = dyn.resources.get(api_version="kubeflow.org/v1", kind="TFJob")
    assert tfjobs.name == "tfjobs" and tfjobs.namespaced
    assert tfjobs.get(namespace="default").kind == "TFJobList"


def test_tfjobs_can_be_left_unserved(tmp_path: Any) -> None:
    with Sandbox(workdir=tmp_path / "pods", serve_tfjobs=False) as sb:
        from tfjob_sandbox.testing import sync_api_client

        api = sync_api_client(sb)
        groups = {g.name for g in client.ApisApi(api).get_api_versions().groups}
        assert "kubeflow.org" not in groups
        try:
            client.CustomObjectsApi(api).list_namespaced_custom_object(
                "kubeflow.org", "v1", "default", "tfjobs"
            )
        except client.ApiException as error:
            assert error.status == 404
        else:
            raise AssertionError("tfjobs should not be served without the CRD")
        api.close()


class _Raw:
    """A bare HTTPS connection for requests the official client refuses to send."""

    def __init__(self, sandbox: Sandbox) -> None:
        assert sandbox.ca_pem is not None
        host, port = sandbox.url.removeprefix("https://").rsplit(":", 1)
        self.connection = http.client.HTTPSConnection(
            host, int(port), context=ssl.create_default_context(cadata=sandbox.ca_pem.decode()), timeout=10
        )
        self.token = sandbox.token

    def request(
        self, method: str, path: str, body: bytes | None = None, content_type: str = "application/json"
    ) -> tuple[int, dict[str, Any], http.client.HTTPResponse]:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": content_type}
        self.connection.request(method, path, body=body, headers=headers)
        response = self.connection.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data else {}, response


def test_malformed_json_is_400(module_sandbox: Sandbox) -> None:
    status, body, _ = _Raw(module_sandbox).request("POST", "/api/v1/namespaces/default/pods", b"{not json")
    assert (status, body["reason"]) == (400, "BadRequest")
    assert "json parse error" in body["message"]


def test_unknown_content_type_is_415(module_sandbox: Sandbox) -> None:
    status, body, _ = _Raw(module_sandbox).request(
        "POST", "/api/v1/namespaces/default/services", b"<xml/>", content_type="application/xml"
    )
    assert (status, body["reason"]) == (415, "UnsupportedMediaType")


def test_server_side_apply_is_415(module_sandbox: Sandbox) -> None:
    status, _, _ = _Raw(module_sandbox).request(
        "PATCH", "/api/v1/namespaces/default/services/x", b"{}", content_type="application/apply-patch+yaml"
    )
    assert status == 415


def test_post_to_an_object_url_is_405(module_sandbox: Sandbox) -> None:
    status, body, _ = _Raw(module_sandbox).request("POST", "/api/v1/namespaces/default/pods/some-pod", b"{}")
    assert (status, body["reason"]) == (405, "MethodNotAllowed")


def test_duplicate_json_fields_follow_field_validation(module_sandbox: Sandbox) -> None:
    raw = _Raw(module_sandbox)
    duplicated = b'{"metadata": {"name": "dup", "name": "dup"}, "spec": {"ports": [{"port": 1}]}}'
    status, body, _ = raw.request(
        "POST", "/api/v1/namespaces/default/services?fieldValidation=Strict", duplicated
    )
    assert status == 400 and body["message"] == 'strict decoding error: duplicate field "name"'
    status, _, response = raw.request("POST", "/api/v1/namespaces/default/services", duplicated)
    assert status == 201
    assert response.getheader("Warning") == '299 - "duplicate field \\"name\\""'


def test_name_in_url_and_body_must_agree_on_update(module_sandbox: Sandbox) -> None:
    raw = _Raw(module_sandbox)
    raw.request(
        "POST",
        "/api/v1/namespaces/default/services",
        b'{"metadata": {"name": "named"}, "spec": {"ports": [{"port": 1}]}}',
    )
    status, body, _ = raw.request(
        "PUT",
        "/api/v1/namespaces/default/services/named",
        b'{"metadata": {"name": "other"}, "spec": {"ports": [{"port": 1}]}}',
    )
    assert status == 400
    assert body["message"] == "the name of the object (other) does not match the name on the URL (named)"


def test_health_endpoints(module_sandbox: Sandbox) -> None:
    raw = _Raw(module_sandbox)
    for path in ("/healthz", "/readyz", "/livez"):
        raw.connection.request("GET", path, headers={"Authorization": f"Bearer {raw.token}"})
        response = raw.connection.getresponse()
        assert (response.status, response.read()) == (200, b"ok")
