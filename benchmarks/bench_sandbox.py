"""Sandbox cluster figures: a TFJob burst to completion, watch fan-out latency, memory per stored job.

Run ``python benchmarks/bench_sandbox.py`` (``--jobs``/``--watchers``/``--stored`` to scale).  It
drives the real store, training-operator emulation and process kubelet on one event loop, the
same wiring the ``Sandbox`` class serves over HTTP, so the numbers are what the emulation itself
costs; the HTTP layer adds its own serialisation on top.  Targets (issue 3, two cores):

* 200 concurrent TFJobs x 4 pods of ``sleep 1`` all finished in < 30 s;
* watch delivery p99 < 50 ms with 100 watchers (measured twice: on the store's own watches, and
  end to end over HTTPS from ``kubernetes_asyncio`` streams to a sandbox CLI process);
* RSS < 300 MB with 1,000 stored TFJobs.

``--scale N`` runs the scale mode instead (issue 12): N TFJobs of 1 chief + 3 workers, all
*scripted* pods (``tfjob-sandbox/script``, no processes), created at once; it reports the time
until every pod runs, the RSS and CPU seconds of this process at each stage, the CPU it burns
while the pods merely run (it should be none), and the time until every job has Succeeded once
the chiefs' scripted runs end.  The target is 10,000 TFJobs / 40,000 pods on two cores.

Wall-clock figures taken while other work shares the machine are noisy; the script says so.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from tfjob_sandbox.admission.tfjob_webhook import register_tfjob_admission
from tfjob_sandbox.api.resource_types import EVENTS, PODS, TFJOBS
from tfjob_sandbox.kubelet.kubelet import Kubelet
from tfjob_sandbox.kubelet.scripted_pods import SCRIPT_ANNOTATION
from tfjob_sandbox.store.store import Store
from tfjob_sandbox.training_operator.controller import TrainingOperator


def tfjob(name: str, command: list[str]) -> dict[str, Any]:
    def replica(count: int) -> dict[str, Any]:
        return {
            "replicas": count,
            "template": {
                "spec": {"containers": [{"name": "tensorflow", "image": "tf:2.15", "command": command}]}
            },
        }

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {"tfReplicaSpecs": {"Chief": replica(1), "Worker": replica(3)}},
    }


def finished(job: dict[str, Any] | None) -> bool:
    conditions = ((job or {}).get("status") or {}).get("conditions") or []
    return any(c["type"] in ("Succeeded", "Failed") and c["status"] == "True" for c in conditions)


async def burst(jobs: int, workdir: Path) -> dict[str, float]:
    """Create ``jobs`` TFJobs at once (1 chief + 3 workers each, ``sleep 1``); time until all finish."""
    store = Store()
    register_tfjob_admission(store)
    kubelet = Kubelet(store, workdir=workdir)
    operator = TrainingOperator(store)
    kubelet.start()
    operator.start()
    started = time.perf_counter()
    for index in range(jobs):
        store.create(TFJOBS, tfjob(f"bench-{index}", ["sleep", "1"]))
    created = time.perf_counter() - started
    peak = 0
    while True:
        peak = max(peak, kubelet.running_processes)
        done = sum(1 for i in range(jobs) if finished(store.peek(TFJOBS, f"bench-{i}")))
        if done == jobs:
            break
        await asyncio.sleep(0.05)
    elapsed = time.perf_counter() - started
    failed = sum(
        1
        for i in range(jobs)
        if any(
            c["type"] == "Failed"
            for c in (store.peek(TFJOBS, f"bench-{i}") or {}).get("status", {}).get("conditions", [])
        )
    )
    pods = store.count(PODS)
    await operator.stop()
    await kubelet.stop()
    return {
        "seconds": elapsed,
        "create_seconds": created,
        "peak_processes": peak,
        "pods": pods,
        "failed_jobs": failed,
        "reconciles": operator.reconciles,
    }


async def watch_latency(watchers: int, writes: int) -> dict[str, float]:
    """``watchers`` store watches on pods; per write, the delay until each watcher receives it."""
    store = Store()
    sent: dict[str, float] = {}
    delays: list[float] = []
    all_delivered = asyncio.Event()

    async def consume(subscription: Any) -> None:
        async for event_type, obj in subscription:
            if event_type == "ADDED":
                delays.append(time.perf_counter() - sent[obj["metadata"]["name"]])
                if len(delays) == watchers * writes:
                    all_delivered.set()

    subscriptions = [store.watch(PODS, namespace="default") for _ in range(watchers)]
    tasks = [asyncio.create_task(consume(s)) for s in subscriptions]
    await asyncio.sleep(0)
    for index in range(writes):
        name = f"w-{index}"
        sent[name] = time.perf_counter()
        store.create(
            PODS, {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}
        )
        await asyncio.sleep(0.005)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(all_delivered.wait(), 10)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    quantiles = statistics.quantiles(delays, n=100)
    return {"p50_ms": quantiles[49] * 1000, "p99_ms": quantiles[98] * 1000, "deliveries": len(delays)}


async def watch_latency_http(watchers: int, writes: int, workdir: Path) -> dict[str, float]:
    """The same fan-out end to end: a sandbox CLI process, ``watchers`` HTTPS watch streams opened
    with ``kubernetes_asyncio`` from this process, services created one by one; the delay from just
    before each create request to the event's arrival on each stream."""
    from kubernetes_asyncio import client, config

    from demo.processes import ProcessGroupSet, new_run_marker
    from demo.sandbox_process import start_sandbox

    with ProcessGroupSet(marker=new_run_marker()) as processes:
        sandbox = start_sandbox(processes, directory=workdir, env=dict(os.environ))
        configuration = client.Configuration()
        await config.load_kube_config(config_file=str(sandbox.kubeconfig), client_configuration=configuration)
        configuration.connection_pool_maxsize = watchers + 10  # one connection per open stream
        api = client.ApiClient(configuration)
        core = client.CoreV1Api(api)
        sent: dict[str, float] = {}
        delays: list[float] = []
        try:
            start_rv = (await core.list_namespaced_service("default")).metadata.resource_version

            async def consume() -> None:
                response = await core.list_namespaced_service(
                    "default",
                    watch=True,
                    resource_version=start_rv,
                    timeout_seconds=120,
                    _preload_content=False,
                )
                received = 0
                async for line in response.content:
                    event = json.loads(line)
                    delays.append(time.perf_counter() - sent[event["object"]["metadata"]["name"]])
                    received += 1
                    if received == writes:
                        break
                response.release()

            tasks = [asyncio.create_task(consume()) for _ in range(watchers)]
            await asyncio.sleep(1.0)  # every stream open
            for index in range(writes):
                name = f"w-{index}"
                sent[name] = time.perf_counter()
                await core.create_namespaced_service(
                    "default", {"metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}}
                )
                await asyncio.sleep(0.005)
            await asyncio.wait_for(asyncio.gather(*tasks), 60)
        finally:
            await api.close()
    quantiles = statistics.quantiles(delays, n=100)
    return {"p50_ms": quantiles[49] * 1000, "p99_ms": quantiles[98] * 1000, "deliveries": len(delays)}


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def stored_jobs(count: int) -> dict[str, float]:
    """RSS of this process before and after storing ``count`` TFJobs (operator not running)."""
    store = Store()
    register_tfjob_admission(store)
    before = rss_mb()
    for index in range(count):
        store.create(TFJOBS, tfjob(f"stored-{index}", ["python", "train.py", "--epochs", "10"]))
    return {"rss_mb": rss_mb(), "rss_before_mb": before, "jobs": store.count(TFJOBS)}


def scripted_tfjob(name: str, chief_runs: float) -> dict[str, Any]:
    """1 chief that exits 0 after ``chief_runs`` s, 3 workers that run until the job ends."""

    def replica(count: int, script: dict[str, Any]) -> dict[str, Any]:
        return {
            "replicas": count,
            "template": {
                "metadata": {"annotations": {SCRIPT_ANNOTATION: json.dumps(script)}},
                "spec": {"containers": [{"name": "tensorflow", "image": "tf:2.15", "command": ["train"]}]},
            },
        }

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {
            "runPolicy": {"cleanPodPolicy": "None"},
            "tfReplicaSpecs": {
                "Chief": replica(1, {"steps": [{"run": chief_runs, "exit": 0}]}),
                "Worker": replica(3, {"steps": [{"run": None}]}),
            },
        },
    }


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


async def scale(jobs: int, run_for: float, idle: float, workdir: Path) -> None:
    """The scale mode (module docstring): prints one line per stage."""
    store = Store()
    register_tfjob_admission(store)
    kubelet = Kubelet(store, workdir=workdir)
    operator = TrainingOperator(store)
    phases: dict[str, str] = {}

    def track(event_type: str, rt: Any, new: dict[str, Any], old: dict[str, Any] | None) -> None:
        if rt == PODS:  # a look-only listener: counting with store.list() would copy every pod
            phases[new["metadata"]["name"]] = (new.get("status") or {}).get("phase", "")

    store.add_listener(track, copies=False)
    kubelet.start()
    operator.start()
    base_rss, base_cpu = rss_mb(), cpu_seconds()
    started = time.perf_counter()
    for index in range(jobs):
        store.create(TFJOBS, scripted_tfjob(f"scale-{index}", run_for))
        if index % 200 == 0:
            await asyncio.sleep(0)  # let the operator and kubelet work while the burst arrives
    created = time.perf_counter() - started
    print(f"scale: {jobs} TFJobs created in {created:.1f} s (wall)")

    def running_pods() -> int:
        return sum(1 for phase in phases.values() if phase == "Running")

    pods_wanted = 4 * jobs
    for _ in range(int(2 * (run_for - 5))):  # sampled every 0.5 s, until the chiefs' runs end
        if running_pods() >= pods_wanted:
            break
        await asyncio.sleep(0.5)
    all_running = time.perf_counter() - started
    cpu_start, rss_running = cpu_seconds() - base_cpu, rss_mb()
    print(
        f"scale: {running_pods()}/{pods_wanted} scripted pods Running {all_running:.1f} s (wall) "
        f"after the first create; CPU {cpu_start:.1f} s for admission, reconciles, pod starts and "
        f"events; RSS {rss_running:.0f} MB (was {base_rss:.0f} MB: "
        f"{(rss_running - base_rss) * 1024 / pods_wanted:.1f} KiB per pod with its share of TFJobs, "
        f"events and watch history); {kubelet.running_processes} processes; "
        f"{store.count(EVENTS)} events stored"
    )
    await asyncio.sleep(2.0)  # the last status writes and reconciles settle
    before_idle = cpu_seconds()
    await asyncio.sleep(idle)
    idle_cpu = cpu_seconds() - before_idle
    print(
        f"scale: {idle:.0f} s with every pod merely running cost {idle_cpu:.2f} CPU s "
        f"({100 * idle_cpu / idle:.1f} % of a core)"
    )
    finished_jobs: set[str] = set()
    while len(finished_jobs) < jobs:
        for index in range(jobs):
            name = f"scale-{index}"
            if name not in finished_jobs and finished(store.peek(TFJOBS, name)):
                finished_jobs.add(name)
        await asyncio.sleep(0.5)
    done = time.perf_counter() - started
    succeeded = sum(
        1
        for i in range(jobs)
        if any(
            c["type"] == "Succeeded" and c["status"] == "True"
            for c in (store.peek(TFJOBS, f"scale-{i}") or {}).get("status", {}).get("conditions", [])
        )
    )
    print(
        f"scale: all {jobs} TFJobs finished {done:.1f} s (wall) after the first create "
        f"({succeeded} Succeeded; "
        f"chiefs scripted to run {run_for:.0f} s); total CPU {cpu_seconds() - base_cpu:.1f} s; "
        f"peak RSS {peak_rss_mb():.0f} MB; {operator.reconciles} reconciles"
    )
    await operator.stop()
    await kubelet.stop()


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def main(args: argparse.Namespace) -> None:
    if args.scale:
        with tempfile.TemporaryDirectory(prefix="bench-sandbox-scale-") as workdir:
            await scale(args.scale, args.run_for, args.idle, Path(workdir))
        return
    print("note: wall-clock figures are noisy when other work shares the machine's cores")
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as workdir:
        result = await burst(args.jobs, Path(workdir))
    print(
        f"burst: {args.jobs} TFJobs x 4 pods (sleep 1) all finished in {result['seconds']:.1f} s "
        f"(target < 30 s); creates took {result['create_seconds']:.2f} s; "
        f"peak {result['peak_processes']:.0f} concurrent processes; {result['failed_jobs']:.0f} failed; "
        f"{result['reconciles']:.0f} reconciles"
    )
    latency = await watch_latency(args.watchers, args.writes)
    print(
        f"watch: {args.watchers} watchers x {args.writes} writes, delivery p50 {latency['p50_ms']:.2f} ms, "
        f"p99 {latency['p99_ms']:.2f} ms (in-process store watches, no HTTP)"
    )
    memory = stored_jobs(args.stored)
    print(
        f"memory: {memory['jobs']:.0f} stored TFJobs, RSS {memory['rss_mb']:.0f} MB "
        f"(was {memory['rss_before_mb']:.0f} MB before storing them; target < 300 MB)"
    )
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-http-") as workdir:
        over_http = await watch_latency_http(args.watchers, args.writes, Path(workdir))
    print(
        f"watch over HTTPS: {args.watchers} kubernetes_asyncio watch streams x {args.writes} creates against "
        f"the sandbox CLI, delivery p50 {over_http['p50_ms']:.2f} ms, p99 {over_http['p99_ms']:.2f} ms "
        f"({over_http['deliveries']:.0f} deliveries; target p99 < 50 ms)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--watchers", type=int, default=100)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--stored", type=int, default=1000)
    parser.add_argument("--scale", type=int, default=0, help="scale mode: this many scripted TFJobs")
    parser.add_argument("--run-for", type=float, default=300.0, help="scale mode: seconds the chiefs run")
    parser.add_argument("--idle", type=float, default=30.0, help="scale mode: seconds of steady state")
    asyncio.run(main(parser.parse_args()))
