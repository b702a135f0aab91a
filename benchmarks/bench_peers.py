"""Our deferred wait next to what users run today, on one sandbox in one run (issue 12).

Four waits on N jobs each (default 100), one after another against the same sandbox process
(``benchmarks/wait_peers.py`` says how):

* ours — ``TFJobTrigger``, N in one asyncio loop, on Chief + Worker TFJobs;
* ours on JobSets — the same, ``backend="jobset"``, on the JobSets built from those TFJobs;
* Airflow's ``KubernetesPodTrigger`` on N plain pods, as ``KubernetesPodOperator(deferrable=True)``
  builds it by default (poll every 2 s), N in one asyncio loop;
* the Kubeflow Training SDK's ``TrainingClient.wait_for_job_conditions`` on N Chief + Worker
  TFJobs, N threads in one process of ``.venv-sdk`` (poll every 15 s, the SDK's default).

Printed: detection latency p50 / p99 / max (the scripted container's exit → the waiter knows),
API requests per job per minute in a steady window, CPU seconds and RSS of the waiting process,
the sandbox's CPU while they wait, and the ratios to ours.  Figures, not assertions; wall-clock
numbers are noisy while other work shares the machine (the load average is printed).

    make venv-sdk
    .venv/bin/python benchmarks/bench_peers.py [--jobs 100] [--steady 60] [--release-rate 50]
    .venv/bin/python benchmarks/bench_peers.py --read-costs 300   # where the peers' CPU goes
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import peer_reads
import wait_peers

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100, help="jobs (or pods) per wait")
    parser.add_argument("--steady", type=float, default=60.0, help="seconds of each steady window")
    parser.add_argument("--release-rate", type=float, default=50.0, help="chiefs (pods) ended per second")
    parser.add_argument(
        "--sdk-python",
        type=Path,
        default=ROOT / ".venv-sdk" / "bin" / "python",
        help="interpreter with kubeflow-training (make venv-sdk)",
    )
    parser.add_argument(
        "--read-costs",
        type=int,
        metavar="READS",
        help="instead: CPU per status read of each polling peer, READS reads each (benchmarks/peer_reads.py)",
    )
    parser.add_argument("--ours", type=Path, help=argparse.SUPPRESS)  # internal: ours' child
    parser.add_argument("--pod-triggers", type=Path, help=argparse.SUPPRESS)  # internal: the pod triggers
    args = parser.parse_args()
    if args.ours is not None:
        wait_peers.ours_child(args.ours)
        return
    if args.pod_triggers is not None:
        wait_peers.pod_triggers_child(args.pod_triggers)
        return
    if not args.sdk_python.exists():
        parser.error(f"--sdk-python {args.sdk_python} does not exist: run `make venv-sdk` first")
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.read_costs is not None and args.read_costs < 1:
        parser.error(f"--read-costs must be at least 1, got {args.read_costs}")
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="bench-peers-airflow-"))
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    if args.read_costs is not None:
        peer_reads.run_read_costs(args.read_costs, sdk_python=args.sdk_python)
        return
    print("bench_peers: wall-clock figures are noisy while other work shares the machine.", flush=True)
    results = wait_peers.run_peers(
        args.jobs, steady=args.steady, rate=args.release_rate, sdk_python=args.sdk_python
    )
    wait_peers.report_peers(results, steady=args.steady, rate=args.release_rate)


if __name__ == "__main__":
    main()
