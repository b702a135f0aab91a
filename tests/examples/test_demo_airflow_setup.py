"""The throw-away Airflow installation's database settings hold under a busy SQLite file."""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from pathlib import Path

from sqlalchemy import create_engine, text

from demo.airflow_setup import SQLITE_BUSY_TIMEOUT_S, airflow_environment, example_variables

#: pysqlite's own wait for a locked database; Airflow processes that wait only this long fail
#: with "database is locked" when another holds the write lock longer (seen in CI).
PYSQLITE_DEFAULT_TIMEOUT_S = 5.0


def test_a_writer_waits_out_a_write_lock_longer_than_the_driver_default(tmp_path: Path) -> None:
    """The URL the Airflow processes get makes SQLAlchemy wait for the lock, not fail after 5 s."""
    env = airflow_environment(tmp_path, dags_folder=tmp_path, connection_uri="kubernetes://")
    database = tmp_path / "airflow.db"
    with sqlite3.connect(database) as setup:
        setup.execute("CREATE TABLE t (x INTEGER)")

    holder = sqlite3.connect(database, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # the write lock, as a long scheduler transaction holds it
    holder.execute("INSERT INTO t VALUES (1)")
    hold_for = PYSQLITE_DEFAULT_TIMEOUT_S + 1.0
    assert hold_for < SQLITE_BUSY_TIMEOUT_S, "the lock must be released before the writer gives up"
    release = threading.Timer(hold_for, holder.commit)
    release.start()
    engine = create_engine(env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
    started = time.monotonic()
    try:
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO t VALUES (2)"))
        waited = time.monotonic() - started
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT x FROM t ORDER BY x")).scalars().all()
    finally:
        release.join()
        holder.close()
        engine.dispose()
    assert waited >= PYSQLITE_DEFAULT_TIMEOUT_S, f"the write did not wait for the lock ({waited:.1f}s)"
    assert rows == [1, 2]


def test_the_example_variables_point_the_trainer_at_real_tensorflow_for_demo_tf(tmp_path: Path) -> None:
    """``make demo-tf`` runs the same DAGs with .venv-tf's interpreter and --framework tensorflow."""
    plain = example_variables(checkpoint_dir=tmp_path, step_seconds=0.25)
    assert plain["AIRFLOW_VAR_TFJOB_EXAMPLE_PYTHON"] == sys.executable
    assert plain["AIRFLOW_VAR_TFJOB_EXAMPLE_FRAMEWORK"] == "python"
    tf_python = tmp_path / ".venv-tf" / "bin" / "python"
    real = example_variables(checkpoint_dir=tmp_path, step_seconds=0.25, tf_python=tf_python)
    assert real["AIRFLOW_VAR_TFJOB_EXAMPLE_PYTHON"] == str(tf_python)
    assert real["AIRFLOW_VAR_TFJOB_EXAMPLE_FRAMEWORK"] == "tensorflow"
    assert {key: value for key, value in real.items() if "PYTHON" not in key and "FRAMEWORK" not in key} == {
        key: value for key, value in plain.items() if "PYTHON" not in key and "FRAMEWORK" not in key
    }
