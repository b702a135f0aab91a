"""``--tensorflow``: the same program as real distributed TensorFlow, the strategy chosen by TF_CONFIG.

Why: the pure-Python trainer shows the TFJob life cycle; this path shows that the same DAGs run
real distributed TensorFlow — on a cluster, or on the sandbox started with
``--loopback-tf-config`` (``TF_CONFIG`` then lists ``127.0.0.1:<port>`` endpoints, so the
replicas' gRPC servers find each other on one machine).

* cluster with ``ps``: ParameterServerStrategy (:mod:`trainer.tf_parameter_server`) — the chief
  coordinates, workers and parameter servers serve;
* other distributed cluster: MultiWorkerMirroredStrategy (:mod:`trainer.tf_collective`);
* no ``TF_CONFIG``: one process, TensorFlow's default strategy (also :mod:`trainer.tf_collective`).

The options keep their meaning: a step is one training step (one batch per replica; under
ParameterServerStrategy :data:`~trainer.tf_parameter_server.BATCHES_PER_STEP` batches spread over
the workers), ``--checkpoint-dir`` holds TensorFlow checkpoints (a restart resumes from the
latest and says at which step), ``--fail-at-step`` crashes before that step.

Exit statuses: 0 done; 1 the program's own error (an uncaught exception); 2 cannot work as
configured; :data:`~trainer.peer_loss.PEER_LOST_EXIT` (138) a peer replica was lost — retryable,
so the training operator (``ExitCode``) recreates the replica or Airflow retries the job
(:mod:`trainer.peer_loss` says why).

TensorFlow is imported only here, only when asked for; without it the program says so and exits
with status 2 (a permanent failure: retrying will not install TensorFlow).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping

from trainer.checkpoints import CheckpointStore
from trainer.options import TrainerOptions
from trainer.peer_loss import PEER_LOST_EXIT, describe, is_peer_lost
from trainer.results import TrainingResult, report
from trainer.tf_config import ClusterRole
from trainer.training import ReplicaLog

#: Exit status for "this cannot work as configured" (argparse uses the same).
CONFIGURATION_ERROR = 2


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
    """Run this replica's part of a real TensorFlow job; the replica's exit status."""
    if not tensorflow_available():
        log(
            "--tensorflow needs TensorFlow, which is not installed here: "
            "install it (pip install tensorflow-cpu) or drop --tensorflow"
        )
        return CONFIGURATION_ERROR
    if role.type == "evaluator":
        log("--tensorflow has no evaluator: use Chief, Worker and PS replicas")
        return CONFIGURATION_ERROR
    if role.strategy == "parameter_server" and not any(role.cluster.get(k) for k in ("chief", "master")):
        log("--tensorflow with parameter servers needs a Chief replica: it is the coordinator")
        return CONFIGURATION_ERROR
    if options.stop_file is not None:
        log("--stop-file is ignored with --tensorflow (every replica must stop at the same step)")
    if role.strategy == "parameter_server":
        # Report a lost PS or worker to the coordinator at once instead of retrying the RPC for
        # minutes (TensorFlow's advice for parameter-server training).  Read when TF starts.
        os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")
    try:
        result = _train_or_serve(options, role, store=store, environ=environ, log=log)
    except Exception as error:
        if not is_peer_lost(error):
            raise  # the program's own error: exit status 1, with the traceback
        log(
            f"lost a peer replica ({describe(error)}): exiting with status "
            f"{PEER_LOST_EXIT} (retryable) so the replica is restarted or the job retried"
        )
        return PEER_LOST_EXIT
    if result is not None:
        report(result, log, environ)
    return 0


def _train_or_serve(
    options: TrainerOptions,
    role: ClusterRole,
    *,
    store: CheckpointStore,
    environ: Mapping[str, str],
    log: ReplicaLog,
) -> TrainingResult | None:
    if role.strategy == "parameter_server":
        from trainer import tf_parameter_server

        if role.is_chief:
            return tf_parameter_server.coordinate(options, role, store=store, environ=environ, log=log)
        tf_parameter_server.serve(options, role, store=store, environ=environ, log=log)
        return None
    from trainer.tf_collective import train_collective

    return train_collective(options, role, store=store, environ=environ, log=log)
