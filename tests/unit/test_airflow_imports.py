"""The provider reaches Airflow's task-facing names through ``common.compat``.

Airflow 3.2 moved exceptions and several base classes into the Task SDK (``airflow.sdk``);
3.0 and 3.1 keep some of them only in ``airflow.exceptions`` and ``airflow.models``.  The
``apache-airflow-providers-common-compat`` shim resolves each name to wherever the installed
Airflow keeps it, which is how one wheel supports every 3.x.  Only the newest Airflow runs in
CI, so an import straight from ``airflow.sdk`` would pass every test and still break users on
3.0/3.1; this scan (``ast`` only, no Airflow imported) catches it.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "tfjob_provider"

# Imports guarded by ``try/except ImportError`` with a fallback for older Airflow.
GUARDED = {("operators/tfjob.py", "airflow.sdk.exceptions")}


def _direct_sdk_imports() -> list[tuple[str, int, str]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            modules: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            for module in modules:
                if (module == "airflow.sdk" or module.startswith("airflow.sdk.")) and (
                    relative,
                    module,
                ) not in GUARDED:
                    found.append((relative, node.lineno, module))
    return found


def test_no_module_imports_airflow_sdk_directly() -> None:
    offenders = _direct_sdk_imports()
    assert offenders == [], "import these names from airflow.providers.common.compat.sdk instead: " + repr(
        offenders
    )


def test_the_scan_sees_imports_at_all() -> None:
    """Guard the guard: the package does import Airflow names, through the compat shim."""
    compat_imports = [
        path
        for path in PACKAGE.rglob("*.py")
        if "from airflow.providers.common.compat.sdk import" in path.read_text()
    ]
    assert len(compat_imports) >= 5
