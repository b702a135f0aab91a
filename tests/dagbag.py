"""Parse a folder of DAG files the way the installed Airflow's DAG processor does.

Airflow 3.3 parses through ``BundleDagBag`` (``airflow.dag_processing.dagbag``); 3.0-3.1 through
``airflow.models.dagbag.DagBag``.  Tests that only need "these files import cleanly into these
DAGs" go through here so they also run on the older 3.x releases the provider supports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def parse_dag_folder(folder: Path, *, bundle_name: str) -> Any:
    try:
        from airflow.dag_processing.dagbag import BundleDagBag
    except ImportError:  # Airflow < 3.2
        from airflow.models.dagbag import DagBag

        return DagBag(dag_folder=str(folder), include_examples=False, bundle_path=folder)
    return BundleDagBag(dag_folder=str(folder), bundle_path=folder, bundle_name=bundle_name)
