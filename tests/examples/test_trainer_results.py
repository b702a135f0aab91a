"""The trainer leaves its final step and loss as its termination message (docs/guides/operator.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from trainer.results import TrainingResult, termination_message_path, write_termination_message
from trainer.training import loss_at

from tests.examples.conftest import EXAMPLE_DAGS


def test_the_message_goes_to_the_relocated_file_in_a_pod_or_nowhere(tmp_path: Path) -> None:
    relocated = tmp_path / "dev" / "termination-log"
    assert termination_message_path({"TFJOB_SANDBOX_TERMINATION_MESSAGE_PATH": str(relocated)}) == relocated
    assert termination_message_path({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}) == Path("/dev/termination-log")
    assert termination_message_path({}) is None, "never the host's /dev outside a pod"


def test_the_result_is_one_small_json_document(tmp_path: Path) -> None:
    path = tmp_path / "termination-log"
    result = TrainingResult(final_step=8, steps=8, loss=0.1234, resumed_from=3)
    assert write_termination_message(result, {"TFJOB_SANDBOX_TERMINATION_MESSAGE_PATH": str(path)}) == path
    document = json.loads(path.read_text())
    assert document == {
        "final_step": 8,
        "steps": 8,
        "loss": 0.1234,
        "resumed_from": 3,
        "stopped_early": False,
    }
    assert len(path.read_bytes()) < 4096
    missing = tmp_path / "no-such-dir" / "termination-log"
    assert write_termination_message(result, {"TFJOB_SANDBOX_TERMINATION_MESSAGE_PATH": str(missing)}) is None


def test_a_replica_run_like_a_container_writes_it(tmp_path: Path) -> None:
    path = tmp_path / "termination-log"
    argv = [sys.executable, str(EXAMPLE_DAGS / "trainer"), "--steps", "2", "--step-seconds", "0"]
    env = {"TFJOB_SANDBOX_TERMINATION_MESSAGE_PATH": str(path)}
    finished = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env)
    assert finished.returncode == 0, finished.stderr
    assert json.loads(path.read_text()) == {
        "final_step": 2,
        "steps": 2,
        "loss": loss_at(2),
        "resumed_from": 0,
        "stopped_early": False,
    }
