"""The peers of the deferred wait, on one sandbox in one run (issue 12): ``bench_peers.py``.

A figure of our wait means little alone: "3 ms and no requests" is worth something only next to
what users run today.  So the same machine, the same sandbox process and the same kind of
scripted pods (``tfjob-sandbox/script``: a timer in the sandbox, no process) serve four waits,
one after another, each in a process of its own so that its CPU and RSS are its own:

1. **ours**: N :class:`~tfjob_provider.triggers.tfjob.TFJobTrigger` in one asyncio loop on
   Chief + Worker TFJobs — ``wait_scale``'s measurement, unchanged, in a child;
2. **ours on JobSets** (issue 21): the same on N JobSets that ``tfjob_to_jobset`` builds from the
   same TFJobs, waited on with ``backend="jobset"`` (JobSets, Jobs and pods watched);
3. **Airflow's KubernetesPodTrigger** on N plain pods, every trigger's ``run()`` in one asyncio
   loop as the triggerer runs them, each built from the keyword arguments that
   ``KubernetesPodOperator(deferrable=True)`` gives it by default (``invoke_defer_method``);
4. **the Kubeflow Training SDK**'s ``TrainingClient.wait_for_job_conditions`` on N Chief + Worker
   TFJobs: N threads in one process of the SDK's own venv (``make venv-sdk``), with the SDK's
   default polling interval; ``benchmarks/peers/sdk_waits.py``.

Every job and pod is created before the first wait starts and runs until the benchmark ends it
(``{}``: run until ended), so the four steady windows see the same sandbox.  For each wait:
a steady window (API requests from the sandbox's counters, CPU of the waiting process), then the
chiefs (pods) are ended at ``rate`` per second through the admin API (the peers' in a shuffled
order), and detection latency is
the sandbox's recorded exit instant → the instant the waiter knew.  Both peers poll, so their N
waits start spread over one polling interval, as the waits of separately started tasks would
be (started together, all N would poll in step and one release phase would decide every
latency); ours does not poll and needs no spreading.  The peers' children report
on their log: one ``peer-ready {json}`` line once every wait is under way, one ``peer-done
{json}`` line (receive instants, own CPU seconds) when all returned.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import wait_scale

if TYPE_CHECKING:
    from tfjob_sandbox.admin_client import SandboxAdminClient

    from demo.processes import ManagedProcess, ProcessGroupSet
    from demo.sandbox_process import RunningSandbox

BENCH = Path(__file__).with_name("bench_peers.py")
SDK_WAITS = Path(__file__).parent / "peers" / "sdk_waits.py"
READY = "peer-ready "
DONE = "peer-done "
POD_NAMESPACE = "peer-pods"
SDK_NAMESPACE = "peer-sdk"
JOBSET_NAMESPACE = "peer-jobsets"
#: Seconds after the KubernetesPodTriggers start before their steady window: each first reads
#: the pod, watches its events and confirms it started (a few requests), then polls every 2 s.
POD_TRIGGER_SETTLE = 10.0
#: Seconds a peer may take to report every wait done after the last exit (the SDK polls every 15 s).
DONE_TIMEOUT = 300.0


@dataclass
class WaitFigures:
    """What one wait cost and how late it was, for N jobs (or pods)."""

    label: str
    jobs: int
    statuses: dict[str, int]
    latencies: list[float]
    steady_seconds: float
    steady_requests: int
    steady_rows: list[dict[str, Any]]
    cpu_steady_s: float
    cpu_release_s: float
    rss_base_mb: float
    rss_waiting_mb: float
    sandbox_cpu_steady_s: float
    notes: list[str] = field(default_factory=list)

    @property
    def requests_per_job_minute(self) -> float:
        return self.steady_requests / self.jobs / (self.steady_seconds / 60)

    @property
    def cpu_per_1000_job_minutes(self) -> float:
        return self.cpu_steady_s / (self.jobs * self.steady_seconds / 60) * 1000


# --- the children ------------------------------------------------------------------------------


def _report(prefix: str, body: dict[str, Any]) -> None:
    """One protocol line on the child's log (the parent scans the log for it)."""
    sys.stdout.write(prefix + json.dumps(body) + "\n")
    sys.stdout.flush()


def ours_child(spec_file: Path) -> None:
    """Ours, in a process of its own: ``wait_scale``'s measurement (steady window, ends, latencies)."""
    import asyncio

    spec = json.loads(spec_file.read_text())
    seen = asyncio.run(
        wait_scale._measure(
            [(namespace, name) for namespace, name in spec["names"]],
            spec["uids"],
            kubeconfig=Path(spec["kubeconfig"]),
            sandbox_pid=int(spec["sandbox_pid"]),
            steady=float(spec["steady"]),
            rate=float(spec["rate"]),
            burst=False,
            profile=False,
            backend=spec["backend"],
            chiefs=spec["chiefs"],
        )
    )
    _report(DONE, seen)


def pod_triggers_child(spec_file: Path) -> None:
    """N KubernetesPodTriggers in one asyncio loop, rebuilt from their serialized keyword arguments
    as the triggerer rebuilds them; reports each event's instant."""
    import asyncio

    from airflow.providers.cncf.kubernetes.triggers.pod import KubernetesPodTrigger

    spec = json.loads(spec_file.read_text())
    rss_base = wait_scale._rss_mb()

    async def wait_all() -> dict[str, Any]:
        received: dict[str, float] = {}
        statuses: dict[str, int] = {}

        async def wait_on(index: int, kwargs: dict[str, Any]) -> None:
            # Tasks defer at independent instants, so their polls are spread over the interval.
            await asyncio.sleep(index * float(kwargs["poll_interval"]) / len(spec["triggers"]))
            start = datetime.datetime.fromisoformat(kwargs["trigger_start_time"])
            trigger = KubernetesPodTrigger(**{**kwargs, "trigger_start_time": start})
            event = await anext(trigger.run())
            received[f"{kwargs['pod_namespace']}/{kwargs['pod_name']}"] = time.time()
            status = str(event.payload["status"])
            statuses[status] = statuses.get(status, 0) + 1

        tasks = [asyncio.ensure_future(wait_on(i, kwargs)) for i, kwargs in enumerate(spec["triggers"])]
        await asyncio.sleep(float(spec["settle"]))
        if any(task.done() for task in tasks):
            raise RuntimeError(f"a KubernetesPodTrigger ended before its pod did: {statuses}")
        _report(READY, {"rss_base_mb": rss_base})
        await asyncio.gather(*tasks)
        return {"received": received, "statuses": statuses}

    result = asyncio.run(wait_all())
    times = os.times()
    _report(DONE, {**result, "cpu_s": times.user + times.system})


def pod_trigger_kwargs(pods: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """What ``KubernetesPodOperator(deferrable=True)`` with its defaults hands the triggerer for
    each pod: the operator's own ``invoke_defer_method`` builds the trigger; its ``serialize()``
    keyword arguments travel to the child (``trigger_start_time`` as ISO text)."""
    from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
    from airflow.providers.common.compat.sdk import TaskDeferred
    from kubernetes.client import models as k8s

    built = []
    # The operator logs one info line per deferral to stdout: not this benchmark's output.
    with contextlib.redirect_stdout(io.StringIO()):
        for namespace, name in pods:
            operator = KubernetesPodOperator(
                task_id=name, name=name, namespace=namespace, image="busybox", deferrable=True
            )
            operator.pod = k8s.V1Pod(metadata=k8s.V1ObjectMeta(name=name, namespace=namespace))
            try:
                operator.invoke_defer_method()
            except TaskDeferred as deferred:
                _, kwargs = deferred.trigger.serialize()
            else:
                raise RuntimeError("KubernetesPodOperator.invoke_defer_method did not defer")
            built.append({**kwargs, "trigger_start_time": kwargs["trigger_start_time"].isoformat()})
    return built


# --- the parent --------------------------------------------------------------------------------


def create_plain_pods(kubeconfig: Path, pods: list[tuple[str, str]]) -> None:
    """The KubernetesPodTrigger's pods: plain pods (no operator) with the container name the
    operator uses (``base``), scripted to run until ended."""
    from kubernetes import client, config

    core = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
    for namespace in sorted({namespace for namespace, _ in pods} - {"default"}):
        core.create_namespace({"metadata": {"name": namespace}})
    for namespace, name in pods:
        core.create_namespaced_pod(
            namespace,
            {
                "metadata": {"name": name, "annotations": {wait_scale.SCRIPT_ANNOTATION: "{}"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "base", "image": "busybox", "command": ["sleep", "3600"]}],
                },
            },
        )
    core.api_client.close()


def end_at_rate(admin: SandboxAdminClient, pods: list[tuple[str, str]], rate: float) -> None:
    """End the scripted containers of ``pods``, ``rate`` per second (in tenths of a second)."""
    batch = max(1, round(rate / 10))
    for start in range(0, len(pods), batch):
        began = time.monotonic()
        admin.end_scripted(pods[start : start + batch])
        time.sleep(max(0.0, 0.1 - (time.monotonic() - began)))


def drive_peer(
    process: ManagedProcess,
    *,
    label: str,
    admin: SandboxAdminClient,
    sandbox_pid: int,
    ends: list[tuple[str, str]],
    exit_keys: dict[str, str],
    steady: float,
    rate: float,
) -> WaitFigures:
    """Measure a peer's child: once it is ready, a steady window, then the ends at ``rate``;
    ``exit_keys`` maps each wait's key (``ns/name``) to its deciding container's exit key."""
    import psutil

    from demo.processes import wait_for_line

    line = wait_for_line(process, lambda text: text.startswith(READY), timeout=600, what="its waits")
    ready = json.loads(line[len(READY) :])
    admin.reset_request_counts()
    cpu_start, sandbox_start = wait_scale._proc_cpu(process.pid), wait_scale._proc_cpu(sandbox_pid)
    window_start = time.monotonic()
    time.sleep(steady)
    rows = admin.request_counts()
    window = time.monotonic() - window_start
    cpu_end, sandbox_end = wait_scale._proc_cpu(process.pid), wait_scale._proc_cpu(sandbox_pid)
    rss_waiting = wait_scale._rss_mb(process.pid)
    threads = psutil.Process(process.pid).num_threads()
    # The waits started in this order, spread over one polling interval: ending them in the same
    # order at a similar pace would give every wait the same exit-to-poll phase.
    shuffled = list(ends)
    random.Random(12).shuffle(shuffled)
    end_at_rate(admin, shuffled, rate)
    line = wait_for_line(process, lambda text: text.startswith(DONE), timeout=DONE_TIMEOUT, what="every wait")
    done = json.loads(line[len(DONE) :])
    if done.get("errors"):
        raise RuntimeError(f"{label}: waits failed: {done['errors']}")
    exits = admin.scripted_exits()
    return WaitFigures(
        label=label,
        jobs=len(exit_keys),
        statuses=done["statuses"],
        latencies=[done["received"][key] - exits[exit_key] for key, exit_key in exit_keys.items()],
        steady_seconds=window,
        steady_requests=sum(int(row["count"]) for row in rows),
        steady_rows=rows,
        cpu_steady_s=cpu_end - cpu_start,
        cpu_release_s=float(done["cpu_s"]) - cpu_end,
        rss_base_mb=float(ready["rss_base_mb"]),
        rss_waiting_mb=rss_waiting,
        sandbox_cpu_steady_s=sandbox_end - sandbox_start,
        notes=[f"{threads} threads in the waiting process"],
    )


def run_peers(jobs: int, *, steady: float, rate: float, sdk_python: Path) -> list[WaitFigures]:
    from tfjob_sandbox.admin_client import SandboxAdminClient

    from demo.processes import ProcessGroupSet, new_run_marker

    ours = wait_scale.job_names(jobs, 1)
    jobsets = [(JOBSET_NAMESPACE, f"js-{index:05d}") for index in range(jobs)]
    sdk = [(SDK_NAMESPACE, f"sdk-{index:05d}") for index in range(jobs)]
    pods = [(POD_NAMESPACE, f"pod-{index:05d}") for index in range(jobs)]
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as temp:
        workdir = Path(temp)
        with ProcessGroupSet(marker=new_run_marker()) as processes:
            sandbox = wait_scale.start_bench_sandbox(processes, workdir)
            admin = SandboxAdminClient.from_kubeconfig(sandbox.kubeconfig)
            # Every job and pod first: ``submit_scripted`` returns once all pods run, plain ones too.
            create_plain_pods(sandbox.kubeconfig, pods)
            names_file = workdir / "names.json"
            names_file.write_text(json.dumps(ours + sdk))
            wait_scale.submit_scripted(names_file)
            submitted = json.loads((workdir / "uids.json").read_text())
            jobsets_file = workdir / "jobset-names.json"
            jobsets_file.write_text(json.dumps(jobsets))
            wait_scale.submit_scripted(jobsets_file, backend="jobset", uids_file=workdir / "jobset-uids.json")
            jobset_submitted = json.loads((workdir / "jobset-uids.json").read_text())
            print(f"{7 * jobs} scripted pods running; load average {_load()}", flush=True)

            results = []
            for label, backend, names, seen in (
                ("ours: TFJobTrigger", "tfjob", ours, submitted),
                ('ours on JobSets: TFJobTrigger(backend="jobset")', "jobset", jobsets, jobset_submitted),
            ):
                results.append(
                    run_ours(
                        processes,
                        workdir,
                        sandbox,
                        names,
                        seen,
                        label=label,
                        backend=backend,
                        steady=steady,
                        rate=rate,
                    )
                )
                print(f"{label} done; load average {_load()}", flush=True)
            spec = workdir / "pod-triggers.json"
            spec.write_text(json.dumps({"triggers": pod_trigger_kwargs(pods), "settle": POD_TRIGGER_SETTLE}))
            sdk_names = workdir / "sdk-names.json"
            sdk_names.write_text(json.dumps(sdk))
            peers = [
                (
                    "KubernetesPodTrigger",
                    [sys.executable, str(BENCH), "--pod-triggers", str(spec)],
                    pods,
                    {f"{ns}/{name}": f"{ns}/{name}/base" for ns, name in pods},
                ),
                (
                    "Training SDK wait_for_job_conditions",
                    [str(sdk_python), str(SDK_WAITS), str(sandbox.kubeconfig), str(sdk_names)],
                    [(ns, f"{name}-chief-0") for ns, name in sdk],
                    {f"{ns}/{name}": f"{ns}/{name}-chief-0/tensorflow" for ns, name in sdk},
                ),
            ]
            for label, argv, ends, exit_keys in peers:
                child = processes.start(label, argv, env=os.environ, log_path=workdir / f"{len(results)}.log")
                results.append(
                    drive_peer(
                        child,
                        label=label,
                        admin=admin,
                        sandbox_pid=sandbox.process.pid,
                        ends=ends,
                        exit_keys=exit_keys,
                        steady=steady,
                        rate=rate,
                    )
                )
                print(f"{label} done; load average {_load()}", flush=True)
    return results


def run_ours(
    processes: ProcessGroupSet,
    workdir: Path,
    sandbox: RunningSandbox,
    names: list[tuple[str, str]],
    submitted: dict[str, Any],
    *,
    label: str,
    backend: str,
    steady: float,
    rate: float,
) -> WaitFigures:
    """Ours in a child (:func:`ours_child`), which measures itself as ``bench_wait --scale`` does;
    ``submitted`` is what :func:`wait_scale.submit_scripted` wrote (UIDs and chief pods)."""
    from demo.processes import wait_for_line

    spec = workdir / f"ours-{backend}.json"
    spec.write_text(
        json.dumps(
            {
                "names": names,
                "uids": {f"{ns}/{name}": submitted["uids"][f"{ns}/{name}"] for ns, name in names},
                "chiefs": {f"{ns}/{name}": submitted["chiefs"][f"{ns}/{name}"] for ns, name in names},
                "backend": backend,
                "kubeconfig": str(sandbox.kubeconfig),
                "sandbox_pid": sandbox.process.pid,
                "steady": steady,
                "rate": rate,
            }
        )
    )
    argv = [sys.executable, str(BENCH), "--ours", str(spec)]
    child = processes.start(f"ours-{backend}", argv, env=os.environ, log_path=workdir / f"ours-{backend}.log")
    line = wait_for_line(child, lambda text: text.startswith(DONE), timeout=steady + 900, what="its figures")
    seen = json.loads(line[len(DONE) :])
    return WaitFigures(
        label=label,
        jobs=len(names),
        statuses=seen["statuses"],
        latencies=seen["latencies"],
        steady_seconds=seen["steady_seconds"],
        steady_requests=seen["steady_requests"],
        steady_rows=seen["extra"]["steady_rows"],
        cpu_steady_s=seen["cpu_steady_s"],
        cpu_release_s=seen["cpu_release_s"],
        rss_base_mb=seen["rss_base_mb"],
        rss_waiting_mb=seen["rss_waiting_mb"],
        sandbox_cpu_steady_s=seen["sandbox_cpu_steady_s"],
    )


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _ratio(value: float, ours: float) -> str:
    if ours <= 0:
        return "n/a"
    ratio = value / ours
    return f"{ratio:.0f}x" if ratio >= 10 else f"{ratio:.1f}x"


def report_peers(results: list[WaitFigures], *, steady: float, rate: float) -> None:
    """A Markdown table (pasted into the README as it is), then each wait's events and requests."""
    ours = results[0]
    ours_p50 = statistics.median(ours.latencies)
    print(
        f"\nN = {ours.jobs} per wait on one sandbox; steady windows of {steady:.0f} s; "
        f"exits {rate:.0f}/s\n\n"
        "| wait | detection p50 / p99 / max | p50 x ours | steady requests / job / min "
        "| CPU s per 1,000 job-min (x ours) | CPU s, first end to last detection | waiting-process RSS "
        "(before the waits) | RSS x ours | sandbox CPU, steady |\n"
        "|---|---|---|---|---|---|---|---|---|"
    )
    for figures in results:
        lat = figures.latencies
        print(
            f"| {figures.label} | {_ms(statistics.median(lat))} / "
            f"{_ms(wait_scale._percentile(lat, 0.99))} / {_ms(max(lat))} "
            f"| {_ratio(statistics.median(lat), ours_p50)} | {figures.requests_per_job_minute:.2f} "
            f"| {figures.cpu_per_1000_job_minutes:.1f} "
            f"({_ratio(figures.cpu_per_1000_job_minutes, ours.cpu_per_1000_job_minutes)}) "
            f"| {figures.cpu_release_s:.2f} | {figures.rss_waiting_mb:.0f} MB ({figures.rss_base_mb:.0f} MB) "
            f"| {_ratio(figures.rss_waiting_mb, ours.rss_waiting_mb)} "
            f"| {100 * figures.sandbox_cpu_steady_s / figures.steady_seconds:.1f} % of a core |"
        )
    print()
    for figures in results:
        rows = ", ".join(f"{row['verb']} {row['resource']} x{row['count']}" for row in figures.steady_rows)
        notes = "".join(f"; {note}" for note in figures.notes)
        print(f"  {figures.label}: events {figures.statuses}; steady requests: {rows or 'none'}{notes}")
