"""What a ``@task.tfjob`` function may use inside its pods: :class:`RetryableTrainingError`.

Why a module of its own, with no import at all: it runs inside the training image, which has a
Python and TensorFlow but usually neither Airflow nor this provider.  The decorator's bootstrap
(:mod:`tfjob_provider.decorators.bootstrap`) therefore carries this file's source and installs
it as ``tfjob_provider.training`` when the image cannot import it, so a function writes
``from tfjob_provider.training import RetryableTrainingError`` and it works on either kind of
image.  Keep it standard-library free and self-contained.

How a function's ending maps onto the verdict rules (docs/rules.md):

* it returns: exit code 0 — success (the deciding replica's return value becomes the task's
  ``return_value`` XCom);
* it raises any other exception: exit code 1 — a failure of the program itself, *permanent*
  under ``Never`` and ``ExitCode`` (the training operator does not restart it, the task is not
  retried);
* it raises :class:`RetryableTrainingError`: exit code :data:`RETRYABLE_EXIT_CODE` (200) — at or
  above 128, so *retryable*: under ``ExitCode`` the training operator recreates the pod, under
  ``Never`` the task fails with retries (Airflow submits a new TFJob).
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
