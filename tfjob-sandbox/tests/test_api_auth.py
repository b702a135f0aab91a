"""Authentication (bearer token, 401) and RBAC (403 with kube-apiserver's wording) of the sandbox API."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException
from tfjob_sandbox import Sandbox
from tfjob_sandbox.admin_client import SandboxAdminClient, SandboxAdminError
from tfjob_sandbox.testing import running_sandbox, tfjob_manifest

RBAC = {
    "tokens": {"airflow-token": "airflow", "nobody-token": "nobody"},
    "users": {
        "airflow": [
            {
                "verbs": ["create", "get", "list", "watch", "delete", "patch"],
                "apiGroups": ["kubeflow.org"],
                "resources": ["tfjobs"],
                "namespaces": ["default"],
            },
            {
                "verbs": ["get", "list", "watch"],
                "apiGroups": [""],
                "resources": ["pods", "pods/log", "events"],
                "namespaces": ["default"],
            },
        ],
    },
}


@pytest.fixture(scope="module")
def rbac_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    directory = tmp_path_factory.mktemp("rbac")
    rbac_file = directory / "rbac.yaml"
    rbac_file.write_text(yaml.safe_dump(RBAC))
    with running_sandbox(workdir=directory / "pods", rbac_file=rbac_file) as sb:
        yield sb


def _client_for(sandbox: Sandbox, token: str | None) -> client.ApiClient:
    configuration = client.Configuration()
    configuration.host = sandbox.url
    configuration.ssl_ca_cert = str(_ca_file(sandbox))
    if token is not None:
        # kubernetes 36 looks the prefix up under "BearerToken" (kubernetes-client/python#2595).
        configuration.api_key = {"BearerToken": token}
        configuration.api_key_prefix = {"BearerToken": "Bearer"}
    return client.ApiClient(configuration)


def _ca_file(sandbox: Sandbox) -> Path:
    path = sandbox.kubeconfig_path.with_name("ca-for-tests.crt")
    assert sandbox.ca_pem is not None
    path.write_bytes(sandbox.ca_pem)
    return path


def _error(call: Any, *args: Any, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as error:
        call(*args, **kwargs)
    return error.value.status, json.loads(error.value.body)


def test_missing_or_wrong_token_is_401(rbac_sandbox: Sandbox) -> None:
    for token in (None, "not-a-token"):
        api = _client_for(rbac_sandbox, token)
        status, body = _error(client.CoreV1Api(api).list_namespaced_pod, "default")
        assert (status, body["reason"], body["message"]) == (401, "Unauthorized", "Unauthorized")
        api.close()


def test_rules_grant_exactly_what_they_list(rbac_sandbox: Sandbox) -> None:
    api = _client_for(rbac_sandbox, "airflow-token")
    tfjobs = client.CustomObjectsApi(api)
    created = tfjobs.create_namespaced_custom_object(
        "kubeflow.org", "v1", "default", "tfjobs", tfjob_manifest("ok")
    )
    assert created["metadata"]["name"] == "ok"
    assert client.CoreV1Api(api).list_namespaced_pod("default").items is not None
    status, body = _error(
        tfjobs.create_namespaced_custom_object, "kubeflow.org", "v1", "team-b", "tfjobs", tfjob_manifest("x")
    )
    assert status == 403
    assert body["message"] == (
        'tfjobs.kubeflow.org is forbidden: User "airflow" cannot create resource "tfjobs" in API group '
        '"kubeflow.org" in the namespace "team-b"'
    )
    assert body["details"] == {"name": "", "group": "kubeflow.org", "kind": "tfjobs"}
    api.close()


def test_forbidden_messages_name_object_subresource_and_scope(rbac_sandbox: Sandbox) -> None:
    api = _client_for(rbac_sandbox, "airflow-token")
    tfjobs = client.CustomObjectsApi(api)
    _, on_status = _error(
        tfjobs.patch_namespaced_custom_object_status, "kubeflow.org", "v1", "default", "tfjobs", "ok", {}
    )
    assert on_status["message"] == (
        'tfjobs.kubeflow.org "ok" is forbidden: User "airflow" cannot patch resource "tfjobs/status" '
        'in API group "kubeflow.org" in the namespace "default"'
    )
    _, cluster_scoped = _error(client.CoreV1Api(api).list_namespace)
    assert cluster_scoped["message"] == (
        'namespaces is forbidden: User "airflow" cannot list resource "namespaces" in API group "" '
        "at the cluster scope"
    )
    api.close()


def test_user_without_rules_is_forbidden_everything_but_discovery(rbac_sandbox: Sandbox) -> None:
    api = _client_for(rbac_sandbox, "nobody-token")
    assert client.VersionApi(api).get_code().major == "1"
    groups = {group.name for group in client.ApisApi(api).get_api_versions().groups}
    assert "kubeflow.org" in groups
    resources = client.CustomObjectsApi(api).get_api_resources("kubeflow.org", "v1").resources
    assert "tfjobs" in {resource.name for resource in resources}
    status, body = _error(client.CoreV1Api(api).read_namespaced_pod_log, "any", "default")
    assert status == 403
    assert 'cannot get resource "pods/log" in API group "" in the namespace "default"' in body["message"]
    api.close()


def test_admin_token_may_do_anything_and_others_may_not_use_admin_endpoints(rbac_sandbox: Sandbox) -> None:
    admin = _client_for(rbac_sandbox, rbac_sandbox.token)
    assert client.CoreV1Api(admin).list_namespace().items
    admin.close()
    assert "resourceVersion" in SandboxAdminClient.from_kubeconfig(rbac_sandbox.kubeconfig_path).status()
    outsider = SandboxAdminClient(rbac_sandbox.url, token="airflow-token", ca_pem=rbac_sandbox.ca_pem)
    with pytest.raises(SandboxAdminError) as error:
        outsider.status()
    assert error.value.status == 403


def test_https_is_verified_against_the_kubeconfig_ca(module_sandbox: Sandbox) -> None:
    assert module_sandbox.url.startswith("https://127.0.0.1:")
    with pytest.raises(urllib.error.URLError) as unverified:
        urllib.request.urlopen(f"{module_sandbox.url}/version", timeout=10)
    assert isinstance(unverified.value.reason, ssl.SSLCertVerificationError)
    request = urllib.request.Request(
        f"{module_sandbox.url}/version", headers={"Authorization": f"Bearer {module_sandbox.token}"}
    )
    assert module_sandbox.ca_pem is not None
    context = ssl.create_default_context(cadata=module_sandbox.ca_pem.decode())
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        assert json.loads(response.read())["major"] == "1"
    config = yaml.safe_load(module_sandbox.kubeconfig_path.read_text())
    assert config["current-context"] == config["contexts"][0]["name"]
    assert config["contexts"][0]["context"]["namespace"] == "default"
    assert config["clusters"][0]["cluster"]["certificate-authority-data"]
    assert oct(module_sandbox.kubeconfig_path.stat().st_mode & 0o777) == "0o600"


def test_plain_http_mode(tmp_path: Path) -> None:
    with running_sandbox(workdir=tmp_path / "pods", http=True, token="fixed-token") as sb:
        assert sb.url.startswith("http://")
        config = yaml.safe_load(sb.kubeconfig_path.read_text())
        assert "certificate-authority-data" not in config["clusters"][0]["cluster"]
        assert config["users"][0]["user"]["token"] == "fixed-token"
        from tfjob_sandbox.testing import sync_api_client

        api = sync_api_client(sb)
        assert client.CoreV1Api(api).read_namespace("default").status.phase == "Active"
        api.close()


def test_remote_bind_needs_explicit_permission() -> None:
    with pytest.raises(ValueError, match="allow_remote"):
        Sandbox(host="0.0.0.0")


def test_airflow_connection_value_points_at_the_kubeconfig(module_sandbox: Sandbox) -> None:
    value = json.loads(module_sandbox.airflow_conn_uri)
    assert value == {
        "conn_type": "kubernetes",
        "extra": {"kube_config_path": str(module_sandbox.kubeconfig_path), "namespace": "default"},
    }
