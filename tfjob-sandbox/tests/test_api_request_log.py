"""The sandbox counts the requests it serves, so tests can hold the provider to its request budget."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client
from tfjob_sandbox import Sandbox
from tfjob_sandbox.admin_client import SandboxAdminClient
from tfjob_sandbox.testing import running_sandbox, sync_api_client


@pytest.fixture
def counted(tmp_path: Path) -> Iterator[Sandbox]:
    with running_sandbox(workdir=tmp_path / "pods") as sb:
        yield sb


def test_requests_are_counted_by_verb_and_resource(counted: Sandbox) -> None:
    counted.reset_request_counts()
    with sync_api_client(counted) as api:
        core = client.CoreV1Api(api)
        core.list_namespaced_pod("default")
        core.list_namespaced_pod("default")
        core.read_namespace("default")
    assert counted.request_total(verb="list", resource="pods") == 2
    assert counted.request_total(verb="get", resource="namespaces") == 1
    assert counted.request_total(verb="create") == 0


def test_admin_calls_are_not_counted_and_counts_reach_other_processes(counted: Sandbox) -> None:
    admin = SandboxAdminClient.from_kubeconfig(counted.kubeconfig_path)
    admin.reset_request_counts()
    admin.status()
    assert admin.request_counts() == []
    with sync_api_client(counted) as api:
        client.CoreV1Api(api).list_namespaced_service("default")
    rows = admin.request_counts()
    assert [(row["verb"], row["resource"], row["count"]) for row in rows] == [("list", "services", 1)]
    admin.reset_request_counts()
    assert counted.request_total() == 0
