"""The small real model every ``--tensorflow`` path trains, its data, its step and its checkpoints.

Why one module for the three strategies: the single-process, MultiWorkerMirrored and
ParameterServer paths must train the *same* model with the same step function and checkpoint
layout, so that a resumed run continues the same curve whichever way it is distributed.

The model is Keras 3 as TensorFlow installs it (a linear regression: one ``Dense`` layer, plain
SGD), trained by a hand-written step run with ``strategy.run`` — not ``model.fit``, whose Keras 3
implementation fails under ``MultiWorkerMirroredStrategy`` ("Attempt to convert a value
(PerReplica:{...}) ... to a Tensor").  Checkpoints are TensorFlow's own
(``tf.train.Checkpoint`` + ``tf.train.CheckpointManager``) in ``<checkpoint-dir>/tf-checkpoints``;
the step counter is saved with the weights, so a restart knows where it resumes.

Imported only on the ``--tensorflow`` path: TensorFlow is imported at module level here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import keras  # type: ignore[import-not-found, unused-ignore]
import tensorflow as tf  # type: ignore[import-not-found, unused-ignore]

FEATURES = 8
#: Examples per replica per batch.
BATCH_PER_REPLICA = 32
EXAMPLES = 2048
LEARNING_RATE = 0.05
#: Checkpoints the chief keeps (older ones are deleted by the manager).
CHECKPOINTS_KEPT = 3
CHECKPOINTS_DIR = "tf-checkpoints"


def make_dataset(batch_size: int) -> Any:
    """An endless, deterministic regression data set: ``y = x · w + noise``."""
    features = tf.random.stateless_normal((EXAMPLES, FEATURES), seed=(1, 2))
    weights = tf.reshape(tf.range(1, FEATURES + 1, dtype=tf.float32) / FEATURES, (FEATURES, 1))
    labels = features @ weights + 0.1 * tf.random.stateless_normal((EXAMPLES, 1), seed=(3, 4))
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    return dataset.shuffle(EXAMPLES, seed=5).repeat().batch(batch_size, drop_remainder=True)


class RegressionModel:
    """A Keras ``Dense`` model and its SGD optimizer, built under ``strategy``'s scope.

    The optimizer is built before any checkpoint is restored, so its variables exist (on the
    parameter servers, under ParameterServerStrategy) and are restored at once, not deferred into
    the first distributed step.
    """

    def __init__(self, strategy: Any) -> None:
        with strategy.scope():
            self.network = keras.Sequential([keras.Input(shape=(FEATURES,)), keras.layers.Dense(1)])
            self.optimizer = keras.optimizers.SGD(learning_rate=LEARNING_RATE)
            self.optimizer.build(self.network.trainable_variables)
        #: Steps finished, saved with the weights (a plain variable of this process).
        self.step = tf.Variable(0, dtype=tf.int64, trainable=False)

    def replica_step(self, batch: Any, global_batch_size: int) -> Any:
        """One SGD step on this replica's share of the batch; returns its share of the loss."""
        features, labels = batch
        with tf.GradientTape() as tape:
            predictions = self.network(features, training=True)
            per_example = tf.reduce_mean(tf.square(predictions - labels), axis=-1)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch_size)
        gradients = tape.gradient(loss, self.network.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.network.trainable_variables, strict=True))
        return loss


class Checkpoints:
    """TensorFlow checkpoints of one replica in the shared checkpoint directory (or none at all).

    Only the writer (the chief) saves into ``<root>/tf-checkpoints``; under
    MultiWorkerMirroredStrategy the other workers save too (every worker takes part in a save, as
    TensorFlow's guide asks) but into a private directory of theirs, never read.  Everyone
    restores from the writer's latest checkpoint.
    """

    def __init__(self, model: RegressionModel, root: Path | None, *, writer: bool, tag: str) -> None:
        self.model = model
        self.checkpoint = tf.train.Checkpoint(
            network=model.network, optimizer=model.optimizer, step=model.step
        )
        self.shared = root / CHECKPOINTS_DIR if root is not None else None
        own = self.shared if writer or root is None else root / f".{CHECKPOINTS_DIR}-{tag}"
        self.manager = (
            tf.train.CheckpointManager(self.checkpoint, str(own), max_to_keep=CHECKPOINTS_KEPT)
            if own is not None
            else None
        )

    def restore(self) -> tuple[int, str | None]:
        """Load the writer's latest checkpoint; (steps done, its path) — (0, None) when there is none."""
        if self.shared is None:
            return 0, None
        latest = tf.train.latest_checkpoint(str(self.shared))
        if latest is None:
            return 0, None
        self.checkpoint.restore(latest).assert_existing_objects_matched()
        return int(self.model.step.numpy()), latest

    def save(self, step: int) -> None:
        """Record ``step`` steps as done, with the weights that resulted."""
        self.model.step.assign(step)
        if self.manager is not None:
            self.manager.save(checkpoint_number=step)
