"""What a finished training run reports: its final step and loss, and where it resumed.

Why one value and one place: the log line that ends a replica's output is what people and tests
read to see that training reached the requested step; the same value is what a replica would
hand to Kubernetes as its termination message.  Every training path (pure Python and each
TensorFlow strategy) builds a :class:`TrainingResult` and ends through :func:`report`, so adding
another destination for the result is a change here only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


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


def report(result: TrainingResult, log: Callable[[str], None]) -> None:
    """Announce the result (the replica's last log line)."""
    log(result.summary())
