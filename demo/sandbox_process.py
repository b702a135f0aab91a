"""The sandbox cluster as a separate process, started through its CLI exactly as a user would.

Why not the in-process ``Sandbox``: the demo and the full-stack test must show the provider
talking to a cluster it knows only through a kubeconfig and the ``kubernetes_default``
connection, across process boundaries (Airflow's workers, triggerer and ``airflow dags test`` are
other processes anyway), and a sandbox that outlives a crashed run must be stoppable by PID.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tfjob_sandbox.launch.kubeconfig import connection_json

from demo.processes import ManagedProcess, ProcessGroupSet, wait_for_line

READY_PREFIX = "sandbox ready "


@dataclass(frozen=True)
class RunningSandbox:
    """A sandbox CLI process that has printed its ``sandbox ready <url>`` line."""

    process: ManagedProcess
    url: str
    kubeconfig: Path

    @property
    def connection_uri(self) -> str:
        """The value of ``AIRFLOW_CONN_KUBERNETES_DEFAULT`` for this sandbox (Airflow's JSON form)."""
        return connection_json(self.kubeconfig)


def start_sandbox(
    processes: ProcessGroupSet,
    *,
    directory: Path,
    env: Mapping[str, str],
    fast_restarts: bool = True,
    pod_start_delay: float = 0.0,
    loopback_tf_config: bool = False,
    timeout: float = 60.0,
) -> RunningSandbox:
    """Start ``python -m tfjob_sandbox serve`` (HTTPS) with its files under ``directory``.

    ``fast_restarts`` shortens the kubelet's CrashLoopBackOff (0.2 s doubling to 1 s) so restart
    scenarios take seconds, not the real kubelet's 10 s to 5 min.  ``pod_start_delay`` keeps
    scheduled pods in ContainerCreating that long, as an image pull would.
    ``loopback_tf_config`` writes ``127.0.0.1:<port>`` endpoints into TF_CONFIG, so real
    TensorFlow replicas (``make demo-tf``) reach each other.
    """
    directory.mkdir(parents=True, exist_ok=True)
    kubeconfig = directory / "sandbox.kubeconfig"
    argv = [
        sys.executable,
        "-m",
        "tfjob_sandbox",
        "serve",
        "--kubeconfig",
        str(kubeconfig),
        "--workdir",
        str(directory / "pods"),
        "--log-level",
        "WARNING",
    ]
    if fast_restarts:
        argv += ["--backoff-initial", "0.2", "--backoff-cap", "1"]
    if pod_start_delay > 0:
        argv += ["--pod-start-delay", f"{pod_start_delay:g}"]
    if loopback_tf_config:
        argv.append("--loopback-tf-config")
    process = processes.start("sandbox", argv, env=env, cwd=directory, log_path=directory / "sandbox.log")
    line = wait_for_line(
        process, lambda text: text.startswith(READY_PREFIX), timeout=timeout, what="'sandbox ready'"
    )
    url = line[len(READY_PREFIX) :].split()[0]
    return RunningSandbox(process=process, url=url, kubeconfig=kubeconfig)
