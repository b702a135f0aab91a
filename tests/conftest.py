"""Test-session set-up shared by every test directory.

Airflow reads its configuration when it is first imported, so the temporary ``AIRFLOW_HOME``
(with its own SQLite database and DAGs folder) must be in the environment before any test
module imports Airflow.  Pure-module tests never import Airflow; they pay nothing for this.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="tfjob-provider-airflow-"))
_DAGS_FOLDER = _AIRFLOW_HOME / "dags"
_DAGS_FOLDER.mkdir()

os.environ["AIRFLOW_HOME"] = str(_AIRFLOW_HOME)
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(_DAGS_FOLDER)
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{_AIRFLOW_HOME / 'airflow.db'}"
os.environ["AIRFLOW__CORE__ALLOWED_DESERIALIZATION_CLASSES_REGEXP"] = r"(airflow|tfjob_provider)\..*"
# Tests must not wait minutes between retries or for a dag.test() scheduling loop.
os.environ["AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY"] = "0"
# The sandbox answers in microseconds; the client-go default of 5 requests/s per connection would
# only make the tests wait.  Tests that are about the bucket configure their own limits.
os.environ["AIRFLOW__TFJOB_PROVIDER__API_QPS"] = "100"
os.environ["AIRFLOW__TFJOB_PROVIDER__API_BURST"] = "200"
os.environ.pop("AIRFLOW_CONN_KUBERNETES_DEFAULT", None)

AIRFLOW_HOME = _AIRFLOW_HOME
DAGS_FOLDER = _DAGS_FOLDER
