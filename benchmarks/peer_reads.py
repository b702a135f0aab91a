"""What one status read costs each polling peer, apart from the wait (``bench_peers.py --read-costs``).

The peer benchmark shows *that* the polling waits spend CPU; this shows *where*, one read at a
time, against a sandbox holding one plain pod and one TFJob (both scripted, running):

* ``KubernetesPodTrigger`` reads its pod through the cncf-kubernetes ``AsyncKubernetesHook``,
  whose ``get_pod`` builds a new API client for the read and closes it afterwards (a new
  connection and TLS handshake each time) — next to the same GET on one kept client;
* the Training SDK's ``get_job`` (GET and decoding into its models, ``benchmarks/peers/sdk_reads.py``
  in ``.venv-sdk``) — next to the same GET without the decoding.

Printed per read: CPU milliseconds of the reading process and of the sandbox.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import wait_peers
import wait_scale

SDK_READS = Path(__file__).parent / "peers" / "sdk_reads.py"
POD = (wait_peers.POD_NAMESPACE, "pod-00000")
JOB = (wait_peers.SDK_NAMESPACE, "sdk-00000")


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


def _line(label: str, reads: int, own_cpu_s: float, sandbox_cpu_s: float) -> None:
    print(
        f"  {label}: {1000 * own_cpu_s / reads:.2f} ms CPU per read, "
        f"sandbox {1000 * sandbox_cpu_s / reads:.2f} ms"
    )


async def _pod_reads(kubeconfig: Path, sandbox_pid: int, reads: int) -> None:
    from airflow.providers.cncf.kubernetes.hooks.kubernetes import AsyncKubernetesHook
    from kubernetes_asyncio import client, config

    hook = AsyncKubernetesHook(conn_id="kubernetes_default")
    kept = await config.new_client_from_config(config_file=str(kubeconfig))
    core = client.CoreV1Api(kept)
    namespace, name = POD
    variants: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
        (
            "KubernetesPodTrigger's read (AsyncKubernetesHook.get_pod, a new client per read)",
            lambda: hook.get_pod(name, namespace),
        ),
        (
            "the same GET on one kept kubernetes_asyncio client",
            lambda: core.read_namespaced_pod(name, namespace),
        ),
    ]
    for label, read in variants:
        await read()  # configuration loading and first-use costs out of the loop
        cpu, sandbox = _cpu(), wait_scale._proc_cpu(sandbox_pid)
        for _ in range(reads):
            await read()
        _line(label, reads, _cpu() - cpu, wait_scale._proc_cpu(sandbox_pid) - sandbox)
    await kept.close()


def run_read_costs(reads: int, *, sdk_python: Path) -> None:
    from demo.processes import ProcessGroupSet, new_run_marker

    with tempfile.TemporaryDirectory(prefix="bench-peer-reads-") as temp:
        workdir = Path(temp)
        with ProcessGroupSet(marker=new_run_marker()) as processes:
            sandbox = wait_scale.start_bench_sandbox(processes, workdir)
            wait_peers.create_plain_pods(sandbox.kubeconfig, [POD])
            names_file = workdir / "names.json"
            names_file.write_text(json.dumps([JOB]))
            wait_scale.submit_scripted(names_file)
            print(f"{reads} reads each, one at a time:")
            asyncio.run(_pod_reads(sandbox.kubeconfig, sandbox.process.pid, reads))
            for mode, label in [
                ("get_job", "Training SDK's read (TrainingClient.get_job: GET and models)"),
                ("raw", "the same GET without the models (CustomObjectsApi)"),
            ]:
                sandbox_cpu = wait_scale._proc_cpu(sandbox.process.pid)
                argv = [str(sdk_python), str(SDK_READS), str(sandbox.kubeconfig), *JOB, str(reads), mode]
                own = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
                spent = wait_scale._proc_cpu(sandbox.process.pid) - sandbox_cpu
                _line(label, reads, float(own) * reads / 1000, spent)
