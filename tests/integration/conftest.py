"""Fixtures for tests that run real Airflow against the sandbox cluster."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import DAGS_FOLDER
from tests.integration.airflow_harness import migrate_airflow_db


@pytest.fixture(scope="session")
def airflow_db() -> None:
    """A migrated SQLite metadata DB in the session's temporary AIRFLOW_HOME."""
    migrate_airflow_db()


@pytest.fixture
def dags_folder(airflow_db: None) -> Iterator[Path]:
    """The DAGs folder ``dag.test()`` reads; DAG files a test writes are removed afterwards."""
    before = set(DAGS_FOLDER.iterdir())
    yield DAGS_FOLDER
    for path in set(DAGS_FOLDER.iterdir()) - before:
        if path.is_file():
            path.unlink()
