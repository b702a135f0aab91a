"""``--tensorflow``: the same program as a real ``MultiWorkerMirroredStrategy`` Keras job.

Why: the pure-Python trainer shows the TFJob life cycle; this path shows that the same DAGs run
real distributed TensorFlow — on a cluster, or on the sandbox started with
``--loopback-tf-config`` (``TF_CONFIG`` then lists ``127.0.0.1:<port>`` endpoints, so the
replicas' gRPC servers find each other on one machine).  The options keep their meaning: a
"step" is one epoch, ``--checkpoint-dir`` holds a Keras ``BackupAndRestore`` backup (a recreated
replica resumes at the last finished epoch), ``--fail-at-step`` crashes at the start of that
epoch.  ``MultiWorkerMirroredStrategy`` has no parameter servers: use Chief and Worker replicas.

TensorFlow is imported only here, only when asked for; without it the program says so and exits
with status 2 (a permanent failure: retrying will not install TensorFlow).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Mapping
from typing import Any

from trainer.checkpoints import DONE_MARKER, CheckpointStore
from trainer.failures import remember_failure, should_fail
from trainer.options import TrainerOptions
from trainer.tf_config import ClusterRole
from trainer.training import ReplicaLog

#: Exit status for "this cannot work as configured" (argparse uses the same).
CONFIGURATION_ERROR = 2
BATCHES_PER_STEP = 10


def tensorflow_available() -> bool:
    return importlib.util.find_spec("tensorflow") is not None


def run_tensorflow(
    options: TrainerOptions,
    role: ClusterRole,
    *,
    store: CheckpointStore,
    environ: Mapping[str, str],
    log: ReplicaLog,
) -> int:
    """Train a small Keras model under ``MultiWorkerMirroredStrategy``; the replica's exit status."""
    if not tensorflow_available():
        log(
            "--tensorflow needs TensorFlow, which is not installed here: "
            "install it (pip install tensorflow-cpu) or drop --tensorflow"
        )
        return CONFIGURATION_ERROR
    if not role.trains:
        log(
            f"--tensorflow runs MultiWorkerMirroredStrategy, which has no {role.type} replicas: "
            "use Chief and Worker replicas only"
        )
        return CONFIGURATION_ERROR
    if options.stop_file is not None:
        log("--stop-file is ignored with --tensorflow (every worker must stop at the same step)")

    import tensorflow as tf  # type: ignore[import-untyped, import-not-found, unused-ignore]

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    log(f"MultiWorkerMirroredStrategy with {strategy.num_replicas_in_sync} replicas in sync")
    global_batch = 32 * strategy.num_replicas_in_sync

    features = tf.random.stateless_normal((4096, 8), seed=(1, 2))
    weights = tf.reshape(tf.range(1, 9, dtype=tf.float32) / 8.0, (8, 1))
    labels = features @ weights + 0.1 * tf.random.stateless_normal((4096, 1), seed=(3, 4))
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(global_batch)
    sharding = tf.data.Options()
    sharding.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    dataset = dataset.with_options(sharding)

    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input(shape=(8,)), tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05), loss="mse")

    class StepLog(tf.keras.callbacks.Callback):  # type: ignore[misc]
        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            step = epoch + 1
            plan = options.failure
            if plan is not None and should_fail(plan, step=step, role=role, environ=environ, store=store):
                remember_failure(plan, step=step, role=role, store=store)
                log(f"simulated crash at step {step}/{options.steps}: exiting with status {plan.exit_code}")
                sys.stdout.flush()
                os._exit(plan.exit_code)

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            loss = float((logs or {}).get("loss", float("nan")))
            log(f"step {epoch + 1}/{options.steps} loss={loss:.4f}")

    callbacks: list[Any] = [StepLog()]
    if store.directory is not None:
        callbacks.append(tf.keras.callbacks.BackupAndRestore(backup_dir=str(store.directory / "tf-backup")))
    history = model.fit(
        dataset, epochs=options.steps, steps_per_epoch=BATCHES_PER_STEP, callbacks=callbacks, verbose=0
    )
    if role.is_chief:
        store.set_marker(DONE_MARKER)
    losses = history.history.get("loss") or [float("nan")]
    log(f"training finished: {options.steps} steps, final loss={losses[-1]:.4f}")
    return 0
