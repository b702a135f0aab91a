"""A throw-away Airflow installation: its environment, its migrated SQLite DB, its settings for the examples.

Why environment variables only (no ``airflow.cfg`` edits): every Airflow process the demo or the
full-stack test starts must see the same configuration, and the user's own shell configuration
(``AIRFLOW__*``, ``AIRFLOW_CONN_*``, ``AIRFLOW_VAR_*``) must not leak into it.  So each run builds
one environment from scratch — a private ``AIRFLOW_HOME``, the DAGs folder, the
``kubernetes_default`` connection pointing at the sandbox's kubeconfig, and the Airflow Variables
that point the example DAGs at the repository's trainer — and hands it to every process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

#: Where the example DAGs and their trainer live in a clone of the repository.
REPOSITORY = Path(__file__).resolve().parents[1]
EXAMPLE_DAGS = REPOSITORY / "example_dags"
TRAINER = EXAMPLE_DAGS / "trainer"

_INHERITED_PREFIXES = ("AIRFLOW__", "AIRFLOW_CONN_", "AIRFLOW_VAR_", "_AIRFLOW")
#: Seconds an Airflow process waits for the SQLite write lock before "database is locked".
SQLITE_BUSY_TIMEOUT_S = 60


def airflow_cli() -> list[str]:
    """The ``airflow`` command of this interpreter's environment."""
    return [sys.executable, "-m", "airflow"]


def example_variables(
    *, checkpoint_dir: Path, step_seconds: float, tf_python: Path | None = None
) -> dict[str, str]:
    """``AIRFLOW_VAR_*`` that run the example DAGs on the sandbox: the trainer from this repository,
    run by this interpreter (pods are local processes there), checkpoints in a local directory.

    ``tf_python``: run the trainer with that interpreter instead (one with TensorFlow, e.g.
    ``.venv-tf/bin/python``) and with ``--framework tensorflow``: real distributed TensorFlow.
    """
    return {
        "AIRFLOW_VAR_TFJOB_EXAMPLE_PYTHON": str(tf_python) if tf_python is not None else sys.executable,
        "AIRFLOW_VAR_TFJOB_EXAMPLE_TRAINER": str(TRAINER),
        "AIRFLOW_VAR_TFJOB_EXAMPLE_CHECKPOINT_DIR": str(checkpoint_dir),
        "AIRFLOW_VAR_TFJOB_EXAMPLE_STEP_SECONDS": f"{step_seconds:g}",
        "AIRFLOW_VAR_TFJOB_EXAMPLE_FRAMEWORK": "tensorflow" if tf_python is not None else "python",
    }


def airflow_environment(
    home: Path,
    *,
    dags_folder: Path,
    connection_uri: str,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of every Airflow process of one run (inherited Airflow settings removed)."""
    base = {key: value for key, value in os.environ.items() if not key.startswith(_INHERITED_PREFIXES)}
    bin_dir = str(Path(sys.executable).parent)
    base["PATH"] = os.pathsep.join([bin_dir, base.get("PATH", "")])
    env = {
        **base,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        # SQLite lets one process write at a time; the others wait up to pysqlite's ``timeout``
        # (5 s by default) and then fail with "database is locked".  Five Airflow processes on a
        # loaded 2-core machine can hold the lock longer than that (seen in CI as an HTTP 500
        # from the api-server), so they wait longer instead.
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": (
            f"sqlite:///{home / 'airflow.db'}?timeout={SQLITE_BUSY_TIMEOUT_S}"
        ),
        "AIRFLOW__LOGGING__COLORED_CONSOLE_LOG": "False",
        "AIRFLOW_CONN_KUBERNETES_DEFAULT": connection_uri,
        "PYTHONUNBUFFERED": "1",
    }
    env.update(extra or {})
    return env


def migrate_database(env: Mapping[str, str], *, log_path: Path, timeout: float = 300.0) -> None:
    """``airflow db migrate`` in a child process; RuntimeError with the log's end if it fails."""
    home = Path(env["AIRFLOW_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        result = subprocess.run(
            [*airflow_cli(), "db", "migrate"],
            env=dict(env),
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    if result.returncode != 0:
        text = log_path.read_text(errors="replace").splitlines()[-20:]
        raise RuntimeError("airflow db migrate failed:\n" + "\n".join(text))


def copy_database(source_home: Path, target_home: Path) -> None:
    """Give ``target_home`` its own copy of a migrated metadata DB (SQLite allows one writer, so
    runs that go side by side each get a database of their own)."""
    target_home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source_home / "airflow.db", target_home / "airflow.db")
