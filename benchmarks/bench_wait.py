"""What waiting costs: N deferred TFJobs in one triggerer event loop, against a sandbox in another process.

A triggerer holds every deferred TFJob task of a deployment, so the trigger must stay cheap as N
grows: it should notice a finished job at the physical floor (a watch, not a poll), cost the API
server almost nothing while jobs run, whatever their replica count, and keep memory bounded (no
log reads).  This script measures exactly that, as a triggerer would run it:

1. starts the sandbox with its CLI (``python -m tfjob_sandbox serve``) — a separate
   process, so this process holds only the triggers;
2. submits N TFJobs (one Chief plus ``--workers`` Workers) from a child process; each chief
   blocks on a FIFO and, when released, writes its own exit time (``date +%s.%N``) just before
   exiting — the termination instant, to the nanosecond (``finishedAt`` has whole seconds);
3. runs N :class:`~tfjob_provider.triggers.tfjob.TFJobTrigger` in one asyncio loop;
4. once every trigger waits on the shared watch, measures a steady window: API requests (the
   sandbox's request counters, reset at the window's start), this process's CPU and RSS;
5. releases the chiefs at a steady rate and records, per job, the time from the chief's exit to
   its trigger event.

Printed per N: detection latency p50/p99/max, API requests per job per minute in the steady
window, RSS (before the triggers and with them) and CPU.  Targets (issue 4): p99 < 1 s;
<= 2 requests/job/minute in steady state, independent of replica count; < 200 MB RSS at 500 jobs.
The figures are printed, not asserted; wall-clock numbers are noisy while other work shares the
machine.  Run ``.venv/bin/python benchmarks/bench_wait.py [--jobs 1 100 500] [--workers 1]
[--steady 60] [--release-rate 50]``.

Scale mode (issue 12; ``benchmarks/wait_scale.py``): ``--scale 1000 5000 10000`` runs that many
triggers against *scripted* pods (no processes; chiefs ended through the sandbox admin API, exit
instants to the microsecond), ``--namespaces 100`` spreads the jobs, ``--burst`` ends 1,000 chiefs
within one second, ``--tracemalloc`` prints where the waiting jobs' memory is, ``--backend jobset``
waits on the JobSets built from the same TFJobs (``tfjob_to_jobset``).  ``--worker-mode 50``
runs 50 non-deferrable waits, one process each as an executor runs them.  Goals at N = 10,000:
detection p99 < 100 ms, 0 steady requests, < 400 MB RSS in the waiting process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import wait_scale
from tfjob_sandbox.launch.kubeconfig import connection_json

from demo.processes import ProcessGroupSet, new_run_marker
from demo.sandbox_process import start_sandbox

NAMESPACE = "default"
READY_TIMEOUT = 60.0


@dataclass
class Figures:
    jobs: int
    workers: int
    statuses: dict[str, int]
    latencies: list[float]
    steady_seconds: float
    steady_requests: int
    rss_before_mb: float
    rss_waiting_mb: float
    rss_after_mb: float
    cpu_steady_percent: float
    cpu_release_seconds: float


def chief_command(fifo: Path, end: Path) -> list[str]:
    """Block on the FIFO without using CPU; when released, record the exit time and exit 0."""
    return ["sh", "-c", f"read line < {fifo}; date +%s.%N > {end}"]


def submit(names: list[str], *, workers: int, workdir: Path) -> dict[str, str]:
    """Create the TFJobs through the provider's hook (a bucket of its own: creation is not measured)."""
    from tfjob_provider.hooks.tfjob import TFJobHook
    from tfjob_provider.kube.ratelimit import RateLimit
    from tfjob_provider.manifest import build_tfjob

    hook = TFJobHook(rate_limit=RateLimit(rate=1000.0, burst=1000))
    uids: dict[str, str] = {}
    for name in names:
        fifo = workdir / f"{name}.fifo"
        os.mkfifo(fifo)
        manifest = build_tfjob(
            name=name,
            namespace=NAMESPACE,
            image="busybox",
            command=["sleep", "3600"],
            chief={"replicas": 1, "command": chief_command(fifo, workdir / f"{name}.end")},
            worker=workers,
        )
        uids[name] = str(hook.client.create_tfjob(manifest, namespace=NAMESPACE)["metadata"]["uid"])
    hook.client.close()
    return uids


def wait_until_running(count: int) -> None:
    """Until ``count`` pods of the training operator run (the steady state starts then)."""
    from tfjob_provider.hooks.tfjob import TFJobHook
    from tfjob_provider.kube import operations as ops
    from tfjob_provider.kube import requests as rq
    from tfjob_provider.kube.ratelimit import RateLimit

    hook = TFJobHook(rate_limit=RateLimit(rate=1000.0, burst=1000))
    client = hook.client
    selector = "training.kubeflow.org/operator-name=tfjob-controller"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        body = client.run(
            ops.call_json(client.session, rq.list_pods(namespace=NAMESPACE, label_selector=selector))
        )
        running = sum(1 for pod in body.get("items", []) if pod.get("status", {}).get("phase") == "Running")
        if running >= count:
            client.close()
            return
        time.sleep(1.0)
    raise RuntimeError(f"only some of {count} pods started")


def submit_in_child(names: list[str], *, workers: int, workdir: Path) -> dict[str, str]:
    """Submit the jobs and wait until their pods run from a child process, so that this process —
    the measured "triggerer" — never loads the synchronous ``kubernetes`` client a triggerer
    would not load either (about 40 MB of RSS)."""
    names_file = workdir / "names.json"
    names_file.write_text(json.dumps(names))
    subprocess.run(
        [sys.executable, __file__, "--submit", str(names_file), "--workers", str(workers)], check=True
    )
    uids: dict[str, str] = json.loads((workdir / "uids.json").read_text())
    return uids


def submit_and_wait(names_file: Path, workers: int) -> None:
    """The child's part of :func:`submit_in_child`."""
    workdir = names_file.parent
    names = json.loads(names_file.read_text())
    uids = submit(names, workers=workers, workdir=workdir)
    wait_until_running(len(names) * (1 + workers))
    (workdir / "uids.json").write_text(json.dumps(uids))


def rss_mb() -> float:
    import psutil

    return float(psutil.Process().memory_info().rss) / 2**20


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


@dataclass
class Measured:
    """What the triggerer side saw: each job's event and when it arrived, plus the process figures."""

    events: dict[str, Any]
    received: dict[str, float]
    rss_before_mb: float
    rss_waiting_mb: float
    cpu_steady_percent: float
    cpu_release_seconds: float
    steady_requests: int
    steady_seconds: float


async def measure(
    names: list[str], uids: dict[str, str], *, workdir: Path, kubeconfig: Path, steady: float, rate: float
) -> Measured:
    from tfjob_sandbox.admin_client import SandboxAdminClient

    from tests.integration.async_clients import close_async_clients
    from tfjob_provider.hooks.tfjob import TFJobHook
    from tfjob_provider.kube.shared_watch import SharedJobWatch
    from tfjob_provider.triggers.tfjob import TFJobTrigger

    admin = SandboxAdminClient.from_kubeconfig(kubeconfig)
    client = await TFJobHook().get_async_client()
    rss_before = rss_mb()
    received: dict[str, float] = {}
    events: dict[str, Any] = {}

    async def wait_on(name: str) -> None:
        trigger = TFJobTrigger(name=name, namespace=NAMESPACE, uid=uids[name])
        event = await anext(trigger.run())
        received[name] = time.time()
        events[name] = event.payload

    tasks = [asyncio.ensure_future(wait_on(name)) for name in names]
    while True:  # every trigger subscribed and served its first snapshot
        watch = SharedJobWatch.active(client, NAMESPACE)
        if watch is not None and watch.ready and len(watch.subscribers) == len(names):
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)

    await asyncio.to_thread(admin.reset_request_counts)
    cpu_start, window_start = cpu_seconds(), time.monotonic()
    await asyncio.sleep(steady)
    rows = await asyncio.to_thread(admin.request_counts)
    window = time.monotonic() - window_start
    cpu_steady = (cpu_seconds() - cpu_start) / window * 100
    steady_requests = sum(int(row["count"]) for row in rows)
    rss_waiting = rss_mb()

    cpu_release_start = cpu_seconds()
    for name in names:  # release the chiefs at ``rate`` per second
        descriptor = os.open(workdir / f"{name}.fifo", os.O_WRONLY | os.O_NONBLOCK)
        os.write(descriptor, b"go\n")
        os.close(descriptor)
        await asyncio.sleep(1.0 / rate)
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=300)
    cpu_release = cpu_seconds() - cpu_release_start
    await close_async_clients()
    return Measured(
        events=events,
        received=received,
        rss_before_mb=rss_before,
        rss_waiting_mb=rss_waiting,
        cpu_steady_percent=cpu_steady,
        cpu_release_seconds=cpu_release,
        steady_requests=steady_requests,
        steady_seconds=window,
    )


def run(jobs: int, *, workers: int, steady: float, rate: float) -> Figures:
    with tempfile.TemporaryDirectory(prefix="bench-wait-") as temp:
        workdir = Path(temp)
        with ProcessGroupSet(marker=new_run_marker()) as processes:
            sandbox = start_sandbox(
                processes, directory=workdir, env=dict(os.environ), fast_restarts=False, timeout=READY_TIMEOUT
            )
            kubeconfig = sandbox.kubeconfig
            # Inherited by the child that submits the jobs.
            os.environ["AIRFLOW_CONN_KUBERNETES_DEFAULT"] = connection_json(kubeconfig, namespace=NAMESPACE)
            names = [f"bench-{jobs}-{index:04d}" for index in range(jobs)]
            uids = submit_in_child(names, workers=workers, workdir=workdir)
            seen = asyncio.run(
                measure(names, uids, workdir=workdir, kubeconfig=kubeconfig, steady=steady, rate=rate)
            )
            latencies = [
                seen.received[name] - float((workdir / f"{name}.end").read_text().strip()) for name in names
            ]
            statuses: dict[str, int] = {}
            for payload in seen.events.values():
                statuses[payload["status"]] = statuses.get(payload["status"], 0) + 1
            return Figures(
                jobs=jobs,
                workers=workers,
                statuses=statuses,
                latencies=latencies,
                steady_seconds=seen.steady_seconds,
                steady_requests=seen.steady_requests,
                rss_before_mb=seen.rss_before_mb,
                rss_waiting_mb=seen.rss_waiting_mb,
                rss_after_mb=rss_mb(),
                cpu_steady_percent=seen.cpu_steady_percent,
                cpu_release_seconds=seen.cpu_release_seconds,
            )


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def report(figures: Figures) -> None:
    per_job_minute = figures.steady_requests / figures.jobs / (figures.steady_seconds / 60)
    lat = figures.latencies
    print(
        f"N={figures.jobs:>4} (1 chief + {figures.workers} worker(s) each)  events {figures.statuses}\n"
        f"  detection latency: p50 {statistics.median(lat) * 1000:7.1f} ms   p99 "
        f"{percentile(lat, 0.99) * 1000:7.1f} ms   max {max(lat) * 1000:7.1f} ms   (target p99 < 1000 ms)\n"
        f"  steady state ({figures.steady_seconds:.0f} s): {figures.steady_requests} API requests = "
        f"{per_job_minute:.3f} requests/job/minute   (target <= 2)\n"
        f"  triggerer process: RSS {figures.rss_before_mb:.0f} MB before the triggers, "
        f"{figures.rss_waiting_mb:.0f} MB waiting, {figures.rss_after_mb:.0f} MB after"
        "   (target < 200 MB at 500)\n"
        f"  CPU: {figures.cpu_steady_percent:.1f} % of one core while waiting, "
        f"{figures.cpu_release_seconds:.1f} s while the jobs finished"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 100, 500])
    parser.add_argument("--workers", type=int, default=1, help="Worker replicas per job (besides the Chief)")
    parser.add_argument("--steady", type=float, default=60.0, help="seconds of the steady-state window")
    parser.add_argument("--release-rate", type=float, default=50.0, help="chiefs released per second")
    parser.add_argument(
        "--scale", type=int, nargs="+", help="scale mode (benchmarks/wait_scale.py): N scripted jobs per run"
    )
    parser.add_argument(
        "--namespaces", type=int, default=1, help="scale mode: spread the jobs over K namespaces"
    )
    parser.add_argument("--burst", action="store_true", help="scale mode: end all chiefs within one second")
    parser.add_argument(
        "--deadline-hours",
        type=float,
        help="scale mode: give every wait a deadline this far ahead, so each has a timer armed",
    )
    parser.add_argument(
        "--tracemalloc", action="store_true", help="scale mode: print where the waiting jobs' memory is"
    )
    parser.add_argument(
        "--backend",
        choices=["tfjob", "jobset"],
        default="tfjob",
        help="scale mode: wait on TFJobs (default) or on the JobSets built from them",
    )
    parser.add_argument("--submit", type=Path, help=argparse.SUPPRESS)  # internal: the child's job
    parser.add_argument("--submit-scripted", type=Path, help=argparse.SUPPRESS)  # internal: scale mode
    parser.add_argument("--worker-wait", help=argparse.SUPPRESS)  # internal: one worker-mode wait
    parser.add_argument(
        "--worker-mode", type=int, help="N non-deferrable (worker) waits, one process each, on scripted jobs"
    )
    args = parser.parse_args()
    if args.submit is not None:
        submit_and_wait(args.submit, args.workers)
        return
    if args.submit_scripted is not None:
        wait_scale.submit_scripted(args.submit_scripted, backend=args.backend)
        return
    if args.worker_wait is not None:
        wait_scale.worker_wait(args.worker_wait)
        return
    if args.backend != "tfjob" and not args.scale:
        parser.error(f"--backend {args.backend} needs --scale: the other modes wait on TFJobs only")
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="bench-wait-airflow-"))
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    if args.worker_mode:
        wait_scale.run_worker_mode(args.worker_mode, steady=args.steady)
        return
    if args.scale:
        print("bench_wait --scale: wall-clock figures are noisy while other work shares the machine.\n")
        for jobs in args.scale:
            figures = wait_scale.run_scale(
                jobs,
                namespaces=args.namespaces,
                steady=args.steady,
                rate=args.release_rate,
                burst=args.burst,
                profile=args.tracemalloc,
                deadline_hours=args.deadline_hours,
                backend=args.backend,
            )
            wait_scale.report_scale(figures)
        return
    print("bench_wait: wall-clock figures are noisy while other work shares the machine.\n")
    for jobs in args.jobs:
        report(run(jobs, workers=args.workers, steady=args.steady, rate=args.release_rate))


if __name__ == "__main__":
    main()
