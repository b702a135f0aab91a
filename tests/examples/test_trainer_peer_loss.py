"""Which errors mean "a peer replica was lost" (retryable exit 138) and which are the program's own (exit 1).

TensorFlow's error classes are matched by name, so stand-ins with the same names exercise the
same decision without importing TensorFlow; the messages are the ones real runs printed.
"""

from __future__ import annotations

import pytest
from trainer.peer_loss import PEER_LOST_EXIT, describe, is_peer_lost


class OpError(Exception):
    """Stand-in for ``tf.errors.OpError`` (the base class of TensorFlow's errors)."""


class UnavailableError(OpError):
    pass


class AbortedError(OpError):
    pass


class InternalError(OpError):
    pass


class InvalidArgumentError(OpError):
    pass


def test_the_exit_status_is_retryable_and_not_a_common_signal() -> None:
    assert PEER_LOST_EXIT >= 128
    assert PEER_LOST_EXIT not in (128 + 9, 128 + 15, 128 + 6)  # SIGKILL, SIGTERM, SIGABRT


@pytest.mark.parametrize(
    "error",
    [
        UnavailableError("Graph execution error:\nfailed to connect to all addresses"),
        AbortedError("worker restarted"),
        InternalError("Collective ops is aborted by: ... Connection reset by peer"),
        InternalError("Socket closed"),
        ConnectionResetError(104, "Connection reset by peer"),
        BrokenPipeError(32, "Broken pipe"),
    ],
)
def test_lost_peers(error: BaseException) -> None:
    assert is_peer_lost(error)


@pytest.mark.parametrize(
    "error",
    [
        InvalidArgumentError("Incompatible shapes: [32,1] vs. [16,1]"),
        ValueError("Attempt to convert a value (PerReplica:{...}) with an unsupported type"),
        KeyError("step"),
        ZeroDivisionError("division by zero"),
    ],
)
def test_program_errors(error: BaseException) -> None:
    assert not is_peer_lost(error)


def test_a_lost_peer_is_found_through_the_chain_of_causes() -> None:
    try:
        try:
            raise UnavailableError("GRPC error information from remote target /job:ps/replica:0/task:0")
        except UnavailableError as lost:
            raise RuntimeError("step 3 failed") from lost
    except RuntimeError as wrapped:
        assert is_peer_lost(wrapped)


def test_the_description_picks_the_line_that_names_the_peer() -> None:
    error = UnavailableError(
        "Graph execution error:\n\nfailed to connect to all addresses; last error: Connection refused\n"
    )
    assert (
        describe(error)
        == "UnavailableError: failed to connect to all addresses; last error: Connection refused"
    )
    assert describe(ValueError("")) == "ValueError: "
