"""``make demo`` end to end: every scenario passes and no process is left behind.

It runs the demo exactly as ``make demo`` does (``python -m demo``), in a child
process with its own working directory, so a broken example DAG, trainer, demo or provider change
that breaks the story fails ``make test``.  Whatever happens, processes that work in that
directory are killed afterwards and counted as a failure.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from demo.airflow_setup import REPOSITORY
from demo.processes import kill_strays, leftover_processes
from demo.scenarios import SCENARIOS


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_demo_passes_every_scenario_and_leaves_nothing_behind(tmp_path: Path) -> None:
    workdir = tmp_path / "demo"
    started = time.monotonic()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "demo", "--workdir", str(workdir)],
            capture_output=True,
            text=True,
            timeout=540,
            start_new_session=True,
            cwd=REPOSITORY,
        )
    finally:
        strays = leftover_processes(marker="(none)", directory=workdir)
        kill_strays(strays)
    seconds = time.monotonic() - started
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-8000:]
    lines = result.stdout.splitlines()
    for scenario in SCENARIOS:
        assert f"PASS  {scenario.title}" in lines, output[-8000:]
    assert f"All {len(SCENARIOS)} scenarios ended as expected." in lines
    assert "No process left behind: the sandbox, its pods and every Airflow process have exited." in lines
    assert strays == [], f"left behind: {strays}"
    print(f"demo took {seconds:.0f}s")
