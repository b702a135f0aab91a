"""The program: options, role, then train, serve or run TensorFlow — and the exit status.

Why separate from ``__main__``: tests call :func:`main` with an argument list and an environment
and read its exit status, exactly what the kubelet sees, without starting a process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

from trainer.checkpoints import CheckpointStore
from trainer.options import parse_options
from trainer.tf_config import TFConfigError, read_role
from trainer.training import ReplicaLog, serve, train

#: Exit status for a configuration the program cannot work with (as argparse's usage errors).
CONFIGURATION_ERROR = 2


def main(
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    stream: TextIO | None = None,
) -> int:
    """Run one replica; returns its exit status (argparse exits with 2 on a usage error)."""
    environment = os.environ if environ is None else environ
    options = parse_options(argv)
    try:
        role = read_role(environment)
    except TFConfigError as error:
        print(f"[trainer] {error}", file=stream if stream is not None else sys.stderr, flush=True)
        return CONFIGURATION_ERROR
    log = ReplicaLog(role.tag, stream)
    store = CheckpointStore(options.checkpoint_dir)
    details = [f"cluster: {role.describe()}", "chief" if role.is_chief else role.type]
    if options.data_date:
        details.append(f"data date {options.data_date}")
    if store.directory is not None:
        details.append(f"checkpoints in {store.directory}")
    log("started (" + "; ".join(details) + ")")
    if options.tensorflow:
        from trainer.tensorflow_training import run_tensorflow

        return run_tensorflow(options, role, store=store, environ=environment, log=log)
    if role.trains:
        return train(options, role, store=store, environ=environment, log=log)
    return serve(options, role, store=store, log=log, environ=environment)
