"""Fixtures for the real-TensorFlow scenarios: the TF interpreter and a loopback sandbox.

Airflow's metadata DB and DAGs folder are the integration tests' (``tests/integration/conftest.py``).

The trainer's replicas run with ``.venv-tf``'s interpreter (the sandbox's "image"), which
``make test`` creates before pytest starts (``make venv-tf``).  Its absence is an error that says
how to create it, never a skip: these tests are the evidence that the product works with real
TensorFlow.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPOSITORY = Path(__file__).resolve().parents[3]
TF_PYTHON = REPOSITORY / ".venv-tf" / "bin" / "python"
TRAINER = REPOSITORY / "example_dags" / "trainer"


@pytest.fixture(scope="session")
def tf_python() -> Path:
    """The interpreter with TensorFlow (``make venv-tf``)."""
    if not TF_PYTHON.exists():
        pytest.fail(
            f"{TF_PYTHON.relative_to(REPOSITORY)} is missing: run `make venv-tf` "
            "(make test does it) to install the locked TensorFlow for the real-TF tests"
        )
    return TF_PYTHON


@pytest.fixture
def tf_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A sandbox of this test's own whose TF_CONFIG lists loopback endpoints (real TF servers talk),
    reachable from Airflow as ``kubernetes_default``."""
    from tfjob_sandbox.testing import running_sandbox

    with running_sandbox(
        workdir=tmp_path / "pods", loopback_tf_config=True, backoff_initial=0.2, backoff_cap=1.0
    ) as sandbox:
        monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", sandbox.airflow_conn_uri)
        yield sandbox
