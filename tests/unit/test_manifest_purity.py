"""The manifest and naming modules stay pure: no Airflow, no Kubernetes client, no third party but PyYAML.

The import-linter contract covers ``manifest`` (and, through its imports, the ``manifest_*``
modules); ``naming`` is checked here as well, in a fresh interpreter so that modules other tests
imported cannot hide an import.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _third_party_modules_loaded_by(module: str) -> set[str]:
    code = (
        "import json, sys\n"
        f"import {module}\n"
        "names = {name.split('.')[0] for name in sys.modules}\n"
        "print(json.dumps(sorted(names - set(sys.stdlib_module_names) - set(sys.builtin_module_names))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(result.stdout)) - {"tfjob_provider", "__main__"}
    # PyYAML's optional libyaml binding is a Cython extension, which registers its runtime modules.
    return {name for name in loaded if not (name.startswith("_cython_") or name == "cython_runtime")}


@pytest.mark.parametrize(
    ("module", "allowed"),
    [("tfjob_provider.naming", set()), ("tfjob_provider.manifest", {"yaml", "_yaml"})],
)
def test_pure_modules_import_only_the_standard_library(module: str, allowed: set[str]) -> None:
    assert _third_party_modules_loaded_by(module) <= allowed
