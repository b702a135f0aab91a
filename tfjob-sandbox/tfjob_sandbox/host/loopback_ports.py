"""``PortReservations``: local ports for loopback-``TF_CONFIG`` replicas, held until their process starts."""

from __future__ import annotations

import random
import socket
import threading
from pathlib import Path

#: Where Linux publishes the ephemeral port range ("32768\t60999" by default).
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: Linux's default ephemeral range, assumed when the file cannot be read (another OS).
DEFAULT_EPHEMERAL_RANGE = (32768, 60999)
#: Ports below this are left alone: well-known and commonly configured service ports.
LOWEST_PORT = 10000
HIGHEST_PORT = 65535
#: Ports tried (at random within the range) before a reservation gives up.
ATTEMPTS = 200


def ephemeral_range(path: Path = EPHEMERAL_RANGE_FILE) -> tuple[int, int]:
    """The kernel's ephemeral port range, inclusive (the Linux default when unreadable)."""
    try:
        low, high = (int(part) for part in path.read_text().split())
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL_RANGE
    return (low, high) if low <= high else DEFAULT_EPHEMERAL_RANGE


def candidate_ports(ephemeral: tuple[int, int]) -> range:
    """The largest run of ports in ``[LOWEST_PORT, HIGHEST_PORT]`` outside ``ephemeral``."""
    low, high = ephemeral
    below = range(LOWEST_PORT, max(LOWEST_PORT, min(low, HIGHEST_PORT + 1)))
    above = range(max(LOWEST_PORT, high + 1), HIGHEST_PORT + 1)
    best = max(below, above, key=len)
    if not best:
        raise RuntimeError(
            f"the ephemeral port range {low}-{high} leaves no ports in {LOWEST_PORT}-{HIGHEST_PORT} "
            "for loopback TF_CONFIG: narrow net.ipv4.ip_local_port_range"
        )
    return best


class PortReservations:
    """Reserved local ports: each held by a bound socket until :meth:`release`.

    Thread-safe: the operator reserves on the sandbox loop, tests may look from their thread.

    :param candidates: ports to choose from; default: :func:`candidate_ports` of the kernel's
        ephemeral range.
    :param attempts: ports tried before :meth:`reserve` gives up.
    :param seed: seeds the random choice (tests).
    """

    def __init__(
        self, *, candidates: range | None = None, attempts: int = ATTEMPTS, seed: int | None = None
    ) -> None:
        self.candidates = candidates if candidates is not None else candidate_ports(ephemeral_range())
        self.attempts = attempts
        self._random = random.Random(seed)
        self._held: dict[int, socket.socket] = {}
        self._lock = threading.Lock()

    def reserve(self) -> int:
        """Choose a port nobody uses and hold it; raises ``RuntimeError`` when none is found."""
        with self._lock:
            for _ in range(self.attempts):
                port = self._random.choice(self.candidates)
                if port in self._held:
                    continue
                holder = _bind(port)
                if holder is not None:
                    self._held[port] = holder
                    return port
        raise RuntimeError(
            f"no free local port in {self.candidates.start}-{self.candidates.stop - 1} "
            f"after {self.attempts} attempts"
        )

    def release(self, port: int) -> None:
        """Let the process that will listen on ``port`` have it (a port not held is ignored)."""
        with self._lock:
            holder = self._held.pop(port, None)
        if holder is not None:
            holder.close()

    def held(self) -> set[int]:
        with self._lock:
            return set(self._held)

    def close(self) -> None:
        """Release every port (the sandbox stops)."""
        with self._lock:
            holders, self._held = list(self._held.values()), {}
        for holder in holders:
            holder.close()


def _bind(port: int) -> socket.socket | None:
    """A socket bound to ``port`` on every IPv4 interface, or None when anything holds the port.

    All interfaces and no ``SO_REUSEADDR``: the bind fails if any socket uses the port on any
    address (TensorFlow's servers listen on all interfaces), including connections lingering in
    TIME_WAIT after a killed server, so a port still in use in any way is never handed out.
    """
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        holder.bind(("0.0.0.0", port))  # every interface: free everywhere, not only on loopback
    except OSError:
        holder.close()
        return None
    return holder  # not inherited by pod processes (PEP 446), so it is really released
