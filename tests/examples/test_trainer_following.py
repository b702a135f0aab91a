"""A serving replica's view of the job: peers coming up, the chief's steps, the end of training."""

from __future__ import annotations

import os
import re
import socket
import time
from pathlib import Path

import pytest
from trainer.checkpoints import DONE_MARKER, Checkpoint, CheckpointStore
from trainer.following import ChiefProgress, wait_until_listening
from trainer.tf_config import ClusterRole

PS_0 = ClusterRole("ps", 0, {"chief": {0: "c:1"}, "worker": {0: "w:1"}, "ps": {0: "p:1"}})


def test_waits_until_every_peer_listens_and_says_so_once() -> None:
    attempts: list[tuple[str, int]] = []
    up_after = {("127.0.0.1", 2001): 3, ("127.0.0.1", 2002): 1}
    lines: list[str] = []

    def connect(address: tuple[str, int], timeout: float) -> socket.socket:
        attempts.append(address)
        if attempts.count(address) < up_after[address]:
            raise ConnectionRefusedError(111, "Connection refused")
        return socket.socket()  # closed by the caller, never connected

    now = [0.0]
    wait_until_listening(
        ["127.0.0.1:2001", "127.0.0.1:2002"],
        timeout=60,
        log=lines.append,
        connect=connect,
        sleep=lambda seconds: now.__setitem__(0, now[0] + seconds),
        clock=lambda: now[0],
    )
    assert attempts == [("127.0.0.1", 2001)] * 3 + [("127.0.0.1", 2002)]
    assert lines == ["waiting for 127.0.0.1:2001, 127.0.0.1:2002 to start listening"]


def test_a_peer_that_never_listens_times_out_naming_it() -> None:
    def refused(address: tuple[str, int], timeout: float) -> socket.socket:
        raise ConnectionRefusedError(111, "Connection refused")

    now = [0.0]
    with pytest.raises(TimeoutError, match=re.escape("127.0.0.1:2003 did not start listening within 5s")):
        wait_until_listening(
            ["127.0.0.1:2003"],
            timeout=5,
            log=lambda line: None,
            connect=refused,
            sleep=lambda seconds: now.__setitem__(0, now[0] + seconds),
            clock=lambda: now[0],
        )


def test_a_real_listening_socket_is_found_at_once() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        lines: list[str] = []
        wait_until_listening([f"127.0.0.1:{server.getsockname()[1]}"], timeout=5, log=lines.append)
    assert lines == []


def test_steps_are_reached_as_the_chief_checkpoints_them(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    progress = ChiefProgress(store, PS_0, started=time.time())
    assert progress.newly_reached() == []  # step 1 is being trained: reached before we looked
    store.save("chief-0", Checkpoint(step=1, loss=1.0))
    assert progress.newly_reached() == [2]
    store.save("chief-0", Checkpoint(step=4, loss=0.5))  # we looked away for a while
    assert progress.newly_reached() == [3, 4, 5]
    assert progress.newly_reached() == []


def test_steps_done_before_the_replica_started_are_not_reached_again(tmp_path: Path) -> None:
    """The servers of a retry start after the first try's chief checkpointed step 3."""
    store = CheckpointStore(tmp_path)
    store.save("chief-0", Checkpoint(step=3, loss=1.0))
    progress = ChiefProgress(store, PS_0, started=time.time())
    assert progress.newly_reached() == []
    store.save("chief-0", Checkpoint(step=4, loss=0.9))
    assert progress.newly_reached() == [5]


def test_only_a_done_marker_of_this_run_ends_the_serving(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    store.set_marker(DONE_MARKER)
    an_hour_ago = time.time() - 3600
    os.utime(tmp_path / DONE_MARKER, (an_hour_ago, an_hour_ago))  # left by an earlier run
    progress = ChiefProgress(store, PS_0, started=time.time())
    assert not progress.finished()
    store.set_marker(DONE_MARKER)
    assert progress.finished()
