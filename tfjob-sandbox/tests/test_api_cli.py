"""The ``serve`` CLI as a subprocess: ready line, usable kubeconfig, clean SIGTERM, state-dir restart.

This is how out-of-process users (the Airflow full-stack test, the demo) run the sandbox, so the
test treats it as a black box: parse the ready line, talk to it through the kubeconfig, stop it
with SIGTERM and check that no process it started survives; then restart on the same state dir.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from tfjob_sandbox.admin_client import SandboxAdminClient
from tfjob_sandbox.testing import pod_manifest, tfjob_manifest, wait_for

READY_TIMEOUT = 30.0


class CliSandbox:
    def __init__(self, process: subprocess.Popen[str], ready_line: str, kubeconfig: Path) -> None:
        self.process = process
        self.ready_line = ready_line
        self.kubeconfig = kubeconfig
        self.url = ready_line.split()[2]

    def api(self) -> Any:
        return config.new_client_from_config(config_file=str(self.kubeconfig))

    def terminate(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGTERM)
        remaining, _ = self.process.communicate(timeout=30)
        return self.process.returncode, remaining


def _start(tmp_path: Path, *extra: str) -> CliSandbox:
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tfjob_sandbox",
            "serve",
            "--port",
            "0",
            "--kubeconfig",
            str(kubeconfig),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert process.stdout is not None
    deadline = time.monotonic() + READY_TIMEOUT
    line = process.stdout.readline()
    if not line.startswith("sandbox ready "):
        process.kill()
        _, stderr = process.communicate(timeout=10)
        pytest.fail(f"no ready line (got {line!r}); stderr:\n{stderr}")
    assert time.monotonic() < deadline
    return CliSandbox(process, line.strip(), kubeconfig)


@pytest.fixture
def cli_sandbox(tmp_path: Path) -> Iterator[CliSandbox]:
    sandbox = _start(tmp_path, "--state-dir", str(tmp_path / "state"))
    yield sandbox
    if sandbox.process.poll() is None:
        sandbox.process.kill()
        sandbox.process.communicate(timeout=10)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_ready_line_kubeconfig_and_clean_sigterm(cli_sandbox: CliSandbox, tmp_path: Path) -> None:
    assert cli_sandbox.url.startswith("https://127.0.0.1:")
    api = cli_sandbox.api()
    core_v1 = client.CoreV1Api(api)
    pid_file = tmp_path / "child.pid"
    core_v1.create_namespaced_pod(
        "default",
        # "$$$$" because Kubernetes expands "$$" in commands to "$" (the shell then sees "$$").
        pod_manifest("long", command=["sh", "-c", f"echo $$$$ > {pid_file}; exec sleep 300"]),
    )
    pid = int(wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), what="child pid"))
    assert _alive(pid)
    assert SandboxAdminClient.from_kubeconfig(cli_sandbox.kubeconfig).status()["processes"] == 1
    api.close()
    code, rest_of_stdout = cli_sandbox.terminate()
    assert code == 0
    assert rest_of_stdout == ""  # exactly one line was printed
    wait_for(lambda: not _alive(pid), timeout=5, what="the pod process to be gone")
    with pytest.raises(ProcessLookupError):
        os.killpg(cli_sandbox.process.pid, 0)  # nothing left in the sandbox's process group either


def test_state_dir_survives_a_restart(tmp_path: Path) -> None:
    state = ["--state-dir", str(tmp_path / "state")]
    first = _start(tmp_path, *state)
    api = first.api()
    core_v1 = client.CoreV1Api(api)
    tfjobs = client.CustomObjectsApi(api)
    core_v1.create_namespaced_pod("default", pod_manifest("survivor", command=["sleep", "300"]))
    wait_for(
        lambda: core_v1.read_namespaced_pod("survivor", "default").status.phase == "Running", what="Running"
    )
    tfjobs.create_namespaced_custom_object(
        "kubeflow.org", "v1", "default", "tfjobs", tfjob_manifest("kept", runPolicy={"suspend": True})
    )
    before = int(core_v1.list_namespaced_pod("default").metadata.resource_version)
    crd_uid = (
        client.ApiextensionsV1Api(api).read_custom_resource_definition("tfjobs.kubeflow.org").metadata.uid
    )
    api.close()
    assert first.terminate()[0] == 0

    second = _start(tmp_path, *state)
    try:
        api = second.api()
        core_v1 = client.CoreV1Api(api)
        tfjobs = client.CustomObjectsApi(api)
        job = tfjobs.get_namespaced_custom_object("kubeflow.org", "v1", "default", "tfjobs", "kept")
        assert job["spec"]["runPolicy"]["suspend"] is True
        assert int(job["metadata"]["resourceVersion"]) <= before
        pod = wait_for(
            lambda: (p := core_v1.read_namespaced_pod("survivor", "default")).status.phase == "Failed" and p,
            what="the old pod to come back failed",
        )
        assert int(pod.metadata.resource_version) > before
        fresh = core_v1.create_namespaced_service(
            "default", {"metadata": {"name": "after"}, "spec": {"ports": [{"port": 1}]}}
        )
        assert int(fresh.metadata.resource_version) > before
        crds = client.ApiextensionsV1Api(api).list_custom_resource_definition().items
        (crd,) = [c for c in crds if c.metadata.name == "tfjobs.kubeflow.org"]
        assert crd.metadata.uid == crd_uid  # the restored CRD, not a second install
        api.close()
    finally:
        assert second.terminate()[0] == 0


def test_no_tfjob_crd_serves_schemaless_tfjobs(tmp_path: Path) -> None:
    sandbox = _start(tmp_path, "--no-tfjob-crd")
    try:
        api = sandbox.api()
        crds = client.ApiextensionsV1Api(api).list_custom_resource_definition().items
        assert [c.metadata.name for c in crds] == ["jobsets.jobset.x-k8s.io"]
        loose = tfjob_manifest("loose")
        loose["spec"]["notInTheSchema"] = 1
        created = client.CustomObjectsApi(api).create_namespaced_custom_object(
            "kubeflow.org", "v1", "default", "tfjobs", loose
        )
        assert created["spec"]["notInTheSchema"] == 1
        api.close()
    finally:
        assert sandbox.terminate()[0] == 0


def test_remote_bind_is_refused_without_allow_remote(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfjob_sandbox",
            "serve",
            "--host",
            "0.0.0.0",
            "--kubeconfig",
            str(tmp_path / "kc"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "--allow-remote" in result.stderr
    assert result.stdout == ""
