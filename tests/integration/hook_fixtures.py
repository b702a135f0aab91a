"""Shared set-up for the hook tests: one sandbox per module (TFJobs validated by the CRD it installs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tfjob_sandbox import Sandbox
from tfjob_sandbox.testing import running_sandbox, sync_api_client, unique_name

FAST_OPTIONS: dict[str, Any] = {"backoff_initial": 0.2, "backoff_cap": 1.0}


def create_namespace(sandbox: Sandbox, name: str | None = None) -> str:
    from kubernetes import client

    name = name or unique_name("ns")
    api = sync_api_client(sandbox)
    try:
        client.CoreV1Api(api).create_namespace({"metadata": {"name": name}})
    finally:
        api.close()
    return name


@pytest.fixture(scope="module")
def hook_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    with running_sandbox(workdir=tmp_path_factory.mktemp("pods"), **FAST_OPTIONS) as sandbox:
        yield sandbox


@pytest.fixture
def namespace(hook_sandbox: Sandbox) -> str:
    return create_namespace(hook_sandbox)


@pytest.fixture
def default_connection(hook_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> str:
    """``AIRFLOW_CONN_KUBERNETES_DEFAULT`` in the JSON form, pointing at the sandbox's kubeconfig."""
    value = hook_sandbox.airflow_conn_uri
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", value)
    return value


def write_kubeconfig(path: Path, *, sandbox: Sandbox, token: str, namespace: str = "default") -> Path:
    """A kubeconfig for the sandbox with another bearer token (an RBAC-limited user)."""
    from tfjob_sandbox.launch.kubeconfig import kubeconfig_document

    document = kubeconfig_document(
        server=sandbox.url, token=token, ca_pem=sandbox.ca_pem, namespace=namespace
    )
    path.write_text(yaml.safe_dump(document))
    return path


def list_tfjobs(client: Any, *, namespace: str, label_selector: str | None = None) -> list[dict[str, Any]]:
    """TFJobs of a namespace through the hook's sync transport (the provider itself lists TFJobs
    only inside its watches, so this one-shot list lives with the tests)."""
    from tfjob_provider.kube import operations as ops
    from tfjob_provider.kube import requests as rq

    request = rq.list_tfjobs(namespace=namespace, label_selector=label_selector)
    body = client.run(ops.call_list(client.session, request))
    return list(body.get("items") or [])
