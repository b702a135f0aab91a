"""What one read of a TFJob costs the Kubeflow Training SDK (v1): ``bench_peers.py --read-costs``.

``wait_for_job_conditions`` reads the job with ``TrainingClient.get_job``, which decodes the
answer into the SDK's generated models; the same GET without the decoding
(``CustomObjectsApi.get_namespaced_custom_object``, the client the SDK itself calls) shows what
the decoding costs.  Runs with ``.venv-sdk``'s interpreter.

Usage: ``sdk_reads.py KUBECONFIG NAMESPACE NAME READS {get_job,raw}``; prints one line with this
process's CPU milliseconds per read.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from kubeflow.training import TrainingClient


def main() -> None:
    kubeconfig, namespace, name, reads, mode = sys.argv[1:6]
    client = TrainingClient(config_file=kubeconfig, job_kind="TFJob")
    calls: dict[str, Callable[[], Any]] = {
        "get_job": lambda: client.get_job(name, namespace=namespace),
        "raw": lambda: client.custom_api.get_namespaced_custom_object(
            "kubeflow.org", "v1", namespace, "tfjobs", name
        ),
    }
    read = calls[mode]
    read()  # connection and first-use costs out of the loop
    before = os.times()
    for _ in range(int(reads)):
        read()
    after = os.times()
    spent = after.user + after.system - before.user - before.system
    print(f"{1000 * spent / int(reads):.2f}", flush=True)


if __name__ == "__main__":
    main()
