"""The delay before replacing failed pods (backoff_utils.go): doubling per failure since the last success."""

from __future__ import annotations

from tfjob_sandbox.job_controller.actions import BackoffRecord
from tfjob_sandbox.job_controller.pod_rules import Pod, finished_time


def next_backoff_record(
    record: BackoffRecord, new_succeeded: list[Pod], new_failed: list[Pod], now: float
) -> BackoffRecord:
    """The record after this pass's newly finished pods (a success resets it)."""
    failed_times = sorted(finished_time(pod) for pod in new_failed)
    if not new_succeeded:
        if not failed_times:
            return record
        return BackoffRecord(record.failures_after_last_success + len(failed_times), failed_times[-1])
    last_success = max(finished_time(pod) for pod in new_succeeded)
    after = [moment for moment in failed_times if moment > last_success]
    return BackoffRecord(len(after), after[-1] if after else None)


def remaining_backoff(record: BackoffRecord, now: float, *, initial: float, cap: float) -> float:
    """Seconds to wait before creating pods: ``initial * 2**(failures-1)`` (capped) after the last failure."""
    if record.failures_after_last_success == 0 or record.last_failure_time is None:
        return 0.0
    delay = initial
    for _ in range(1, record.failures_after_last_success):
        delay *= 2
        if delay >= cap:
            delay = cap
            break
    elapsed = now - record.last_failure_time
    return 0.0 if delay < elapsed else delay - elapsed
