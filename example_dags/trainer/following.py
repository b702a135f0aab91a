"""What a replica that serves instead of training waits for: its peers, the chief's steps, the end.

Why a module of its own, free of TensorFlow: under ParameterServerStrategy the workers and
parameter servers never see a training step, yet ``--fail-at-step`` and the end of training must
reach them, and the chief must not contact servers that are not up yet.  These decisions are
plain file and socket checks, unit-tested here without TensorFlow; :mod:`trainer.tf_parameter_server`
only wires them to a ``tf.distribute.Server``.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from trainer.checkpoints import DONE_MARKER, CheckpointStore
from trainer.tf_config import ClusterRole, chief_tag

Connect = Callable[[tuple[str, int], float], socket.socket]


def _connect(address: tuple[str, int], timeout: float) -> socket.socket:
    return socket.create_connection(address, timeout=timeout)


def wait_until_listening(
    addresses: list[str],
    *,
    timeout: float,
    log: Callable[[str], None],
    connect: Connect = _connect,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Block until every ``host:port`` accepts a TCP connection; ``TimeoutError`` naming the first
    one that did not within ``timeout`` seconds.

    Why: replica pods start in any order and TensorFlow takes seconds to import; the
    coordinator's first contact with a server that is not up yet fails instead of waiting, and a
    failed first contact would fail the job although nothing was lost.
    """
    deadline = clock() + timeout
    waiting = list(addresses)
    announced = False
    while waiting:
        host, _, port = waiting[0].rpartition(":")
        try:
            connect((host, int(port)), 1.0).close()
        except OSError:
            pass
        else:
            waiting.pop(0)
            continue
        if clock() > deadline:
            raise TimeoutError(f"{waiting[0]} did not start listening within {timeout:.0f}s")
        if not announced:
            log(f"waiting for {', '.join(waiting)} to start listening")
            announced = True
        sleep(0.2)


class ChiefProgress:
    """The chief's training steps as a serving replica sees them, through the checkpoint directory.

    The chief saves ``<chief>.json`` after every step; step ``n + 1`` is *reached* once ``n`` steps
    are done.  Steps the chief finished before this replica started are not reached by it (a
    recreated server, or the servers of an Airflow retry, must not crash again for a step of an
    earlier run), and neither is a ``DONE`` marker an earlier run left: only one set since
    ``started`` ends the serving.

    :param started: when this replica started (``time.time()``).
    """

    def __init__(self, store: CheckpointStore, role: ClusterRole, *, started: float) -> None:
        self.store = store
        self.chief = chief_tag(role)
        self.started = started
        self.reached = self._current()

    def _current(self) -> int:
        progress = self.store.load(self.chief)
        return progress.step + 1 if progress is not None else 1

    def newly_reached(self) -> list[int]:
        """The steps the chief reached since the last call, in order (often none)."""
        current = self._current()
        steps = list(range(self.reached + 1, current + 1))
        self.reached = max(self.reached, current)
        return steps

    def finished(self) -> bool:
        """The chief has finished training (in this run)."""
        return self.store.has_marker_since(DONE_MARKER, self.started)
