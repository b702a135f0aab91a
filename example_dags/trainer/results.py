"""What a finished training run reports: its final step and loss, and where it resumed.

Why one value and one place: the log line that ends a replica's output is what people and tests
read to see that training reached the requested step; the same value is what a replica would
hand to Kubernetes as its termination message.  Every training path (pure Python and each
TensorFlow strategy) builds a :class:`TrainingResult` and ends through :func:`report`, so adding
another destination for the result is a change here only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

#: Where a container's termination message goes on a cluster (its ``terminationMessagePath``).
TERMINATION_MESSAGE_PATH = "/dev/termination-log"
#: Set by the sandbox's kubelet, which runs containers as host processes: where that file is instead.
RELOCATED_TERMINATION_MESSAGE_ENV = "TFJOB_SANDBOX_TERMINATION_MESSAGE_PATH"


@dataclass(frozen=True)
class TrainingResult:
    """The end of one replica's training run.

    :param final_step: the last step trained (``steps`` unless stopped early).
    :param steps: the number of steps asked for.
    :param loss: the loss of the last step (None when no step was trained in this run).
    :param resumed_from: the checkpoint step this run started after (0: from scratch).
    :param stopped_early: training ended before ``steps`` (a stop file).
    """

    final_step: int
    steps: int
    loss: float | None
    resumed_from: int = 0
    stopped_early: bool = False

    def summary(self) -> str:
        """``training finished: 8/8 steps, final loss=0.1234`` (the line tests and users look for)."""
        how = "stopped early" if self.stopped_early else "finished"
        loss = f"{self.loss:.4f}" if self.loss is not None else "n/a"
        return f"training {how}: {self.final_step}/{self.steps} steps, final loss={loss}"


def termination_message_path(environ: Mapping[str, str]) -> Path | None:
    """Where this replica's termination message goes: the sandbox's relocated file, the
    container's ``/dev/termination-log`` inside a Kubernetes pod, else nowhere (a run on a laptop
    or in a test must not write into the host's ``/dev``)."""
    relocated = environ.get(RELOCATED_TERMINATION_MESSAGE_ENV)
    if relocated:
        return Path(relocated)
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return Path(TERMINATION_MESSAGE_PATH)
    return None


def write_termination_message(result: TrainingResult, environ: Mapping[str, str]) -> Path | None:
    """Leave the result as this container's termination message, one small JSON document
    (``{"final_step": 8, "steps": 8, "loss": 0.1234, ...}``): the chief's becomes the Airflow
    task's ``outputs`` (docs/guides/operator.md, "What the task returns").  Returns the file
    written, None when there is none."""
    path = termination_message_path(environ)
    if path is None:
        return None
    try:
        path.write_text(json.dumps(asdict(result)), encoding="utf-8")
    except OSError:
        return None  # a missing or read-only file must not fail a training that succeeded
    return path


def report(
    result: TrainingResult, log: Callable[[str], None], environ: Mapping[str, str] | None = None
) -> None:
    """Announce the result (the replica's last log line) and leave it as the termination message."""
    log(result.summary())
    write_termination_message(result, os.environ if environ is None else environ)
