"""How long decide_jobset() takes on a large JobSet, next to decide() on the same TFJob.

The JobSet verdict maps the JobSet's Jobs and pods onto the TFJob engine's view and then runs
``decide``, so its cost is ``decide``'s plus one pass over the pods.  This builds the snapshot of
``bench_policy.py`` (1 chief, 1,995 workers, 4 PS in mixed states) twice — as a TFJob with the
training operator's pods and as the JobSet the provider translates it into, with the JobSet and
Job controllers' pods — and prints the median CPU time of both and their ratio.  Run it on a
quiet machine: ``.venv/bin/python benchmarks/bench_jobset_verdict.py [runs]``.  Not a timed test.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the unit-test factories

from benchmarks.bench_policy import snapshot
from tests.unit.factories import NOW
from tests.unit.jobset_states import child_job, jobset_pod, make_jobset
from tfjob_provider._jobset.verdict import decide_jobset
from tfjob_provider.policy import decide

_RJOB = {"Chief": "chief", "Worker": "worker", "PS": "ps"}


def jobset_snapshot(
    pods: list[dict[str, Any]],
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """The same replicas and pod states, as a JobSet with its Jobs and pods."""
    jobset = make_jobset(
        chief=1,
        worker={"replicas": 1995, "restart_policy": "OnFailure"},
        ps={"replicas": 4, "restart_policy": "OnFailure"},
        backoff_limit=10_000,
        active_deadline_seconds=86_400,
    )
    jobs = [child_job(jobset, rjob["name"]) for rjob in jobset["spec"]["replicatedJobs"]]
    jobset_pods = []
    for pod in pods:
        labels = pod["metadata"]["labels"]
        rjob = _RJOB[
            {"chief": "Chief", "worker": "Worker", "ps": "PS"}[labels["training.kubeflow.org/replica-type"]]
        ]
        index = int(labels["training.kubeflow.org/replica-index"])
        converted = jobset_pod(rjob, index)
        converted["status"] = pod["status"]
        jobset_pods.append(converted)
    return jobset, jobs, jobset_pods


def cpu_ms(call: Callable[[], object], runs: int) -> float:
    for _ in range(10):  # warm up
        call()
    samples = []
    for _ in range(runs):
        start = time.process_time()
        call()
        samples.append((time.process_time() - start) * 1000)
    return statistics.median(samples)


def main(runs: int = 200) -> None:
    tfjob, pods = snapshot()
    jobset, jobs, jobset_pods = jobset_snapshot(pods)
    on_tfjob = decide(tfjob, pods, now=NOW)
    on_jobset = decide_jobset(jobset, jobs, jobset_pods, now=NOW)
    print(
        f"{len(pods)} pods: TFJob {on_tfjob.state.value}/{on_tfjob.reason}, "
        f"JobSet {on_jobset.state.value}/{on_jobset.reason}"
    )
    tfjob_ms = cpu_ms(lambda: decide(tfjob, pods, now=NOW), runs)
    jobset_ms = cpu_ms(lambda: decide_jobset(jobset, jobs, jobset_pods, now=NOW), runs)
    print(f"  decide()        CPU median {tfjob_ms:.2f} ms")
    print(f"  decide_jobset() CPU median {jobset_ms:.2f} ms  ({jobset_ms / tfjob_ms:.1f}x)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
