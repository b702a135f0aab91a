"""Make the example training program importable as ``trainer`` (it lives in ``example_dags/``).

The trainer is a program that containers run as ``python /opt/trainer``, not a module of the
provider package, so its tests reach it through the DAGs folder — as Airflow itself would.
"""

from __future__ import annotations

import sys
from pathlib import Path

EXAMPLE_DAGS = Path(__file__).resolve().parents[2] / "example_dags"

if str(EXAMPLE_DAGS) not in sys.path:
    sys.path.insert(0, str(EXAMPLE_DAGS))
