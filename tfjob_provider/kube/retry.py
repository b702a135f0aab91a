"""The one retry policy for every request (:class:`RetryPolicy`): what is retried, the back-off, and the
outage budget of elapsed time (docs/adr/0011-one-retry-policy-with-an-outage-budget.md).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tfjob_provider.kube.errors import KubeApiError, TooManyRequestsError, UnavailableError

#: HTTP statuses worth another attempt (besides 429, which has its own class).
RETRYABLE_SERVER_STATUSES = frozenset({500, 502, 503, 504})
#: Seconds of failures in a row ridden out before a request, watch or read gives up (documented
#: in ``docs/reference/client.md``): longer than an API server rollout or a control-plane failover, shorter
#: than the task timeouts users set.
DEFAULT_OUTAGE_BUDGET = 180.0


def is_retryable(error: BaseException) -> bool:
    """True for 429, 500/502/503/504 and transport failures (no status); False for everything else."""
    if isinstance(error, TooManyRequestsError):
        return True
    if isinstance(error, UnavailableError):
        return error.status is None or error.status in RETRYABLE_SERVER_STATUSES
    return False


@dataclass(frozen=True)
class RetryPolicy:
    """How long to keep trying a request and how long to wait in between.

    ``wait_for(error, attempt=n, elapsed=t)`` answers, after the ``n``-th failed attempt (1-based)
    of a run of failures that began ``t`` seconds ago, how many seconds to sleep before the next
    one, or ``None`` to give up and raise ``error``.  Callers measure ``t`` with :attr:`clock`
    (an :class:`Outage` does it for them).
    """

    budget: float = DEFAULT_OUTAGE_BUDGET
    """Seconds from the first failure after which no further attempt is started."""

    wait_min: float = 1.0
    """First back-off step in seconds: long enough for a connection reset by a restarting API
    server to be followed by a listening one."""

    wait_max: float = 15.0
    """Cap of one back-off step: a recovered server is noticed within 15 s."""

    retry_after_max: float = 120.0
    """Upper bound on a server-sent ``Retry-After``, so a buggy proxy answering
    ``Retry-After: 86400`` cannot park a task for a day."""

    random: Callable[[], float] = field(default=random.random, compare=False, repr=False)
    """Source of jitter in [0, 1); injected so tests are deterministic."""

    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)
    """Monotonic seconds the budget is measured with; injected so tests need not wait."""

    def __post_init__(self) -> None:
        if not self.budget >= 0:
            raise ValueError(f"the outage budget must be >= 0 seconds, got {self.budget!r}")
        if not 0 <= self.wait_min <= self.wait_max:
            raise ValueError("need 0 <= wait_min <= wait_max")

    def backoff(self, attempt: int) -> float:
        """Jittered exponential step after the ``attempt``-th failure.

        step = min(wait_max, wait_min * 2**(attempt-1)); the wait is uniform in [step/2, step] and
        never below ``wait_min``, so it always lies within [wait_min, wait_max].
        """
        step = min(self.wait_max, self.wait_min * (2 ** max(0, min(attempt, 64) - 1)))
        jitter: float = self.random()
        return float(max(self.wait_min, step / 2 * (1.0 + jitter)))

    def retry_after(self, error: BaseException) -> float | None:
        """The server's ``Retry-After`` on ``error`` (bounded by :attr:`retry_after_max`), if any."""
        value = getattr(error, "retry_after", None)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            return float(min(value, self.retry_after_max))
        return None

    def wait_for(self, error: BaseException, *, attempt: int, elapsed: float = 0.0) -> float | None:
        """Seconds to wait before retrying after ``error`` ended the ``attempt``-th try, or ``None``."""
        remaining = self.budget - elapsed
        if not is_retryable(error) or remaining <= 0:
            return None
        wait = min(self.backoff(attempt), remaining)
        server = self.retry_after(error)
        if server is not None:
            if server > remaining:
                return None  # the server will not be back within the budget
            wait = max(wait, server)
        return wait


@dataclass
class Outage:
    """One run of failures, measured from its first failure; shared by the steps of a watch loop so
    a relist that fails after the loop's own reconnects does not start a fresh budget."""

    started: float | None = None
    attempts: int = 0

    def failed(self, clock: Callable[[], float]) -> tuple[int, float]:
        """Count a failure; return (attempt number, seconds since the run began)."""
        now = clock()
        if self.started is None:
            self.started = now
        self.attempts += 1
        return self.attempts, now - self.started

    def over(self) -> None:
        """A request succeeded: the next failure starts a new run."""
        self.started = None
        self.attempts = 0


def describe_retry(error: KubeApiError, *, attempt: int, wait: float, elapsed: float, budget: float) -> str:
    """Log line for a back-off step, e.g. ``attempt 2 failed (503 ServiceUnavailable …); retrying in
    2.3 s (4 s of the 180 s outage budget used)``."""
    return (
        f"attempt {attempt} failed ({error.message}); retrying in {wait:.1f} s "
        f"({elapsed:.0f} s of the {budget:g} s outage budget used)"
    )


__all__ = [
    "DEFAULT_OUTAGE_BUDGET",
    "RETRYABLE_SERVER_STATUSES",
    "Outage",
    "RetryPolicy",
    "describe_retry",
    "is_retryable",
]
