"""The verdict engine's contracts with the rest of the project: purity and documented reasons.

``policy`` must import in an environment without Airflow or a Kubernetes client (the trigger, the
sensor and user code import it), and every reason code it can return must be explained in
``docs/concepts/rules.md`` with its state, because the README and the task logs point users there.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tfjob_provider import policy

REPO = Path(__file__).resolve().parents[2]

_IMPORT_AND_LIST_MODULES = """
import importlib.abc, json, sys

REFUSED = {"airflow", "kubernetes", "kubernetes_asyncio", "aiohttp", "yaml", "urllib3"}

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in REFUSED:
            raise ImportError(f"{name} must not be imported by the verdict engine")
        return None

sys.meta_path.insert(0, Refuse())
import tfjob_provider.policy
print(json.dumps(sorted(sys.modules)))
"""


def test_policy_imports_only_the_standard_library_and_the_provider() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_AND_LIST_MODULES],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    top_levels = {name.split(".")[0] for name in json.loads(result.stdout)}
    foreign = top_levels - set(sys.stdlib_module_names) - {"tfjob_provider", "__main__"}
    assert not foreign, f"policy pulled in non-standard modules: {sorted(foreign)}"


def test_every_reason_is_documented_with_its_state() -> None:
    rules_md = (REPO / "docs" / "concepts" / "rules.md").read_text(encoding="utf-8")
    section = rules_md.split("## 6. Reason codes", 1)[1].split("\n## ", 1)[0]
    documented = dict(re.findall(r"^\| `(\w+)` \| (\w+) \|", section, flags=re.MULTILINE))
    for reason, state in policy.REASON_STATES.items():
        assert documented.get(reason) == state.value, (
            f"{reason} ({state.value}) is not in the table of docs/concepts/rules.md"
        )
    assert set(documented) <= set(policy.REASON_STATES), (
        "docs/concepts/rules.md lists reasons the engine does not have"
    )


def test_every_reason_constant_is_exported_and_registered() -> None:
    constants = {
        name: value
        for name, value in vars(policy).items()
        if name.startswith("REASON_") and isinstance(value, str)
    }
    assert set(constants.values()) == set(policy.REASON_STATES)
    assert set(constants) <= set(policy.__all__)
    assert all(re.fullmatch(r"[A-Z][A-Za-z0-9]+", value) for value in constants.values())  # short CamelCase
