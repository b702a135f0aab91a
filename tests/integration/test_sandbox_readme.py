"""The pytest example in ``tfjob-sandbox/README.md`` is run as a user would run it, so it cannot rot.

The README's Python blocks that start with a ``# <path>.py`` comment are a small user project (a
DAG and its tests).  They are written into a temporary folder and run by ``pytest`` in a child
process, with the plugin found through its entry point and none of this repository's test set-up:
no ``AIRFLOW_*`` variable of this session reaches the child, as none would in a user's shell.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

README = Path(__file__).resolve().parents[2] / "tfjob-sandbox" / "README.md"
_BLOCK = re.compile(r"^```python\n# (\S+\.py)\n(.*?)^```$", flags=re.MULTILINE | re.DOTALL)


def example_files() -> dict[str, str]:
    """``{relative path: text}`` of the README's example project."""
    return {path: f"# {path}\n{body}" for path, body in _BLOCK.findall(README.read_text(encoding="utf-8"))}


def test_the_readme_holds_a_dag_and_its_test() -> None:
    files = example_files()
    assert set(files) == {"dags/train_mnist.py", "tests/conftest.py", "tests/test_train_mnist.py"}
    assert "dag.test()" in files["tests/test_train_mnist.py"]
    assert "AIRFLOW_CONN_KUBERNETES_DEFAULT" in files["tests/conftest.py"]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_readme_example_passes_in_a_fresh_pytest(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [name for name in os.environ if name.startswith("AIRFLOW")]:
        monkeypatch.delenv(name)
    for path, text in example_files().items():
        target = pytester.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "tests", timeout=840)
    result.assert_outcomes(passed=1)
