"""Checkpoints and markers: round trip, atomic replace, unreadable files, no directory at all."""

from __future__ import annotations

from pathlib import Path

from trainer.checkpoints import Checkpoint, CheckpointStore, failure_marker


def test_round_trip_and_overwrite(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "nested" / "dir")
    assert store.load("worker-1") is None
    store.save("worker-1", Checkpoint(step=3, loss=1.25))
    store.save("worker-1", Checkpoint(step=4, loss=1.0))
    assert store.load("worker-1") == Checkpoint(step=4, loss=1.0)
    assert store.load("worker-0") is None
    assert sorted(p.name for p in (tmp_path / "nested" / "dir").iterdir()) == ["worker-1.json"]


def test_unreadable_checkpoint_is_treated_as_none(tmp_path: Path) -> None:
    (tmp_path / "chief-0.json").write_text('{"step": "x"}')
    (tmp_path / "ps-0.json").write_text("{torn")
    store = CheckpointStore(tmp_path)
    assert store.load("chief-0") is None
    assert store.load("ps-0") is None


def test_markers(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "c")
    name = failure_marker("worker-1", 3)
    assert name == "failed-worker-1-step-3"
    assert not store.has_marker(name)
    store.set_marker(name)
    assert store.has_marker(name)
    assert not store.has_marker(failure_marker("worker-1", 4))


def test_without_a_directory_nothing_is_kept() -> None:
    store = CheckpointStore(None)
    store.save("chief-0", Checkpoint(step=1, loss=1.0))
    store.set_marker("DONE")
    assert (store.enabled, store.load("chief-0"), store.has_marker("DONE")) == (False, None, False)
