"""Checkpoints and markers in the shared directory: how a recreated replica picks up where it died.

Why: a TFJob pod that the operator recreates (``ExitCode`` policy) or a TFJob that an Airflow
retry resubmits starts the program from scratch; only what it left on shared storage survives.
Each training replica keeps one small JSON file, ``<type>-<index>.json`` (last finished step and
its loss), written atomically (temporary file + rename) so a kill mid-write never leaves a torn
checkpoint.  Marker files live next to them: ``failed-<replica>-step-<n>`` (the replica already
crashed there on purpose — see ``--fail-once``), ``finished-<replica>`` (a worker trained every
step; with ``--sync-replicas`` the chief waits for these before it exits) and ``DONE`` (the chief
finished; parameter servers and evaluators may stop).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

DONE_MARKER = "DONE"


@dataclass(frozen=True)
class Checkpoint:
    """Progress of one replica: ``step`` steps are finished, the last with ``loss``."""

    step: int
    loss: float


class CheckpointStore:
    """The shared checkpoint directory, or nothing at all (``directory=None``: no resume)."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    @property
    def enabled(self) -> bool:
        return self.directory is not None

    def _path(self, name: str) -> Path:
        assert self.directory is not None
        return self.directory / name

    def load(self, replica: str) -> Checkpoint | None:
        """The replica's last checkpoint, or None (none yet, no directory, or unreadable)."""
        if self.directory is None:
            return None
        try:
            data = json.loads(self._path(f"{replica}.json").read_text(encoding="utf-8"))
            return Checkpoint(step=int(data["step"]), loss=float(data["loss"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def save(self, replica: str, checkpoint: Checkpoint) -> None:
        """Write atomically: a reader sees the old checkpoint or the new one, never half of one."""
        if self.directory is None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=f".{replica}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                json.dump({"step": checkpoint.step, "loss": checkpoint.loss}, stream)
            os.replace(temporary, self._path(f"{replica}.json"))
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def has_marker(self, name: str) -> bool:
        return self.directory is not None and self._path(name).exists()

    def has_marker_since(self, name: str, moment: float) -> bool:
        """The marker exists and was set at or after ``moment`` (``time.time()``): a ``DONE`` left by
        an earlier run of the same task in the same directory does not stop this run's servers."""
        if self.directory is None:
            return False
        try:
            return self._path(name).stat().st_mtime >= moment
        except OSError:
            return False

    def set_marker(self, name: str) -> None:
        if self.directory is None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        self._path(name).touch()


def finished_marker(replica: str) -> str:
    """Name of the marker a worker leaves when it has trained every step and is about to exit."""
    return f"finished-{replica}"


def failure_marker(replica: str, step: int) -> str:
    """Name of the marker that says ``replica`` already crashed on purpose at ``step``."""
    return f"failed-{replica}-step-{step}"
