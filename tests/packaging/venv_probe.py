"""Run by the Python of a fresh venv that holds only the installed provider wheel and its locked deps.

``test_wheel_install.py`` starts it as ``<venv>/bin/python -I venv_probe.py DAGS_FOLDER`` (``-I``:
neither this folder nor the checkout is on ``sys.path``, so every import below comes from the
venv's site-packages).  It prints one JSON object on its last line; the test asserts on it.  It
uses only the standard library, Airflow and the provider — this repository's test helpers are
not installed there.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

DAG_ID = "wheel_install_smoke"

DAG_SOURCE = f"""
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

with DAG("{DAG_ID}", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobOperator(
        task_id="train",
        image="python:3.11",
        command=["python", "-c", "print('trained from the installed wheel')"],
        chief=1,
        worker=1,
        deferrable=True,
        poll_interval=1,
    )
"""


def _import_problem(module: str) -> str | None:
    """None when ``module`` imports, else the exception's type and text."""
    try:
        importlib.import_module(module)
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return None


def probe(dags_folder: Path) -> dict[str, Any]:
    started = time.monotonic()
    import tfjob_provider
    from tfjob_provider.operators.tfjob import TFJobOperator
    from tfjob_provider.sensors.tfjob import TFJobSensor
    from tfjob_provider.triggers.tfjob import TFJobTrigger

    result: dict[str, Any] = {
        "provider_file": tfjob_provider.__file__,
        "classes": [cls.__name__ for cls in (TFJobOperator, TFJobSensor, TFJobTrigger)],
        "absent": {
            name: _import_problem(name)
            for name in ("tfjob_provider.sandbox", "tfjob_sandbox", "demo", "tests")
        },
    }

    imported = time.monotonic()
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    path = dags_folder / f"{DAG_ID}.py"
    path.write_text(textwrap.dedent(DAG_SOURCE))
    # Imported from its file in the DAGs folder: dag.test() runs DAGs it finds in a DAG bundle.
    spec = importlib.util.spec_from_file_location(DAG_ID, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    dag_run = module.dag.test()
    ran = time.monotonic()
    with create_session() as session:
        ti = session.query(TaskInstance).filter_by(dag_id=DAG_ID, run_id=dag_run.run_id).one()
        xcom = (
            session.query(XComModel)
            .filter_by(dag_id=DAG_ID, run_id=dag_run.run_id, task_id="train", key="return_value")
            .one_or_none()
        )
        returned = None if xcom is None else XComModel.deserialize_value(xcom)
    result["dag_run_state"] = str(dag_run.state)
    result["task_state"] = str(ti.state)
    result["returned_state"] = None if returned is None else returned.get("state")
    result["returned_chief"] = None if returned is None else returned["replicas"].get("Chief")
    # Figures for the reader of the test's output (-s), not asserted: see benchmarks/ for timings.
    result["seconds"] = {"imports": round(imported - started, 1), "dag_test": round(ran - imported, 1)}
    return result


if __name__ == "__main__":
    print(json.dumps(probe(Path(sys.argv[1]))))
