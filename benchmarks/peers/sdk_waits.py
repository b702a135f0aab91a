"""N waits of the Kubeflow Training SDK (v1) in one process: the peer ``bench_peers.py`` measures.

Runs with ``.venv-sdk``'s interpreter (``make venv-sdk``: ``kubeflow-training`` from the hashed
lock beside this file), never with the project's venv: the SDK pins its own ``kubernetes``
client.  ``TrainingClient.wait_for_job_conditions`` is synchronous, so each TFJob's wait is a
thread of this process, all sharing one ``TrainingClient`` (one program waiting for its jobs),
with the SDK's defaults: a GET of the TFJob every ``polling_interval`` (15 s) until it has the
``Succeeded`` condition.  Only ``wait_timeout`` is raised, so that no wait gives up while the
benchmark's other waits run first.  The N waits start spread over one polling interval, as
waits begun for separately submitted jobs would be.

Usage: ``sdk_waits.py KUBECONFIG NAMES_JSON`` (``[[namespace, name], ...]``).  Prints one
``peer-ready {json}`` line once every wait has polled its job once (the SDK's ``callback`` runs
after each poll), then one ``peer-done {json}`` line with the instant each wait returned and this
process's CPU seconds.  Standard library and the SDK only.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from kubeflow.training import TrainingClient

#: Longer than the benchmark's steady windows and ends together (the SDK's default is 600 s).
WAIT_TIMEOUT = 3600
#: The SDK's default seconds between two GETs of a job (15 in kubeflow-training 1.9).
POLLING_INTERVAL = float(
    inspect.signature(TrainingClient.wait_for_job_conditions).parameters["polling_interval"].default
)


def rss_mb() -> float:
    """This process's resident set, from ``/proc`` (no psutil in this venv)."""
    resident_pages = int(Path("/proc/self/statm").read_text().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def report(prefix: str, body: dict[str, Any]) -> None:
    sys.stdout.write(prefix + json.dumps(body) + "\n")
    sys.stdout.flush()


def main() -> None:
    kubeconfig, names_file = sys.argv[1], sys.argv[2]
    names = [(namespace, name) for namespace, name in json.loads(Path(names_file).read_text())]
    client = TrainingClient(config_file=kubeconfig, job_kind="TFJob")
    rss_base = rss_mb()
    lock = threading.Lock()
    polled: set[str] = set()
    all_polled = threading.Event()
    received: dict[str, float] = {}
    errors: dict[str, str] = {}

    def on_poll(job: Any) -> None:
        with lock:
            polled.add(f"{job.metadata.namespace}/{job.metadata.name}")
            if len(polled) == len(names):
                all_polled.set()

    def wait(index: int, namespace: str, name: str) -> None:
        # Waits begin at independent instants (one per submitted job), so the polls of the N
        # waits are spread over the interval rather than all landing at once.
        time.sleep(index * POLLING_INTERVAL / len(names))
        try:
            client.wait_for_job_conditions(
                name, namespace=namespace, wait_timeout=WAIT_TIMEOUT, callback=on_poll
            )
            received[f"{namespace}/{name}"] = time.time()
        except Exception as error:  # reported to the parent, which fails the run naming the job
            errors[f"{namespace}/{name}"] = repr(error)
            all_polled.set()

    threads = [
        threading.Thread(target=wait, args=(index, namespace, name), daemon=True)
        for index, (namespace, name) in enumerate(names)
    ]
    for thread in threads:
        thread.start()
    if not all_polled.wait(timeout=300) or errors:
        report("peer-done ", {"errors": errors or {"all": "not every job was polled within 300 s"}})
        sys.exit(1)
    report("peer-ready ", {"rss_base_mb": rss_base})
    for thread in threads:
        thread.join()
    times = os.times()
    report(
        "peer-done ",
        {
            "received": received,
            "errors": errors,
            "statuses": {"Succeeded": len(received)},
            "cpu_s": times.user + times.system,
        },
    )


if __name__ == "__main__":
    main()
