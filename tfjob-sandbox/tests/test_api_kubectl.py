"""kubectl against the sandbox (where kubectl is installed): apply, get, logs, describe, delete.

kubectl exercises paths the Python clients do not: OpenAPI v3 probing for server-side field
validation, ``as=Table`` printing, event lookup for ``describe``.  The sandbox must satisfy it
without ``--validate=false``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import pytest
import yaml
from tfjob_sandbox import Sandbox
from tfjob_sandbox.admission.tfjob_crd import TFJOB_CRD_FILE
from tfjob_sandbox.testing import tfjob_manifest, wait_for

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")


def _kubectl(sandbox: Sandbox, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    env = {**os.environ, "KUBECONFIG": str(sandbox.kubeconfig_path)}
    result = subprocess.run([KUBECTL, *args], capture_output=True, text=True, timeout=60, env=env)
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
    return result


def test_kubectl_apply_get_logs_describe_delete(module_sandbox: Sandbox, tmp_path: Path) -> None:
    manifest = tfjob_manifest("kubectl-job", workers=2, command=["sh", "-c", "echo hello from $(HOSTNAME)"])
    manifest_path = tmp_path / "job.yaml"
    manifest_path.write_text(yaml.safe_dump(manifest))
    applied = _kubectl(module_sandbox, "apply", "-f", str(manifest_path))
    assert applied.stdout.strip() == "tfjob.kubeflow.org/kubectl-job created"

    def state() -> str:
        return _kubectl(
            module_sandbox, "get", "tfjob", "kubectl-job", "-o", "jsonpath={.status.conditions[-1:].type}"
        ).stdout

    assert wait_for(lambda: state() == "Succeeded" and state(), what="the TFJob to succeed") == "Succeeded"
    table = _kubectl(module_sandbox, "get", "pods", "-l", "training.kubeflow.org/job-name=kubectl-job").stdout
    header, *rows = table.strip().splitlines()
    assert header.split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert sorted(row.split()[0] for row in rows) == ["kubectl-job-worker-0", "kubectl-job-worker-1"]
    assert all(row.split()[2] == "Completed" for row in rows)
    jobs = _kubectl(module_sandbox, "get", "tfjobs").stdout.splitlines()
    assert jobs[0].split() == ["NAME", "STATE", "AGE"]
    assert (
        _kubectl(module_sandbox, "logs", "kubectl-job-worker-1").stdout == "hello from kubectl-job-worker-1\n"
    )
    described = _kubectl(module_sandbox, "describe", "pod", "kubectl-job-worker-0").stdout
    assert "Successfully assigned default/kubectl-job-worker-0 to sandbox-node" in described
    deleted = _kubectl(module_sandbox, "delete", "tfjob", "kubectl-job")
    assert deleted.stdout.strip() == 'tfjob.kubeflow.org "kubectl-job" deleted'
    listed = json.loads(_kubectl(module_sandbox, "get", "tfjobs", "-o", "json").stdout)
    assert [item["metadata"]["name"] for item in listed["items"]] == []


def test_kubectl_applies_the_project_crd_and_validates_strictly(tmp_path: Path) -> None:
    crd_file = tmp_path / "tfjobs.yaml"
    crd_file.write_text(resources.files("tfjob_sandbox").joinpath(TFJOB_CRD_FILE).read_text(encoding="utf-8"))
    with Sandbox(workdir=tmp_path / "pods", tfjob_crd=False) as sandbox:
        crd = _kubectl(sandbox, "apply", "-f", str(crd_file))
        assert "customresourcedefinition.apiextensions.k8s.io/tfjobs.kubeflow.org created" in crd.stdout
        manifest = tfjob_manifest("typo")
        manifest["spec"]["tfReplicaSpecs"]["Worker"]["replica"] = 2  # misspelt "replicas"
        path = tmp_path / "typo.yaml"
        path.write_text(yaml.safe_dump(manifest))
        rejected = _kubectl(sandbox, "apply", "-f", str(path), check=False)
        assert rejected.returncode != 0
        assert 'unknown field "spec.tfReplicaSpecs.Worker.replica"' in rejected.stderr
