"""Fixtures for tests that run real Airflow against the sandbox cluster."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DAGS_FOLDER
from tests.integration.airflow_harness import migrate_airflow_db


@pytest.fixture(scope="session")
def airflow_db() -> None:
    """A migrated SQLite metadata DB in the session's temporary AIRFLOW_HOME, and Airflow's ORM
    set up in this process.

    Why set up the ORM here: several tests watch the metadata DB from a helper thread while
    ``dag.test()`` runs.  If that thread's first query configures the mappers (which imports every
    Airflow model under SQLAlchemy's configure lock) while the main thread is importing
    ``airflow.models.dagrun`` (holding that module's import lock, waiting for the configure lock),
    the two wait for each other for ever; seen when such a test was the first to touch the ORM.
    """
    migrate_airflow_db()
    from airflow.models import import_all_models
    from sqlalchemy.orm import configure_mappers

    import_all_models()
    configure_mappers()


@pytest.fixture
def dags_folder(airflow_db: None) -> Iterator[Path]:
    """The DAGs folder ``dag.test()`` reads; DAG files a test writes are removed afterwards."""
    before = set(DAGS_FOLDER.iterdir())
    yield DAGS_FOLDER
    for path in set(DAGS_FOLDER.iterdir()) - before:
        if path.is_file():
            path.unlink()


#: Short kubelet back-offs so crash-looping test pods restart quickly.
FAST_SANDBOX_OPTIONS: dict[str, Any] = {"backoff_initial": 0.2, "backoff_cap": 1.0}


@pytest.fixture(scope="session")
def shared_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One sandbox cluster for every integration test that injects no faults (isolated by job names)."""
    from tfjob_sandbox.testing import running_sandbox

    with running_sandbox(workdir=tmp_path_factory.mktemp("shared-pods"), **FAST_SANDBOX_OPTIONS) as sandbox:
        yield sandbox


@pytest.fixture
def cluster(shared_sandbox: Any, dags_folder: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The shared sandbox, reachable from Airflow as ``kubernetes_default`` for this test."""
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", shared_sandbox.airflow_conn_uri)
    return shared_sandbox


@pytest.fixture
def own_cluster(tmp_path: Path, dags_folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A sandbox of this test's own, for tests that inject faults or restart parts of it."""
    from tfjob_sandbox.testing import running_sandbox

    with running_sandbox(workdir=tmp_path / "pods", **FAST_SANDBOX_OPTIONS) as sandbox:
        monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", sandbox.airflow_conn_uri)
        yield sandbox
