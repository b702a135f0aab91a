"""The kubeconfig that points clients at a sandbox (server, CA, token), readable by its owner only."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import yaml

CONTEXT_NAME = "tfjob-sandbox"
CLUSTER_NAME = "tfjob-sandbox"
USER_NAME = "tfjob-sandbox-admin"


def kubeconfig_document(
    *, server: str, token: str, ca_pem: bytes | None, namespace: str = "default"
) -> dict[str, Any]:
    cluster: dict[str, Any] = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": CLUSTER_NAME, "cluster": cluster}],
        "users": [{"name": USER_NAME, "user": {"token": token}}],
        "contexts": [
            {
                "name": CONTEXT_NAME,
                "context": {"cluster": CLUSTER_NAME, "user": USER_NAME, "namespace": namespace},
            }
        ],
        "current-context": CONTEXT_NAME,
    }


def write_kubeconfig(
    path: Path, *, server: str, token: str, ca_pem: bytes | None, namespace: str = "default"
) -> Path:
    """Write the kubeconfig atomically with mode 0600 and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    document = kubeconfig_document(server=server, token=token, ca_pem=ca_pem, namespace=namespace)
    temporary = path.with_name(f".{path.name}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        yaml.safe_dump(document, handle, sort_keys=False)
    os.replace(temporary, path)
    return path


def connection_json(kubeconfig: Path, *, namespace: str = "default") -> str:
    """An Airflow ``kubernetes`` connection (JSON form, e.g. for ``AIRFLOW_CONN_KUBERNETES_DEFAULT``)
    that reads ``kubeconfig``: what the cncf-kubernetes hook, and so ``TFJobHook``, understand."""
    return json.dumps(
        {"conn_type": "kubernetes", "extra": {"kube_config_path": str(kubeconfig), "namespace": namespace}}
    )
