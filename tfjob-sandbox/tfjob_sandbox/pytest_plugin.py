"""pytest plugin (entry point ``pytest11``): a live sandbox cluster for a team's own DAG tests.

Installed with ``tfjob-sandbox``, it offers three fixtures, all scoped to the test session so the
cluster starts once (about a second) however many tests use it:

``tfjob_sandbox``
    the running :class:`~tfjob_sandbox.cluster.Sandbox` (its faults, store and kubelet are there
    for tests that need to break things);
``tfjob_sandbox_kubeconfig``
    the path of the kubeconfig it wrote, for ``kubectl`` or ``kubernetes.config``;
``tfjob_sandbox_conn_uri``
    an Airflow ``kubernetes`` connection URI that reads that kubeconfig; set it as
    ``AIRFLOW_CONN_KUBERNETES_DEFAULT`` (``monkeypatch.setenv``) and operators reach the sandbox
    exactly as they would reach a cluster.

Options for the session's sandbox come from ``--tfjob-sandbox-option KEY=VALUE`` (repeatable;
values are parsed as JSON where they can be, e.g. ``backoff_cap=1.0``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tfjob_sandbox.cluster import Sandbox


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tfjob-sandbox")
    group.addoption(
        "--tfjob-sandbox-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the session's sandbox (as for Sandbox(**options)); repeatable",
    )


def _options(config: pytest.Config) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for item in config.getoption("--tfjob-sandbox-option"):
        key, sep, raw = str(item).partition("=")
        if not sep or not key:
            raise pytest.UsageError(f"--tfjob-sandbox-option takes KEY=VALUE, not {item!r}")
        try:
            options[key] = json.loads(raw)
        except ValueError:
            options[key] = raw
    return options


@pytest.fixture(scope="session")
def tfjob_sandbox(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Sandbox]:
    """A sandbox cluster for the whole test session, stopped (with every pod process) at its end."""
    options = {"workdir": tmp_path_factory.mktemp("tfjob-sandbox"), **_options(request.config)}
    with Sandbox(**options) as sandbox:
        yield sandbox


@pytest.fixture(scope="session")
def tfjob_sandbox_kubeconfig(tfjob_sandbox: Sandbox) -> Path:
    """The kubeconfig of the session's sandbox (server URL, CA and bearer token)."""
    return tfjob_sandbox.kubeconfig_path


@pytest.fixture(scope="session")
def tfjob_sandbox_conn_uri(tfjob_sandbox: Sandbox) -> str:
    """An Airflow ``kubernetes`` connection URI that points at the session's sandbox."""
    return tfjob_sandbox.airflow_conn_uri
