"""The full-stack test re-runs an example DAG only on Airflow's own race signature; prove the match.

A looser match would let the test re-run away a failure the provider caused, so both directions
are pinned down on a line copied from a scheduler log in which the race happened.
"""

from __future__ import annotations

from tests.e2e.example_outcomes import stale_defer_exit_hits

RUN = "manual__2026-11-29T21:12:56.082999+00:00"
RACE_LINE = (
    "2026-11-29T21:13:31.081546Z [error    ] Executor LocalExecutor(parallelism=4) reported that the "
    "task instance <TaskInstance: tfjob_retry_policies.transient_failure_retried_by_airflow "
    f"{RUN} [queued] ti_id=01a22927-6020-7b36-874b-2bd5acd40fb1> finished with state success, "
    "but the task instance's state attribute is queued. Learn more: https://airflow.apache.org/docs/"
    "apache-airflow/stable/troubleshooting.html#task-state-changed-externally [airflow.task]"
)
# A task killed from outside (the provider's own failure would not even log this) ends "failed".
OTHER_MISMATCH = RACE_LINE.replace("finished with state success", "finished with state failed")


def test_the_race_line_is_recognised_for_its_run() -> None:
    log = "\n".join(["unrelated line", RACE_LINE, "another"])
    assert stale_defer_exit_hits(log, "tfjob_retry_policies", RUN) == [RACE_LINE]


def test_other_runs_dags_and_mismatches_are_not() -> None:
    assert stale_defer_exit_hits(RACE_LINE, "tfjob_retry_policies", RUN.replace("21:12", "21:13")) == []
    assert stale_defer_exit_hits(RACE_LINE, "tfjob_sensor", RUN) == []
    assert stale_defer_exit_hits(OTHER_MISMATCH, "tfjob_retry_policies", RUN) == []
