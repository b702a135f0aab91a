"""Telling "a peer was lost" apart from the program's own errors, and the exit status for each.

Why: the training operator's ``ExitCode`` restart policy and the provider's verdict both read
the exit status — 1-127 is the program's own error (permanent: retrying cannot help), 128 and
above means the process was killed or should be tried again.  When one replica of a distributed
TensorFlow job dies, the *survivors* fail too: their collective ops or RPCs to the lost peer
raise ``UnavailableError`` / ``AbortedError`` ("Collective ops is aborted by: ... Connection
reset by peer", "Socket closed", the coordinator's "GRPC error information from remote target
/job:ps ...").  Python turns any uncaught exception into exit status 1, so without this mapping
one killed worker makes its healthy peers exit *permanently* and the whole job fails for good —
the opposite of what ``ExitCode`` is for.  The trainer therefore exits with
:data:`PEER_LOST_EXIT` for these errors; every other exception keeps exit status 1.

The decision reads only exception class names and messages (TensorFlow's error classes are not
imported here), so it is unit-tested without TensorFlow.
"""

from __future__ import annotations

#: Exit status of a replica that lost a peer: retryable (>= 128) for the training operator's
#: ``ExitCode`` policy and for the provider's verdict.  128 + 10: 137 (SIGKILL) and 143 (SIGTERM)
#: stay recognisable in pod statuses, and no signal that kills a training process by default
#: produces 138 in practice (SIGUSR1 is never sent to it).
PEER_LOST_EXIT = 138

#: Exception classes (by name, from TensorFlow and the standard library) that mean the other end
#: of a connection went away or a distributed step was aborted because of it.
PEER_LOST_ERRORS = frozenset(
    {
        "UnavailableError",
        "AbortedError",
        "DeadlineExceededError",
        "ConnectionError",
        "ConnectionResetError",
        "ConnectionAbortedError",
        "ConnectionRefusedError",
        "BrokenPipeError",
    }
)

#: Message fragments (lower case) that name a lost peer even when TensorFlow wraps the error in
#: another class (an ``InternalError`` or ``CancelledError`` carrying the collective's abort).
PEER_LOST_MESSAGES = (
    "collective ops is aborted",
    "connection reset by peer",
    "socket closed",
    "failed to connect to all addresses",
    "grpc error information from remote target",
    "peer is unreachable",
)


def is_peer_lost(error: BaseException) -> bool:
    """True when ``error`` (or an exception it was raised from) says a peer replica was lost."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if any(kind.__name__ in PEER_LOST_ERRORS for kind in type(current).__mro__):
            return True
        message = str(current).lower()
        if any(fragment in message for fragment in PEER_LOST_MESSAGES):
            return True
        current = current.__cause__ or current.__context__
    return False


def describe(error: BaseException, *, limit: int = 300) -> str:
    """One line about ``error`` for the log: its class and the line of its message that names the
    lost peer (TensorFlow's first line is often just "Graph execution error:")."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    telling = next(
        (line for line in lines if any(fragment in line.lower() for fragment in PEER_LOST_MESSAGES)),
        lines[0] if lines else "",
    )
    return f"{type(error).__name__}: {telling}"[:limit]
