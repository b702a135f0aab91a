"""A client-side token bucket (client-go's 5 requests/s, burst 10), shared per connection per process
(:func:`shared_bucket`); it computes delays and never sleeps.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

#: client-go's ``rest.DefaultQPS``: sustained requests per second per connection.
DEFAULT_RATE = 5.0
#: client-go's ``rest.DefaultBurst``: requests that may go out back to back after a quiet period.
DEFAULT_BURST = 10


@dataclass(frozen=True)
class RateLimit:
    """Rate-limit settings: ``rate`` tokens per second, at most ``burst`` saved up."""

    rate: float = DEFAULT_RATE
    burst: int = DEFAULT_BURST

    def __post_init__(self) -> None:
        if self.rate <= 0 or self.burst < 1:
            raise ValueError("rate must be > 0 and burst >= 1")


class TokenBucket:
    """Token bucket with an injected monotonic clock.

    :param limit: rate and burst.
    :param clock: seconds, monotonic (``time.monotonic`` by default; tests pass a fake).
    """

    def __init__(
        self, limit: RateLimit | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit or RateLimit()
        self._clock = clock
        self._tokens = float(self.limit.burst)
        self._updated = clock()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take one token; return the seconds the caller must wait before sending (0 when free)."""
        with self._lock:
            now = self._clock()
            elapsed = max(0.0, now - self._updated)
            self._updated = now
            self._tokens = min(float(self.limit.burst), self._tokens + elapsed * self.limit.rate)
            self._tokens -= 1.0
            if self._tokens >= 0:
                return 0.0
            return -self._tokens / self.limit.rate


_buckets: dict[str, TokenBucket] = {}
_buckets_lock = threading.Lock()


def shared_bucket(key: str, limit: RateLimit | None = None) -> TokenBucket:
    """The process-wide bucket for connection ``key``; created with ``limit`` on first use.

    Later calls with a different ``limit`` get the existing bucket: the first configuration wins,
    as one process should not have two opinions about one identity's rate.
    """
    with _buckets_lock:
        bucket = _buckets.get(key)
        if bucket is None:
            bucket = _buckets[key] = TokenBucket(limit)
        return bucket


__all__ = ["DEFAULT_BURST", "DEFAULT_RATE", "RateLimit", "TokenBucket", "shared_bucket"]
