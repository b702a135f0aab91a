"""How long decide() takes on a large TFJob: 2,000 pods, target a median under 5 ms.

The trigger calls :func:`tfjob_provider.policy.decide` on every watch event of a job and its
pods, and one triggerer process serves many jobs on one event loop, so the verdict must stay cheap
even for wide jobs.  This builds one realistic 2,000-pod snapshot (1 chief, 1,995 workers, 4 PS in
mixed states, with the same API-shaped pods as the unit tests) and prints the median, best and
90th-percentile time of ``decide`` over many runs, as wall-clock and as CPU time.  Run it on a quiet machine:
``.venv/bin/python benchmarks/bench_policy.py [runs]``.  Not a timed test.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the unit-test factories

from tests.unit.factories import NOW, condition, make_pod, make_tfjob
from tfjob_provider.policy import decide

TARGET_MS = 5.0


def snapshot() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """1 chief, 1,995 workers, 4 PS: mostly running, some restarted, finished, pending or replaced."""
    job = make_tfjob(
        {"Chief": 1, "Worker": 1995, "PS": 4},
        restart_policy={"Chief": "Never", "Worker": "OnFailure", "PS": "Always"},
        run_policy={"backoffLimit": 10_000, "activeDeadlineSeconds": 86_400},
        conditions=[condition("Created"), condition("Running")],
    )
    pods = [make_pod("Chief", restart_policy="Never")]
    for index in range(1995):
        if index % 100 == 7:
            pod = make_pod("Worker", index, phase="Succeeded", restart_policy="OnFailure")
        elif index % 100 == 13:
            pod = make_pod("Worker", index, phase="Pending", restart_policy="OnFailure")
        elif index % 250 == 99:
            pod = make_pod("Worker", index, phase="Failed", exit_code=None, pod_reason="Evicted")
        elif index % 50 == 21:
            pod = make_pod("Worker", index, restarts=2, last_exit_code=137, restart_policy="OnFailure")
        else:
            pod = make_pod("Worker", index, restart_policy="OnFailure")
        pods.append(pod)
    pods.extend(make_pod("PS", index, restart_policy="Always") for index in range(4))
    return job, pods


def main(runs: int = 300) -> None:
    job, pods = snapshot()
    verdict = decide(job, pods, now=NOW)
    for _ in range(20):  # warm up
        decide(job, pods, now=NOW)
    wall_ms: list[float] = []
    cpu_ms: list[float] = []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        decide(job, pods, now=NOW)
        cpu_ms.append((time.process_time() - cpu) * 1000)
        wall_ms.append((time.perf_counter() - wall) * 1000)
    print(f"decide() on {len(pods)} pods ({verdict.state.value}, {verdict.reason}), {runs} runs:")
    for label, samples in (("wall-clock", wall_ms), ("CPU time", cpu_ms)):
        samples.sort()
        median = statistics.median(samples)
        p90 = samples[int(len(samples) * 0.9) - 1]
        verdict_text = "meets" if median < TARGET_MS else "MISSES"
        print(
            f"  {label:>10}: median {median:.2f} ms  best {samples[0]:.2f} ms  p90 {p90:.2f} ms"
            f"  -> {verdict_text} the {TARGET_MS} ms target"
        )
    print("  (CPU time excludes waiting for a core; on a shared machine trust it over wall-clock)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
