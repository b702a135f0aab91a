"""``--tensorflow`` with parameter servers: ParameterServerStrategy, the chief as coordinator.

Roles, as TensorFlow's parameter-server training has them:

* the **chief** is the coordinator: it creates the variables (they live on the PS), schedules
  training steps onto the workers with ``ClusterCoordinator`` and checkpoints after every step;
  its exit decides the job;
* **workers** and **parameter servers** run a ``tf.distribute.Server`` and nothing else — they
  never finish on their own.  With a checkpoint directory they stop (exit 0) once the chief has
  left its ``DONE`` marker there; otherwise the training operator deletes them
  (``cleanPodPolicy: Running``).

What each failure does (the scenarios ``docs/guides/examples.md`` describes): a lost worker is handled
by the coordinator itself — its steps go to the other workers, and a recreated worker is used
again when it is back; a lost PS takes the variables with it, so the coordinator's next step
fails with ``UnavailableError`` and the chief exits with the retryable peer-lost status (the job
is retried and resumes from the last checkpoint); a lost chief ends the job.

``--fail-at-step`` on a server: the server follows the chief's progress file
(``<checkpoint-dir>/chief-0.json``, :class:`trainer.following.ChiefProgress`) and crashes when
the chief reaches the step.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import tensorflow as tf  # type: ignore[import-not-found, unused-ignore]

from trainer.checkpoints import DONE_MARKER, Checkpoint, CheckpointStore
from trainer.failures import crash, should_fail
from trainer.following import ChiefProgress, wait_until_listening
from trainer.options import TrainerOptions
from trainer.results import TrainingResult
from trainer.tf_config import ClusterRole
from trainer.tf_model import BATCH_PER_REPLICA, Checkpoints, RegressionModel, make_dataset
from trainer.training import ReplicaLog

#: Batches the coordinator schedules per step (spread over the workers that are up).
BATCHES_PER_STEP = 4
#: How long the chief waits for every worker and PS to listen before it creates the strategy.
PEER_STARTUP_TIMEOUT = 600.0
#: How often a server looks at the chief's progress and the DONE marker.
FOLLOW_INTERVAL = 0.2


def coordinate(
    options: TrainerOptions,
    role: ClusterRole,
    *,
    store: CheckpointStore,
    environ: Mapping[str, str],
    log: ReplicaLog,
) -> TrainingResult:
    """The chief: train with ParameterServerStrategy through a ClusterCoordinator."""
    peers = [
        role.cluster[kind][index] for kind in ("worker", "ps") for index in sorted(role.cluster.get(kind, {}))
    ]
    wait_until_listening(peers, timeout=PEER_STARTUP_TIMEOUT, log=log)
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    workers, servers = len(role.cluster.get("worker", {})), len(role.cluster.get("ps", {}))
    log(f"ParameterServerStrategy: coordinating {workers} workers and {servers} parameter servers")
    model = RegressionModel(strategy)
    checkpoints = Checkpoints(model, store.directory, writer=True, tag=role.tag)
    done, path = checkpoints.restore()
    log(f"resuming from checkpoint at step {done} ({path})" if path else "no checkpoint: starting at step 0")
    resumed_from = done
    iterator = iter(coordinator.create_per_worker_dataset(lambda: make_dataset(BATCH_PER_REPLICA)))

    @tf.function  # type: ignore[misc]
    def train_step(iterator: Any) -> Any:
        losses = strategy.run(model.replica_step, args=(next(iterator), BATCH_PER_REPLICA))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    loss: float | None = None
    for step in range(done + 1, options.steps + 1):
        plan = options.failure
        if plan is not None and should_fail(plan, step=step, role=role, environ=environ, store=store):
            crash(plan, step=step, steps=options.steps, role=role, store=store, log=log)
        results = [coordinator.schedule(train_step, args=(iterator,)) for _ in range(BATCHES_PER_STEP)]
        coordinator.join()
        loss = sum(float(result.fetch()) for result in results) / len(results)
        checkpoints.save(step)
        done = step
        store.save(role.tag, Checkpoint(step=step, loss=loss))
        log(f"step {step}/{options.steps} loss={loss:.4f}")
        time.sleep(options.step_seconds)
    store.set_marker(DONE_MARKER)
    return TrainingResult(final_step=done, steps=options.steps, loss=loss, resumed_from=resumed_from)


def serve(
    options: TrainerOptions,
    role: ClusterRole,
    *,
    store: CheckpointStore,
    environ: Mapping[str, str],
    log: ReplicaLog,
) -> None:
    """A worker or PS: run a TensorFlow server until the chief is done (or for ever)."""
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    server = tf.distribute.Server(
        resolver.cluster_spec(),
        job_name=role.type,
        task_index=role.index,
        protocol=resolver.rpc_layer or "grpc",
        start=True,
    )
    address = role.cluster[role.type][role.index]
    if not store.enabled:
        log(f"{role.type} server on {address}: serving until the training operator deletes this pod")
        server.join()
        return
    log(f"{role.type} server on {address}: serving until the chief finishes")
    progress = ChiefProgress(store, role, started=time.time())
    plan = options.failure
    while not progress.finished():
        for step in progress.newly_reached():
            if plan is not None and should_fail(plan, step=step, role=role, environ=environ, store=store):
                crash(plan, step=step, steps=options.steps, role=role, store=store, log=log)
        time.sleep(FOLLOW_INTERVAL)
    log("the chief finished training: stopping")
