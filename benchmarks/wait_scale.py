"""The scale mode of ``bench_wait.py``: thousands of deferred waits on scripted pods (issue 12).

A triggerer holds up to ``[triggerer] capacity`` triggers (1,000 by default, often raised), so
the wait must hold at 10,000: notice each finished job within milliseconds, cost the API server
nothing while jobs run, and keep the triggerer's memory bounded.  Process pods cap the sandbox at
a few hundred, so every pod here is *scripted* (``tfjob-sandbox/script``: a timer in the sandbox,
no process) and each chief is ended through the sandbox's admin API (``/scripted/end``); the
sandbox records the exit instant to the microsecond (``/scripted-exits``), the trigger side the
instant its event arrives.  One run:

1. the sandbox CLI in its own process; a child process submits N TFJobs (Chief + Worker, both
   scripted to run until ended) over ``--namespaces`` namespaces and waits until all 2N pods run;
2. this process (the "triggerer") runs N :class:`~tfjob_provider.triggers.tfjob.TFJobTrigger` in
   one asyncio loop, as the triggerer does, until every one waits on its shared watch;
3. a steady window: API requests (the sandbox's counters), CPU and RSS of both processes;
4. the chiefs are ended at ``--release-rate`` per second (or, with ``--burst``, 1,000 of them
   within one second) and each job's detection latency is exit → trigger event.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from demo.processes import ProcessGroupSet
    from demo.sandbox_process import RunningSandbox

SCRIPT_ANNOTATION = "tfjob-sandbox/script"


def job_names(jobs: int, namespaces: int) -> list[tuple[str, str]]:
    """(namespace, name) of each job, spread round-robin over the namespaces."""
    spaces = ["default"] if namespaces <= 1 else [f"team-{index:03d}" for index in range(namespaces)]
    return [(spaces[index % len(spaces)], f"scale-{index:05d}") for index in range(jobs)]


def start_bench_sandbox(processes: ProcessGroupSet, workdir: Path) -> RunningSandbox:
    """The sandbox CLI for one benchmark run (the real kubelet's restart back-off), its kubeconfig
    published to this process and its children: ``AIRFLOW_CONN_KUBERNETES_DEFAULT`` for the
    hooks, ``BENCH_KUBECONFIG`` for the rest."""
    from tfjob_sandbox.launch.kubeconfig import connection_json

    from demo.sandbox_process import start_sandbox

    sandbox = start_sandbox(processes, directory=workdir, env=dict(os.environ), fast_restarts=False)
    os.environ["AIRFLOW_CONN_KUBERNETES_DEFAULT"] = connection_json(sandbox.kubeconfig)
    os.environ["BENCH_KUBECONFIG"] = str(sandbox.kubeconfig)
    return sandbox


def submit_scripted(names_file: Path, *, backend: str = "tfjob", uids_file: Path | None = None) -> None:
    """The child's part: create the jobs — TFJobs, or with ``backend="jobset"`` the JobSets that
    ``tfjob_to_jobset`` builds from the same TFJobs — (both replicas scripted) and wait until every
    pod runs.  Writes each job's UID, and its chief pod's name, to ``uids_file`` (default
    ``uids.json`` beside ``names_file``)."""
    from kubernetes import client, config
    from tfjob_sandbox.admin_client import SandboxAdminClient

    from tfjob_provider.hooks.tfjob import TFJobHook
    from tfjob_provider.kube.kinds import kind_for
    from tfjob_provider.kube.ratelimit import RateLimit
    from tfjob_provider.manifest import build_tfjob

    kind = kind_for(backend)
    names = [tuple(pair) for pair in json.loads(names_file.read_text())]
    admin = SandboxAdminClient.from_kubeconfig(Path(os.environ["BENCH_KUBECONFIG"]))
    core = client.CoreV1Api(config.new_client_from_config(config_file=os.environ["BENCH_KUBECONFIG"]))
    hook = TFJobHook(rate_limit=RateLimit(rate=5000.0, burst=5000))
    started = time.monotonic()
    existing = {item.metadata.name for item in core.list_namespace().items}
    for namespace in sorted({namespace for namespace, _ in names} - existing):
        core.create_namespace({"metadata": {"name": namespace}})
    uids: dict[str, str] = {}
    for namespace, name in names:
        manifest = build_tfjob(
            name=name,
            namespace=namespace,
            image="tf:2.15",
            command=["train"],
            chief=1,
            worker=1,
            pod_annotations={SCRIPT_ANNOTATION: "{}"},  # run until the benchmark ends them
        )
        if backend == "jobset":
            from tfjob_provider._jobset import tfjob_to_jobset

            manifest = tfjob_to_jobset(manifest)
        created = hook.client.run(kind.create(hook.client.session, manifest, namespace=namespace))
        uids[f"{namespace}/{name}"] = str(created["metadata"]["uid"])
    submitted = time.monotonic() - started
    wanted = 2 * len(names)
    deadline = time.monotonic() + 1800
    while time.monotonic() < deadline:
        if backend == "jobset":
            chiefs = _jobset_chiefs(core, names, wanted)
            if chiefs is not None:
                break
        else:
            pods = int(admin.status()["objects"].get("core/pods", 0))
            waiting = core.list_pod_for_all_namespaces(field_selector="status.phase!=Running", limit=1)
            if pods >= wanted and not waiting.items:
                chiefs = {f"{namespace}/{name}": f"{name}-chief-0" for namespace, name in names}
                break
        time.sleep(5.0)
    else:
        raise RuntimeError(f"not all {wanted} scripted pods started")
    hook.client.close()
    (uids_file or names_file.parent / "uids.json").write_text(
        json.dumps(
            {
                "uids": uids,
                "chiefs": chiefs,
                "submit_s": submitted,
                "running_s": time.monotonic() - started,
            }
        )
    )


def _jobset_chiefs(core: Any, names: list[tuple[str, ...]], wanted: int) -> dict[str, str] | None:
    """Each JobSet's chief pod name (the Job controller adds a random suffix), found by label,
    once all ``wanted`` pods of ``names`` run; None while some do not."""
    from tfjob_provider._jobset import names as jobset_names

    jobs = {f"{namespace}/{name}" for namespace, name in names}
    running = 0
    chiefs: dict[str, str] = {}
    for namespace in sorted({namespace for namespace, _ in names}):
        pods = core.list_namespaced_pod(namespace, label_selector=jobset_names.LABEL_JOBSET_NAME).items
        for pod in pods:
            labels = pod.metadata.labels or {}
            key = f"{namespace}/{labels[jobset_names.LABEL_JOBSET_NAME]}"
            if key not in jobs or pod.status.phase != "Running":
                continue
            running += 1
            if labels.get(jobset_names.LABEL_REPLICATED_JOB) == "chief":
                chiefs[key] = pod.metadata.name
    return chiefs if running >= wanted and len(chiefs) == len(jobs) else None


@dataclass
class ScaleFigures:
    backend: str
    jobs: int
    namespaces: int
    burst: bool
    submit_s: float
    running_s: float
    statuses: dict[str, int]
    latencies: list[float]
    steady_seconds: float
    steady_requests: int
    rss_base_mb: float
    rss_waiting_mb: float
    cpu_steady_s: float
    cpu_release_s: float
    release_seconds: float
    sandbox_cpu_steady_s: float
    sandbox_cpu_release_s: float
    sandbox_rss_mb: float
    watches: int
    extra: dict[str, Any] = field(default_factory=dict)


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


def _rss_mb(pid: int | None = None) -> float:
    import psutil

    return float(psutil.Process(pid).memory_info().rss) / 2**20


def _proc_cpu(pid: int) -> float:
    import psutil

    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


async def _measure(
    names: list[tuple[str, str]],
    uids: dict[str, str],
    *,
    kubeconfig: Path,
    sandbox_pid: int,
    steady: float,
    rate: float,
    burst: bool,
    profile: bool,
    deadline_hours: float | None = None,
    backend: str = "tfjob",
    chiefs: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Wait on ``names`` (TFJobs, or JobSets with ``backend="jobset"``) and measure; ``chiefs``
    maps ``namespace/name`` to the chief pod's name (default: the training operator's
    ``<name>-chief-0``)."""
    from tfjob_sandbox.admin_client import SandboxAdminClient

    from tests.integration.async_clients import close_async_clients
    from tfjob_provider.hooks.tfjob import TFJobHook
    from tfjob_provider.kube.kinds import kind_for
    from tfjob_provider.kube.shared_watch import SharedJobWatch
    from tfjob_provider.triggers.tfjob import TFJobTrigger

    kind = kind_for(backend)
    chief_pods = chiefs or {f"{namespace}/{name}": f"{name}-chief-0" for namespace, name in names}
    admin = SandboxAdminClient.from_kubeconfig(kubeconfig)
    client = await TFJobHook().get_async_client()
    rss_base = _rss_mb()
    tracked_base = _tracked_by_type()
    if profile:
        tracemalloc.start(8)
    received: dict[str, float] = {}
    statuses: dict[str, int] = {}
    # With --deadline-hours every wait has a timer armed (a far deadline); without, none has one.
    deadline = None
    if deadline_hours is not None:
        deadline = (datetime.now(timezone.utc) + timedelta(hours=deadline_hours)).isoformat()

    async def wait_on(namespace: str, name: str) -> None:
        trigger = TFJobTrigger(
            name=name,
            namespace=namespace,
            uid=uids[f"{namespace}/{name}"],
            deadline=deadline,
            backend=backend,
        )
        event = await anext(trigger.run())
        received[f"{namespace}/{name}"] = time.time()
        status = str(event.payload["status"])
        statuses[status] = statuses.get(status, 0) + 1

    tasks = [asyncio.ensure_future(wait_on(namespace, name)) for namespace, name in names]
    spaces = sorted({namespace for namespace, _ in names})
    while True:  # every trigger subscribed to a ready shared watch
        watches = [SharedJobWatch.active(client, namespace, kind) for namespace in spaces]
        subscribed = sum(len(w.subscribers) for w in watches if w is not None and w.ready)
        if subscribed == len(names):
            break
        if any(task.done() for task in tasks):
            failed = next(task for task in tasks if task.done())
            raise RuntimeError(f"a trigger ended before any job finished: {failed.result()!r} {statuses}")
        await asyncio.sleep(0.5)
    # "Ready" means listed; the watch streams open after the lists, behind the same token bucket
    # (5 requests/s): 100 namespaces take ~80 s to open their 200 streams.  A steady window
    # started before that counts the openings as steady requests.  Streams per namespace: 2 for
    # TFJobs (TFJobs, pods), 3 for JobSets (JobSets, Jobs, pods).
    streams = len(kind.shared_streams(client.session, kind.shared_tracker(spaces[0]), spaces[0]))
    wanted_streams = streams * len(spaces)
    while True:
        if int((await asyncio.to_thread(admin.status))["openWatches"]) >= wanted_streams:
            break
        await asyncio.sleep(0.5)
    await asyncio.sleep(2.0)

    await asyncio.to_thread(admin.reset_request_counts)
    cpu_start, sandbox_start, window_start = _cpu(), _proc_cpu(sandbox_pid), time.monotonic()
    await asyncio.sleep(steady)
    rows = await asyncio.to_thread(admin.request_counts)
    window = time.monotonic() - window_start
    cpu_steady, sandbox_steady = _cpu() - cpu_start, _proc_cpu(sandbox_pid) - sandbox_start
    rss_waiting, sandbox_rss = _rss_mb(), _rss_mb(sandbox_pid)
    if profile:
        _print_allocations(tracemalloc.take_snapshot(), len(names))
        tracemalloc.stop()
    open_watches = int((await asyncio.to_thread(admin.status))["openWatches"])
    tracked_waiting = _tracked_by_type()

    pauses: list[float] = []  # full (generation 2) collections while the jobs finish
    gc_started = [0.0]

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if info.get("generation") == 2:
            if phase == "start":
                gc_started[0] = time.perf_counter()
            else:
                pauses.append(time.perf_counter() - gc_started[0])

    gc.callbacks.append(on_gc)
    cpu_release_start, sandbox_release_start, release_start = _cpu(), _proc_cpu(sandbox_pid), time.monotonic()
    pods = [(namespace, chief_pods[f"{namespace}/{name}"]) for namespace, name in names]
    if burst:
        batch, pause = max(1, len(pods) // 10), 0.1  # all of them within one second
    else:
        batch, pause = max(1, round(rate / 10)), 0.1
    for start in range(0, len(pods), batch):
        began = time.monotonic()
        await asyncio.to_thread(admin.end_scripted, pods[start : start + batch])
        await asyncio.sleep(max(0.0, pause - (time.monotonic() - began)))
    release_seconds = time.monotonic() - release_start
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=600)
    gc.callbacks.remove(on_gc)
    cpu_release, sandbox_release = _cpu() - cpu_release_start, _proc_cpu(sandbox_pid) - sandbox_release_start
    exits = await asyncio.to_thread(admin.scripted_exits)
    await close_async_clients()
    latencies = [
        received[f"{namespace}/{name}"] - exits[f"{namespace}/{chief_pods[f'{namespace}/{name}']}/tensorflow"]
        for namespace, name in names
    ]
    return {
        "statuses": statuses,
        "latencies": latencies,
        "steady_seconds": window,
        "steady_requests": sum(int(row["count"]) for row in rows),
        "rss_base_mb": rss_base,
        "rss_waiting_mb": rss_waiting,
        "cpu_steady_s": cpu_steady,
        "cpu_release_s": cpu_release,
        "release_seconds": release_seconds,
        "sandbox_cpu_steady_s": sandbox_steady,
        "sandbox_cpu_release_s": sandbox_release,
        "sandbox_rss_mb": sandbox_rss,
        "watches": open_watches,
        "extra": {
            "gc_full": len(pauses),
            "tracked_base": sum(tracked_base.values()),
            "tracked_waiting": sum(tracked_waiting.values()),
            "tracked_growth": sorted(
                ((count - tracked_base.get(kind, 0), kind) for kind, count in tracked_waiting.items()),
                reverse=True,
            )[:8],
            "gc_max_ms": 1000 * max(pauses, default=0.0),
            "steady_rows": rows,
            "slowest": sorted(
                ((lat, f"{ns}/{name}") for lat, (ns, name) in zip(latencies, names, strict=True)),
                reverse=True,
            )[:5],
        },
    }


def _tracked_by_type() -> dict[str, int]:
    """The objects the garbage collector tracks, by type: a full collection visits every one of
    them, so their number per waiting job sets the length of the pauses."""
    counts: dict[str, int] = {}
    for obj in gc.get_objects():
        kind = type(obj).__name__
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def _print_allocations(snapshot: tracemalloc.Snapshot, jobs: int) -> None:
    """Where the waiting jobs' memory is, by allocating line (``--tracemalloc``)."""
    snapshot = snapshot.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
    stats = snapshot.statistics("lineno")
    total = sum(stat.size for stat in stats)
    print(
        f"tracemalloc: {total / 2**20:.1f} MiB allocated since the triggers started "
        f"({total / jobs / 1024:.1f} KiB/job)"
    )
    for stat in stats[:20]:
        frame = stat.traceback[0]
        print(
            f"  {stat.size / jobs:8.0f} B/job  {stat.count / jobs:6.1f} blocks/job  "
            f"{frame.filename}:{frame.lineno}"
        )


def run_scale(
    jobs: int,
    *,
    namespaces: int,
    steady: float,
    rate: float,
    burst: bool,
    profile: bool = False,
    deadline_hours: float | None = None,
    backend: str = "tfjob",
) -> ScaleFigures:
    import tempfile

    from demo.processes import ProcessGroupSet, new_run_marker

    with tempfile.TemporaryDirectory(prefix="bench-wait-scale-") as temp:
        workdir = Path(temp)
        with ProcessGroupSet(marker=new_run_marker()) as processes:
            sandbox = start_bench_sandbox(processes, workdir)
            names = job_names(jobs, namespaces)
            names_file = workdir / "names.json"
            names_file.write_text(json.dumps(names))
            subprocess.run(
                [
                    sys.executable,
                    str(Path(__file__).with_name("bench_wait.py")),
                    "--submit-scripted",
                    str(names_file),
                    "--backend",
                    backend,
                ],
                check=True,
            )
            submitted = json.loads((workdir / "uids.json").read_text())
            seen = asyncio.run(
                _measure(
                    names,
                    submitted["uids"],
                    kubeconfig=sandbox.kubeconfig,
                    sandbox_pid=sandbox.process.pid,
                    steady=steady,
                    rate=rate,
                    burst=burst,
                    profile=profile,
                    deadline_hours=deadline_hours,
                    backend=backend,
                    chiefs=submitted["chiefs"],
                )
            )
            return ScaleFigures(
                backend=backend,
                jobs=jobs,
                namespaces=max(1, namespaces),
                burst=burst,
                submit_s=float(submitted["submit_s"]),
                running_s=float(submitted["running_s"]),
                **seen,
            )


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def report_scale(figures: ScaleFigures) -> None:
    minutes = figures.steady_seconds / 60
    lat = figures.latencies
    release = "burst: all within 1 s" if figures.burst else f"over {figures.release_seconds:.0f} s"
    marginal_kib = (figures.rss_waiting_mb - figures.rss_base_mb) * 1024 / figures.jobs
    print(
        f"N={figures.jobs} {'JobSets' if figures.backend == 'jobset' else 'TFJobs'} in "
        f"{figures.namespaces} namespace(s), Chief + Worker scripted, events "
        f"{figures.statuses}; submitted in {figures.submit_s:.0f} s, all pods running after "
        f"{figures.running_s:.0f} s\n"
        f"  detection latency (exits {release}): p50 {statistics.median(lat) * 1000:.1f} ms   "
        f"p99 {_percentile(lat, 0.99) * 1000:.1f} ms   max {max(lat) * 1000:.1f} ms   (goal p99 < 100 ms)\n"
        f"  steady ({figures.steady_seconds:.0f} s): {figures.steady_requests} API requests = "
        f"{figures.steady_requests / figures.jobs / minutes:.4f} requests/job/minute (goal 0); "
        f"{figures.watches} open watch streams\n"
        f"  waiting process: RSS {figures.rss_base_mb:.0f} MB before the triggers, "
        f"{figures.rss_waiting_mb:.0f} MB with them ({marginal_kib:.1f} KiB per waiting job; goal < 400 MB); "
        f"CPU {figures.cpu_steady_s / (figures.jobs * minutes) * 1000:.2f} s per 1,000 job-minutes "
        f"({100 * figures.cpu_steady_s / figures.steady_seconds:.1f} % of a core), "
        f"{figures.cpu_release_s:.1f} s while the jobs finished\n"
        f"  sandbox process: RSS {figures.sandbox_rss_mb:.0f} MB, CPU "
        f"{100 * figures.sandbox_cpu_steady_s / figures.steady_seconds:.1f} % of a core while steady, "
        f"{figures.sandbox_cpu_release_s:.1f} s while the jobs finished\n"
        f"  full garbage collections in the waiting process while the jobs finished: "
        f"{figures.extra.get('gc_full', 0)}, longest {figures.extra.get('gc_max_ms', 0.0):.0f} ms"
    )
    base, waiting = figures.extra.get("tracked_base", 0), figures.extra.get("tracked_waiting", 0)
    growth = ", ".join(
        f"{kind} {count / figures.jobs:.1f}" for count, kind in figures.extra.get("tracked_growth", [])
    )
    print(
        f"  objects tracked by the garbage collector: {base:,} before the triggers, {waiting:,} with them "
        f"({(waiting - base) / figures.jobs:.1f} per waiting job: {growth})"
    )
    for row in figures.extra.get("steady_rows", []):
        print(f"  steady request: {row['verb']} {row['resource']} x{row['count']}")
    slowest = ", ".join(f"{job} {latency * 1000:.0f} ms" for latency, job in figures.extra.get("slowest", []))
    print(f"  slowest detections: {slowest}")


# --- worker (non-deferrable) mode --------------------------------------------------------------


def worker_wait(spec: str) -> None:
    """One Airflow worker task's wait, in its own process as an executor runs it: prints ``ready``
    once its client exists, then one JSON line when the wait ends."""
    import airflow  # noqa: F401  (a worker task process has Airflow loaded)

    from tfjob_provider._outcome.wait import WaitTarget
    from tfjob_provider.hooks.tfjob import TFJobHook
    from tfjob_provider.operators._worker_wait import wait_in_worker

    namespace, name, uid = spec.split("/")
    client = TFJobHook(namespace=namespace).client
    print("ready", flush=True)
    outcome = wait_in_worker(client, WaitTarget(name=name, namespace=namespace, uid=uid))
    print(json.dumps({"received": time.time(), "status": outcome.status}), flush=True)


def run_worker_mode(jobs: int, *, steady: float) -> None:
    """N worker-mode waits, one process each: threads and RSS per waiting task, requests, latency."""
    import tempfile

    import psutil
    from tfjob_sandbox.admin_client import SandboxAdminClient

    from demo.processes import ProcessGroupSet, new_run_marker

    with tempfile.TemporaryDirectory(prefix="bench-wait-worker-") as temp:
        workdir = Path(temp)
        with ProcessGroupSet(marker=new_run_marker()) as processes:
            sandbox = start_bench_sandbox(processes, workdir)
            admin = SandboxAdminClient.from_kubeconfig(sandbox.kubeconfig)
            names = job_names(jobs, 1)
            names_file = workdir / "names.json"
            names_file.write_text(json.dumps(names))
            bench = str(Path(__file__).with_name("bench_wait.py"))
            subprocess.run([sys.executable, bench, "--submit-scripted", str(names_file)], check=True)
            uids = json.loads((workdir / "uids.json").read_text())["uids"]
            waiters = [
                subprocess.Popen(
                    [sys.executable, bench, "--worker-wait", f"{ns}/{name}/{uids[f'{ns}/{name}']}"],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
                for ns, name in names
            ]
            for waiter in waiters:
                assert waiter.stdout is not None
                if waiter.stdout.readline().strip() != "ready":
                    raise RuntimeError("a worker-mode wait did not start")
            time.sleep(5.0)  # every watch open
            admin.reset_request_counts()
            start = time.monotonic()
            cpu_before = sum(_proc_cpu(w.pid) for w in waiters)
            time.sleep(steady)
            window = time.monotonic() - start
            requests = sum(int(row["count"]) for row in admin.request_counts())
            cpu = sum(_proc_cpu(w.pid) for w in waiters) - cpu_before
            rss = [psutil.Process(w.pid).memory_info().rss / 2**20 for w in waiters]
            threads = [psutil.Process(w.pid).num_threads() for w in waiters]
            admin.end_scripted([(ns, f"{name}-chief-0") for ns, name in names])
            ends = []
            for waiter in waiters:
                assert waiter.stdout is not None
                ends.append(json.loads(waiter.stdout.readline()))
                waiter.wait(60)
            exits = admin.scripted_exits()
    latencies = [
        end["received"] - exits[f"{ns}/{name}-chief-0/tensorflow"]
        for end, (ns, name) in zip(ends, names, strict=True)
    ]
    statuses: dict[str, int] = {}
    for end in ends:
        statuses[end["status"]] = statuses.get(end["status"], 0) + 1
    heartbeat_ms = heartbeat_cpu_ms()
    per_minute_ms = cpu / (jobs * window / 60) * 1000
    print(
        f"worker mode: N={jobs} waiting tasks, one process each, events {statuses}\n"
        f"  per waiting task: RSS {statistics.median(rss):.0f} MB (median; total {sum(rss):.0f} MB), "
        f"{statistics.median(threads):.0f} threads (main + watch feed + client pool)\n"
        f"  steady ({window:.0f} s): {requests / jobs / (window / 60):.3f} requests/job/minute, CPU "
        f"{cpu / (jobs * window / 60) * 1000:.2f} s per 1,000 job-minutes\n"
        f"  the waiting task's own CPU: {per_minute_ms:.2f} ms per job-minute, beside Airflow's heartbeat: "
        f"{heartbeat_ms:.2f} ms per heartbeat on the supervisor's side alone (one every "
        f"{HEARTBEAT_SECONDS:.0f} s: {heartbeat_ms * 60 / HEARTBEAT_SECONDS:.2f} ms per job-minute, before "
        "the network and the API server's database write)\n"
        f"  detection latency: p50 {statistics.median(latencies) * 1000:.1f} ms   "
        f"p99 {_percentile(latencies, 0.99) * 1000:.1f} ms   max {max(latencies) * 1000:.1f} ms"
    )


#: ``[workers] min_heartbeat_interval``: how often Airflow's supervisor heartbeats a running task.
HEARTBEAT_SECONDS = 5.0


def heartbeat_cpu_ms(count: int = 2000) -> float:
    """CPU ms of one task heartbeat on the supervisor's side: Airflow's own execution API client
    building and sending ``PUT task-instances/{id}/heartbeat`` through its ``dry_run`` transport
    (no network, no API server), measured over ``count`` calls."""
    import uuid

    from airflow.sdk.api.client import Client

    client = Client(base_url=None, dry_run=True, token="")
    ti_id, pid = uuid.uuid4(), os.getpid()
    client.task_instances.heartbeat(ti_id, pid=pid)  # warm up
    started = _cpu()
    for _ in range(count):
        client.task_instances.heartbeat(ti_id, pid=pid)
    return (_cpu() - started) / count * 1000
