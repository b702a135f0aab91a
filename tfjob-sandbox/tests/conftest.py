"""Fixtures for the sandbox suites: a live sandbox (per test or per module) and official clients for it.

The reusable parts live in :mod:`tfjob_sandbox.testing` so the Airflow integration tests
can build the same fixtures.  Module-scoped fixtures keep the suites fast; tests that share one
sandbox isolate themselves with the per-test ``namespace`` fixture.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from tfjob_sandbox import Sandbox
from tfjob_sandbox.testing import running_sandbox, sync_api_client, unique_name

#: Short back-offs so crash-looping pods in tests restart quickly.
FAST_OPTIONS: dict[str, Any] = {"backoff_initial": 0.2, "backoff_cap": 1.0}


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    """A fresh sandbox for one test (HTTPS, random token, work directory under ``tmp_path``)."""
    with running_sandbox(workdir=tmp_path / "pods", **FAST_OPTIONS) as sb:
        yield sb


@pytest.fixture
def api_client(sandbox: Sandbox) -> Iterator[Any]:
    """An official ``kubernetes`` ApiClient for the per-test ``sandbox``."""
    api = sync_api_client(sandbox)
    yield api
    api.close()


@pytest.fixture(scope="module")
def module_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """One sandbox shared by a test module; use the ``namespace`` fixture to stay isolated."""
    with running_sandbox(workdir=tmp_path_factory.mktemp("pods"), **FAST_OPTIONS) as sb:
        yield sb


@pytest.fixture(scope="module")
def module_api_client(module_sandbox: Sandbox) -> Iterator[Any]:
    api = sync_api_client(module_sandbox)
    yield api
    api.close()


@pytest.fixture
def core_v1(module_api_client: Any) -> client.CoreV1Api:
    return client.CoreV1Api(module_api_client)


@pytest.fixture
def custom_objects(module_api_client: Any) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(module_api_client)


@pytest.fixture
def namespace(core_v1: client.CoreV1Api) -> str:
    """A namespace of its own for one test in the module sandbox."""
    name = unique_name("ns")
    core_v1.create_namespace({"metadata": {"name": name}})
    return name
