"""What each replica does: train steps (chief and workers) or serve until the chief is done (PS, evaluator).

Why it looks like this: it reproduces the life cycle the TFJob rules are written for, without
TensorFlow — training replicas run a fixed number of steps and exit 0, the chief's exit decides the
job; parameter servers never finish on their own (they serve until the chief's ``DONE`` marker
appears or the training operator deletes them under ``cleanPodPolicy``); every step is
checkpointed so a recreated replica resumes instead of starting over.  Clock and output are
injected so the loop runs in tests in microseconds.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from typing import TextIO

from trainer.checkpoints import DONE_MARKER, Checkpoint, CheckpointStore, finished_marker
from trainer.failures import remember_failure, should_fail
from trainer.following import ChiefProgress
from trainer.options import TrainerOptions
from trainer.results import TrainingResult, report
from trainer.tf_config import ClusterRole, chief_tag

Sleep = Callable[[float], None]
#: Seconds between "still serving" lines of a parameter server or evaluator.
HEARTBEAT_SECONDS = 5.0
#: Exit status when a peer never caught up (a collective operation timing out).
SYNC_TIMEOUT_EXIT = 1
#: A wait for peers this long is worth a log line (a peer is being recreated or is stuck).
NOTABLE_WAIT_SECONDS = 1.0


class ReplicaLog:
    """Print ``[worker-1] message`` lines, flushed at once so ``kubectl logs -f`` shows them live."""

    def __init__(self, tag: str, stream: TextIO | None = None) -> None:
        self.tag = tag
        self.stream = stream

    def __call__(self, message: str) -> None:
        stream = self.stream if self.stream is not None else sys.stdout
        print(f"[{self.tag}] {message}", file=stream, flush=True)


def loss_at(step: int, *, replica_index: int = 0) -> float:
    """A plausible, deterministic loss curve: the same step always shows the same loss, so a resumed
    run continues the curve instead of jumping."""
    return round(2.0 * 0.8**step + 0.05 + 0.01 * replica_index / (step + 1), 4)


def training_peers(role: ClusterRole) -> list[str]:
    """Tags of the other replicas that train (chief/master/workers), in a stable order."""
    return [
        f"{kind}-{index}"
        for kind in ("chief", "master", "worker")
        for index in sorted(role.cluster.get(kind, {}))
        if (kind, index) != (role.type, role.index)
    ]


def wait_until_done(
    behind: Callable[[], list[str]],
    *,
    what: str,
    timeout: float,
    log: ReplicaLog,
    sleep: Sleep,
    clock: Callable[[], float],
) -> str | None:
    """Poll ``behind()`` (the peers not there yet) until it is empty; None, or the first peer still
    behind after ``timeout`` seconds.  Waits longer than :data:`NOTABLE_WAIT_SECONDS` are logged (a
    peer being recreated, or stuck); the usual jitter between replicas is not."""
    started = clock()
    announced = False
    while True:
        missing = behind()
        if not missing:
            return None
        waited = clock() - started
        if waited >= timeout:
            return missing[0]
        if not announced and waited >= NOTABLE_WAIT_SECONDS:
            log(f"waiting for {', '.join(missing)} to {what} (synchronous training)")
            announced = True
        sleep(0.1)


def wait_for_peers(
    step: int,
    peers: list[str],
    *,
    store: CheckpointStore,
    timeout: float,
    log: ReplicaLog,
    sleep: Sleep,
    clock: Callable[[], float],
) -> str | None:
    """Block until every peer has checkpointed ``step - 1`` (see :func:`wait_until_done`)."""

    def behind() -> list[str]:
        return [peer for peer in peers if (store.load(peer) or Checkpoint(0, 0.0)).step < step - 1]

    return wait_until_done(
        behind, what=f"finish step {step - 1}", timeout=timeout, log=log, sleep=sleep, clock=clock
    )


def train(
    options: TrainerOptions,
    role: ClusterRole,
    *,
    store: CheckpointStore,
    environ: Mapping[str, str],
    log: ReplicaLog,
    sleep: Sleep = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Run the training steps from the last checkpoint; the exit status of the replica."""
    checkpoint = store.load(role.tag)
    done = checkpoint.step if checkpoint is not None else 0
    resumed_from = done
    loss = checkpoint.loss if checkpoint is not None else None
    if checkpoint is not None:
        log(f"resuming from checkpoint: {checkpoint.step} steps done, loss={checkpoint.loss:.4f}")
    stopped_early = False
    peers = training_peers(role) if options.sync_replicas else []
    for step in range(done + 1, options.steps + 1):
        plan = options.failure
        if plan is not None and should_fail(plan, step=step, role=role, environ=environ, store=store):
            remember_failure(plan, step=step, role=role, store=store)
            log(f"simulated crash at step {step}/{options.steps}: exiting with status {plan.exit_code}")
            return plan.exit_code
        straggler = wait_for_peers(
            step, peers, store=store, timeout=options.sync_timeout, log=log, sleep=sleep, clock=clock
        )
        if straggler is not None:
            log(f"{straggler} did not finish step {step - 1} within {options.sync_timeout:.0f}s: giving up")
            return SYNC_TIMEOUT_EXIT
        sleep(options.step_seconds)
        loss = loss_at(step, replica_index=role.index)
        done = step
        store.save(role.tag, Checkpoint(step=step, loss=loss))
        log(f"step {step}/{options.steps} loss={loss:.4f}")
        if options.stop_file is not None and options.stop_file.exists():
            log(f"stop file {options.stop_file} found: ending training after step {step}")
            stopped_early = True
            break
    if peers and not stopped_early:
        # The last step ends with a collective too: nobody leaves before everyone has finished it.
        straggler = wait_for_peers(
            options.steps + 1,
            peers,
            store=store,
            timeout=options.sync_timeout,
            log=log,
            sleep=sleep,
            clock=clock,
        )
        if straggler is None and role.is_chief:
            # The chief leaves last: its exit decides the job, and the training operator then stops
            # every replica still running — which must not be a worker about to finish.
            def not_finished() -> list[str]:
                return [peer for peer in peers if not store.has_marker(finished_marker(peer))]

            straggler = wait_until_done(
                not_finished, what="exit", timeout=options.sync_timeout, log=log, sleep=sleep, clock=clock
            )
        elif straggler is None:
            store.set_marker(finished_marker(role.tag))
        if straggler is not None:
            log(f"{straggler} did not finish the last step within {options.sync_timeout:.0f}s: giving up")
            return SYNC_TIMEOUT_EXIT
    if role.is_chief:
        store.set_marker(DONE_MARKER)
    result = TrainingResult(
        final_step=done,
        steps=options.steps,
        loss=loss,
        resumed_from=resumed_from,
        stopped_early=stopped_early,
    )
    report(result, log)
    return 0


def serve(
    options: TrainerOptions,
    role: ClusterRole,
    *,
    store: CheckpointStore,
    log: ReplicaLog,
    environ: Mapping[str, str] | None = None,
    sleep: Sleep = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Parameter server or evaluator: serve until the chief is done (or the pod is deleted).

    A ``--fail-at-step`` plan that names this replica crashes it when the chief reaches the step
    (it follows the chief's checkpoints, :class:`trainer.following.ChiefProgress`).
    """
    plan = options.failure
    follow = ChiefProgress(store, role, started=time.time()) if plan is not None and store.enabled else None
    what = "evaluating the chief's checkpoints" if role.type == "evaluator" else "serving variables"
    until = "until the chief finishes" if store.enabled else "until the training operator deletes this pod"
    log(f"{what} {until}")
    poll = min(max(options.step_seconds, 0.05), 1.0)
    started = last_heartbeat = clock()
    evaluated_step = 0
    while True:
        for step in follow.newly_reached() if follow is not None else ():
            if plan is not None and should_fail(
                plan, step=step, role=role, environ=environ or {}, store=store
            ):
                remember_failure(plan, step=step, role=role, store=store)
                log(f"simulated crash at step {step}/{options.steps}: exiting with status {plan.exit_code}")
                return plan.exit_code
        if role.type == "evaluator":
            checkpoint = store.load(chief_tag(role))
            if checkpoint is not None and checkpoint.step > evaluated_step:
                evaluated_step = checkpoint.step
                log(f"evaluated checkpoint of step {checkpoint.step}: eval_loss={checkpoint.loss * 1.1:.4f}")
        if store.has_marker(DONE_MARKER):
            log("the chief finished training: stopping")
            return 0
        if options.stop_file is not None and options.stop_file.exists():
            log(f"stop file {options.stop_file} found: stopping")
            return 0
        now = clock()
        if now - last_heartbeat >= HEARTBEAT_SECONDS:
            last_heartbeat = now
            log(f"still {what} after {now - started:.0f}s")
        sleep(poll)
