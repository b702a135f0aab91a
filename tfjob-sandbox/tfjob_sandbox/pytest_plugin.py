"""The pytest plugin (entry point ``pytest11``): a session-scoped sandbox for a team's DAG tests.

Fixtures ``tfjob_sandbox``, ``tfjob_sandbox_kubeconfig`` and ``tfjob_sandbox_conn_uri``; options with
``--tfjob-sandbox-option KEY=VALUE`` (values parsed as JSON where they can be).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tfjob_sandbox.launch.in_thread import Sandbox


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tfjob-sandbox")
    group.addoption(
        "--tfjob-sandbox-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the session's sandbox (as for Sandbox(**options)); repeatable",
    )


_OPTIONS_KEY = pytest.StashKey[dict[str, Any]]()


def _options(config: pytest.Config) -> dict[str, Any]:
    options: dict[str, Any] = {}
    items = config.getoption("--tfjob-sandbox-option")
    if not items:
        return options
    from tfjob_sandbox.launch.assembly import (
        SandboxOptions,  # only where asked: every pytest run loads the plugin
    )

    known = {f.name for f in fields(SandboxOptions)} - {"extra"}
    for item in items:
        key, sep, raw = str(item).partition("=")
        if not sep or not key:
            raise pytest.UsageError(f"--tfjob-sandbox-option takes KEY=VALUE, not {item!r}")
        if key not in known:
            raise pytest.UsageError(
                f"--tfjob-sandbox-option {key}: not a sandbox option; known: {', '.join(sorted(known))}"
            )
        try:
            options[key] = json.loads(raw)
        except ValueError:
            options[key] = raw
    return options


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_OPTIONS_KEY] = _options(config)


@pytest.fixture(scope="session")
def tfjob_sandbox(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Sandbox]:
    """A sandbox cluster for the whole test session, stopped (with every pod process) at its end."""
    from tfjob_sandbox.launch.in_thread import Sandbox

    configured: dict[str, Any] = request.config.stash[_OPTIONS_KEY]
    options = {"workdir": tmp_path_factory.mktemp("tfjob-sandbox"), **configured}
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
