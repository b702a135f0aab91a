"""``--tensorflow`` without parameter servers: MultiWorkerMirroredStrategy, or one process.

Every training replica (chief and workers) runs the same loop: restore the chief's latest
checkpoint, then for each step run the model's step on every replica with ``strategy.run`` (a
synchronous all-reduce of the gradients across the workers), checkpoint, log.  Without
``TF_CONFIG`` the same loop runs under TensorFlow's default strategy, in one process.

Why a hand-written loop: Keras 3's ``model.fit`` fails under MultiWorkerMirroredStrategy (see
:mod:`trainer.tf_model`).  Why the checkpoint after every step: a replica lost mid-run makes its
peers' collectives fail, so every replica restarts (``ExitCode``) or the whole job is retried
(Airflow); either way training goes on from the last step all replicas finished.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import tensorflow as tf  # type: ignore[import-not-found, unused-ignore]

from trainer.checkpoints import DONE_MARKER, Checkpoint, CheckpointStore
from trainer.failures import crash, should_fail
from trainer.options import TrainerOptions
from trainer.results import TrainingResult
from trainer.tf_config import ClusterRole
from trainer.tf_model import BATCH_PER_REPLICA, Checkpoints, RegressionModel, make_dataset
from trainer.training import ReplicaLog


def train_collective(
    options: TrainerOptions,
    role: ClusterRole,
    *,
    store: CheckpointStore,
    environ: Mapping[str, str],
    log: ReplicaLog,
) -> TrainingResult:
    """Train under MultiWorkerMirroredStrategy (distributed) or the default strategy (one process)."""
    if role.strategy == "multi_worker_mirrored":
        strategy: Any = tf.distribute.MultiWorkerMirroredStrategy()
        log(f"MultiWorkerMirroredStrategy: {strategy.num_replicas_in_sync} replicas in sync")
    else:
        strategy = tf.distribute.get_strategy()
        log("one process (no TF_CONFIG): TensorFlow's default strategy")
    global_batch = BATCH_PER_REPLICA * strategy.num_replicas_in_sync
    model = RegressionModel(strategy)
    checkpoints = Checkpoints(model, store.directory, writer=role.is_chief, tag=role.tag)
    done, path = checkpoints.restore()
    log(f"resuming from checkpoint at step {done} ({path})" if path else "no checkpoint: starting at step 0")
    resumed_from = done

    def dataset_fn(context: Any) -> Any:
        dataset = make_dataset(context.get_per_replica_batch_size(global_batch))
        return dataset.shard(context.num_input_pipelines, context.input_pipeline_id)

    iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))

    @tf.function  # type: ignore[misc]
    def train_step(iterator: Any) -> Any:
        losses = strategy.run(model.replica_step, args=(next(iterator), global_batch))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    loss: float | None = None
    for step in range(done + 1, options.steps + 1):
        plan = options.failure
        if plan is not None and should_fail(plan, step=step, role=role, environ=environ, store=store):
            crash(plan, step=step, steps=options.steps, role=role, store=store, log=log)
        loss = float(train_step(iterator))
        checkpoints.save(step)
        done = step
        if role.is_chief:
            store.save(role.tag, Checkpoint(step=step, loss=loss))
        log(f"step {step}/{options.steps} loss={loss:.4f}")
        time.sleep(options.step_seconds)
    if role.is_chief:
        store.set_marker(DONE_MARKER)
    return TrainingResult(final_step=done, steps=options.steps, loss=loss, resumed_from=resumed_from)
