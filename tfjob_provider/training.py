""":class:`RetryableTrainingError` for ``@task.tfjob`` functions, ending the replica with exit code
:data:`RETRYABLE_EXIT_CODE` (retryable). Runs inside training images: no imports.
"""

from __future__ import annotations

#: Exit code of a replica whose function raised :class:`RetryableTrainingError`.  At or above 128,
#: so the training operator (``ExitCode``) and the provider's verdict treat it as retryable; not
#: 128 + a signal number that the failure report would name (SIGKILL is 137, SIGTERM 143).
RETRYABLE_EXIT_CODE = 200


class RetryableTrainingError(Exception):
    """Raise it in a ``@task.tfjob`` function when running the training again may well succeed
    (a flaky data source, a preempted accelerator, a transient storage error): the replica exits
    with :data:`RETRYABLE_EXIT_CODE` instead of 1."""


__all__ = ["RETRYABLE_EXIT_CODE", "RetryableTrainingError"]
