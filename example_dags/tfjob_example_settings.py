"""Where the example DAGs get their image, trainer and checkpoint storage: Airflow Variables.

Why Variables, read through Jinja: the same DAG files must run unchanged on a real cluster and on
the sandbox, so nothing environment-specific is written in them.  Every setting is an Airflow
Variable with a real-cluster default, rendered when the task runs (never at parse time, so
parsing stays free of database calls).  Variables can also come from the environment —
``AIRFLOW_VAR_TFJOB_EXAMPLE_IMAGE=...`` — which is how ``make demo`` points the DAGs at the
repository's trainer.

| Variable | default (real cluster) | meaning |
|---|---|---|
| ``tfjob_example_image`` | ``tfjob-example-trainer:0.1`` | image with the trainer (``trainer/Dockerfile``) |
| ``tfjob_example_python`` | ``python`` | the interpreter in that image |
| ``tfjob_example_trainer`` | ``/opt/trainer`` | where the trainer is in that image |
| ``tfjob_example_checkpoint_dir`` | ``/mnt/checkpoints`` | shared checkpoint root, mounted from the PVC |
| ``tfjob_example_checkpoint_pvc`` | ``tfjob-checkpoints`` | ReadWriteMany PVC mounted there |
| ``tfjob_example_step_seconds`` | ``1`` | seconds of work per training step |
| ``tfjob_example_framework`` | ``python`` | ``python``: pure-Python stand-in; ``tensorflow``: real TF |

The sandbox runs pod commands as local processes and ignores volumes, so there the trainer path
is the repository's ``example_dags/trainer`` and the checkpoint root is a local directory.
"""

from __future__ import annotations

#: Real-cluster defaults of the settings, by Variable name (without the ``tfjob_example_`` prefix).
DEFAULTS: dict[str, str] = {
    "image": "tfjob-example-trainer:0.1",
    "python": "python",
    "trainer": "/opt/trainer",
    "checkpoint_dir": "/mnt/checkpoints",
    "checkpoint_pvc": "tfjob-checkpoints",
    "step_seconds": "1",
    "framework": "python",
}


def setting(name: str) -> str:
    """A Jinja expression that renders the Variable ``tfjob_example_<name>``, or its default."""
    return "{{ var.value.get('tfjob_example_%s', '%s') }}" % (name, DEFAULTS[name])  # noqa: UP031


IMAGE = setting("image")
#: ``python /opt/trainer`` in the image; the arguments follow in ``args``.
TRAINER_COMMAND = [setting("python"), setting("trainer")]
STEP_SECONDS = setting("step_seconds")


def checkpoint_dir(task_id: str = "{{ ti.task_id }}") -> str:
    """One directory per task instance — shared by its replicas, by a pod the operator recreates and
    by Airflow's retries, which therefore resume from the last checkpoint.  Pass ``task_id`` to name
    another task's directory (a downstream task reading what the training task wrote)."""
    run = "{{ run_id | replace(':', '-') | replace('+', '-') }}"
    return f"{setting('checkpoint_dir')}/{{{{ dag.dag_id }}}}/{run}/{task_id}"


CHECKPOINT_VOLUMES = [
    {"name": "checkpoints", "persistentVolumeClaim": {"claimName": setting("checkpoint_pvc")}},
]
CHECKPOINT_MOUNTS = [{"name": "checkpoints", "mountPath": setting("checkpoint_dir")}]
#: The try number in the trainer's environment, for failures that only the first try should hit.
TRY_NUMBER_ENV = {"AIRFLOW_TRY_NUMBER": "{{ ti.try_number }}"}


def trainer_args(*extra: str, steps: str = "8") -> list[str]:
    """The trainer's arguments every example shares (steps, pace, checkpoints), then ``extra``."""
    return [
        "--steps",
        steps,
        "--step-seconds",
        STEP_SECONDS,
        "--checkpoint-dir",
        checkpoint_dir(),
        "--framework",
        setting("framework"),
        *extra,
    ]
